// `--backend sim`: runs a configuration on a simulated cluster of --workers logical workers
// in this process (cluster/sim_world.hpp), with the real numerics (every worker a thread
// running the unchanged trainer over its own SimCommunicator) or, with --timing-only, the
// clocks alone (cluster/sim_timing.hpp). Before starting it resolves:
//   - the compute profile: --profile-from RUN_ID (a completed real run of the same workload,
//     dataset and batch: its mean data / fwd / bwd / opt per step, backward split over
//     layers by parameter count), else this host's latest `dsgd-bench calibrate` profile of
//     the workload, dataset and batch (per-layer fwd / bwd; data and opt are not in a
//     calibration profile and count 0); times --compute-scale;
//   - the network: the emulated link of --bandwidth/--latency (--inter-* for hier:GxW),
//     else this host's calibrated all-reduce fit, else an ideal network (0 s, with a note);
//   - the memory it needs (shared dataset + per-worker replicas), refusing when it exceeds
//     the memory available;
//   - a missing compute profile measured and stored first when asked (SimProfileMissing).
// The run is stored like a real one (backend = sim) by the rank-0 worker; its times are
// virtual seconds. docs/sim.md.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "cluster/measured_fabric.hpp"
#include "cluster/sim_world.hpp"
#include "core/run_config.hpp"
#include "engine/compute_profile.hpp"
#include "engine/memory_estimate.hpp"
#include "engine/trainer.hpp"
#include "results/store.hpp"
#include "workloads/workload.hpp"

namespace dsgd {

// The compute profile of a sim run (before --compute-scale) and where it came from.
struct SimProfile {
  SimComputeCost cost;
  std::string source;  // "run 12" or "calibration 3"
  // Why the profile may not predict well (compute_profile_warnings of the batch used: a
  // spread too wide, or unknown); empty when it can be predicted from.
  std::vector<std::string> warnings;
  // The compute jitter (Stragglers::set_jitter's; empty: none) and what it is.
  ComputeJitter jitter;
  std::string jitter_source;
};

// Resolves the profile as described above. Throws InputError with what to do when there is
// none, or when --profile-from names a run of another workload, dataset or batch.
SimProfile sim_profile_resolve(const RunConfig& cfg, const Store* store, const std::string& host,
                               const std::vector<LayerView>& layers);

// Bytes a sim run needs: the dataset once, plus per worker the model replica, gradient,
// evaluation copy, optimizer and algorithm state and the workload's step buffers
// (workload_bytes: Workload::reserve_bytes of the batch; timing-only: a few hundred bytes per
// worker): memory_estimate with every worker in this process (engine/memory_estimate.hpp;
// the formula in docs/sim.md).
using SimMemory = MemoryEstimate;
class Algorithm;
SimMemory sim_memory_estimate(const RunConfig& cfg, const Dataset& train, const Dataset& test, size_t param_count,
                              double workload_bytes, const Algorithm* algorithm = nullptr);

// When this host has no compute profile of the run's workload, dataset and batch (and no
// --profile-from): with `measure`, sim_run measures it and stores it in its store as a
// profile-only calibration (engine/compute_profile.hpp compute_profile_fill_missing), after
// every other check of the configuration; without, it refuses (InputError naming calibrate).
struct SimProfileMissing {
  bool measure = false;
  std::string by;                                           // names the caller in the calibration's config
  std::function<void(const std::vector<int64_t>&)> before;  // before measuring these batches
  std::function<void(const ComputeProfileFill&)> after;     // after storing them
};

// Runs cfg (backend sim) and stores it in `store` when not null. callbacks as for the trainer.
TrainResult sim_run(const RunConfig& cfg, Store* store, const TrainerCallbacks& callbacks,
                    const SimProfileMissing& missing = {});
// The same, reading the profile and network calibration from `read` but storing nothing (the
// tuner's step-time probe).
TrainResult sim_run_unstored(const RunConfig& cfg, const Store& read, const TrainerCallbacks& callbacks);

// The measured curves of a calibration (its collectives' sweep, spreads included): what a
// simulated run on the host's fabric reads. Throws Error when fit.workers < 2.
MeasuredFabric sim_calibrated_fabric(const Store& store, const AllreduceFit& fit);

}  // namespace dsgd
