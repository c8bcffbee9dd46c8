// Resolves the per-layer costs an algorithm plans from (algorithms/algorithm.hpp,
// LayerCosts; used by dreamddp's schedule), identically on every rank:
//   compute: rank 0's compute profile as the sim backend finds it (engine/sim_run.hpp,
//     sim_profile_resolve: --profile-from, else this host's latest calibration of the
//     workload, dataset and batch), times --compute-scale; without one, an ESTIMATE:
//     FLOPs per sample × batch at the sgemm rate measured here at setup, 2/3 of it backward,
//     split over the layers by parameter count (the source says so);
//   network: the emulated link (--bandwidth/--latency; hierarchical on hier:GxW), else the
//     native fabric from this host's latest calibration (all-reduce fit, ring formulas), else
//     (real backend, n > 1) a two-point all-reduce probe at setup (1 float and the largest
//     layer: engine/calibration.hpp's sweep of the bare all-reduce, median of 5, slowest rank), else free (1 worker, or
//     sim without calibration, whose network is then ideal too).
// Rank 0 decides and broadcasts the numbers (untimed); the text sources are rank 0's.
#pragma once

#include <optional>

#include "algorithms/algorithm.hpp"
#include "cluster/communicator.hpp"
#include "cluster/network_model.hpp"
#include "core/run_config.hpp"
#include "results/store.hpp"
#include "workloads/workload.hpp"

namespace dsgd {

// Collective: every rank calls it. store: rank 0's (may be null). groups: the topology's.
LayerCosts layer_costs_resolve(const RunConfig& cfg, Communicator& comm, const Store* store, const Workload& workload,
                               const std::optional<NetworkModel>& emulated, int groups);

}  // namespace dsgd
