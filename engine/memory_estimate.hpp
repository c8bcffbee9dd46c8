// The memory a run needs, estimated from the sizes before anything large is allocated, and
// the refusal (with the figures) when it exceeds what the machine has. One formula for both
// backends (docs/sim.md, "Memory"):
//   dataset: the training and test features and labels, once per process (the sim
//     backend's workers share it; each MPI rank loads its own), plus the topology's n×n
//     mixing matrix;
//   per worker: 6 model copies (parameters, gradient, evaluation copy, momentum, two
//     algorithm buffers), or the algorithm's own model state plus 2 copies when larger,
//     plus one step's sent bytes; the workload's step buffers for the batch, as the workload
//     states them from its shapes (Workload::reserve_bytes: the batch copy, activations and
//     their gradients, scratch; without a workload, the input batch alone: dense batch ×
//     features floats, sparse 64 bytes a sample); the shard's indices; 256 KiB (stack
//     touched, step recorder). Timing-only sim workers: a few hundred bytes.
// Limits: allocator overhead and libraries' own scratch (oneDNN's scratchpads, OpenBLAS's
// buffers) are not counted; test_memory_estimate checks each workload's figure against what
// its reserve() and first evaluation really allocate.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "algorithms/algorithm.hpp"
#include "core/run_config.hpp"
#include "workloads/datasets/dataset.hpp"
#include "workloads/workload.hpp"

namespace dsgd {

struct MemoryEstimate {
  double dataset_bytes = 0;     // per process: features + labels of both splits (+ mixing matrix)
  double model_bytes = 0;       // one copy of the parameters
  double replicas_bytes = 0;    // per worker: model copies and algorithm state
  double batch_bytes = 0;       // per worker: the workload's step buffers (batch, activations, scratch)
  int workload_instances = 1;   // per worker, each with its step buffers: local threads + forward passes in flight
  double per_worker_bytes = 0;  // replicas + batch + shard indices + fixed
  double total_bytes = 0;       // what the host needs: processes × (dataset + workers × per worker)
  double available_bytes = 0;   // MemAvailable (0: unknown, nothing is refused)
  int workers_per_process = 1;  // sim: --workers; mpi: 1
  int processes = 1;            // mpi: the ranks on this host; sim: 1
};

// With the algorithm (may be null): its model state and sent bytes as described above.
// workload_bytes: the workload's reserve_bytes(cfg.batch); negative when there is none (the
// input batch alone is counted).
MemoryEstimate memory_estimate(const RunConfig& cfg, const Dataset& train, const Dataset& test, size_t param_count,
                               double workload_bytes, const Algorithm* algorithm, int workers_per_process,
                               int processes);

// Throws InputError with the figures (per worker, model copies, batch, dataset, available)
// and what to do (a smaller --batch, fewer workers, a sparse dataset or fewer features,
// whichever term dominates) when total_bytes exceeds available_bytes.
void memory_check(const MemoryEstimate& m, const RunConfig& cfg, const Dataset& train);

// Steps of a run whose workers each hold shard_rows samples (run_schedule_make: --steps,
// else ceil(epochs × batches per epoch), at least 1). Throws InputError with the figures
// when that is above kRunConfigMaxSteps.
int64_t run_steps_for_shard(const RunConfig& cfg, size_t shard_rows);

// A real (mpi backend) run's checks before worker setup allocates: loads the dataset (kept
// here, so the setup's dataset_load_shared finds it loaded), checks that a batch fits each
// worker's shard and that the step count (--steps, or --epochs over the shard) is at most
// kRunConfigMaxSteps, and that the memory estimate for ranks_on_host ranks fits. Does
// nothing for --backend sim (sim_run checks before starting its workers). The workload and
// algorithm it built to size the run are handed over, so setup does not build them twice.
struct RunPreflight {
  std::shared_ptr<const DatasetPair> data;
  MemoryEstimate memory;
  std::unique_ptr<Workload> workload;    // null for --backend sim
  std::unique_ptr<Algorithm> algorithm;  // null for --backend sim
};
RunPreflight memory_preflight(const RunConfig& cfg, int world_size, int ranks_on_host);

}  // namespace dsgd
