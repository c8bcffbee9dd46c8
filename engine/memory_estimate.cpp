// See memory_estimate.hpp.
#include "engine/memory_estimate.hpp"

#include <algorithm>
#include <cmath>

#include "algorithms/algorithm.hpp"
#include "algorithms/variant.hpp"
#include "cluster/backends.hpp"
#include "cluster/sim_timing.hpp"
#include "cluster/topology.hpp"
#include "core/errors.hpp"
#include "core/memory_info.hpp"
#include "engine/preflight.hpp"
#include "engine/run_schedule.hpp"
#include "engine/shared_dataset.hpp"
#include "workloads/workload.hpp"

namespace dsgd {

namespace {

double dataset_bytes(const Dataset& d) {
  return static_cast<double>(d.feature_bytes()) + static_cast<double>(d.labels.size()) * sizeof(int32_t) +
         static_cast<double>(d.tokens.size()) * sizeof(int32_t);
}

// A gossip variant's topology: its neighbour lists and weights, an int and a double per edge
// and self weight (cluster/topology.hpp's degree bound). Other variants keep only the groups.
double topology_bytes(const RunConfig& cfg) {
  if (!variant_get(cfg.algo).reads_topology) return 0;
  const int n = static_cast<int>(cfg.workers);
  return double(n) * (topology_degree_bound(cfg.topology, n) + 1) * (sizeof(int) + sizeof(double));
}

std::string gb(double bytes) {
  return fmt::format("{:.3g} GB", bytes / 1e9);
}

}  // namespace

MemoryEstimate memory_estimate(const RunConfig& cfg, const Dataset& train, const Dataset& test, size_t param_count,
                               double workload_bytes, const Algorithm* algorithm, int workers_per_process,
                               int processes) {
  MemoryEstimate m;
  m.workers_per_process = std::max(1, workers_per_process);
  m.processes = std::max(1, processes);
  const double n = static_cast<double>(cfg.workers);
  // The dataset and a gossip variant's topology, once per process.
  m.dataset_bytes = dataset_bytes(train) + dataset_bytes(test) + topology_bytes(cfg);
  m.model_bytes = static_cast<double>(param_count) * sizeof(float);
  if (cfg.timing_only) {
    m.per_worker_bytes = 4 * sizeof(double) + sizeof(SimStepTiming);
  } else {
    // params, grads, evaluation copy, optimizer momentum, two algorithm buffers (a
    // snapshot, a receive buffer) — or the algorithm's own model state (dpsgd: one receive
    // buffer per neighbour) plus the evaluation copy and a snapshot, when larger — and one
    // step's sent bytes: the copies of point-to-point messages not yet received, a window
    // (an over-estimate for collectives, which copy nothing).
    m.replicas_bytes = 6.0 * m.model_bytes;
    if (algorithm) {
      const int workers = static_cast<int>(cfg.workers);
      m.replicas_bytes =
          std::max(m.replicas_bytes, algorithm->model_state_bytes(param_count, workers) + 2.0 * m.model_bytes);
      m.replicas_bytes += algorithm->bytes_sent_per_step(m.model_bytes, workers);
    }
    // The workload's step buffers, as it states them; without a workload the batch buffer
    // alone: dense rows are copied (batch × features floats), sparse rows are pointed at (a
    // row reference and the scores per sample).
    const double batch = static_cast<double>(cfg.batch);
    m.batch_bytes = workload_bytes >= 0 ? workload_bytes
                    : train.sparse      ? batch * 64.0
                                        : batch * static_cast<double>(train.features) * sizeof(float);
    // Each local thread's own batch (lasgd, hogwild) and each forward pass in flight (pdasgd).
    if (algorithm) m.workload_instances = algorithm->local_threads() + algorithm->forward_instances();
    m.batch_bytes *= m.workload_instances;
    // The shard's indices; thread stack touched and the step recorder (~256 KiB).
    const double shard = static_cast<double>(train.rows) / n * sizeof(uint32_t);
    m.per_worker_bytes = m.replicas_bytes + m.batch_bytes + shard + 256.0 * 1024;
  }
  m.total_bytes = static_cast<double>(m.processes) *
                  (m.dataset_bytes + static_cast<double>(m.workers_per_process) * m.per_worker_bytes);
  m.available_bytes = memory_available_bytes();
  return m;
}

void memory_check(const MemoryEstimate& m, const RunConfig& cfg, const Dataset& train) {
  if (!(m.available_bytes > 0) || m.total_bytes <= m.available_bytes) return;
  // What to do: shrink whichever term dominates.
  const double batch_total = m.batch_bytes * m.workers_per_process;
  const double replicas_total = m.replicas_bytes * m.workers_per_process;
  std::string hint;
  const bool dense_wide = !train.sparse && train.features >= 100000;
  if (batch_total >= replicas_total && batch_total >= m.dataset_bytes) {
    // The batch term is about linear in the batch: what fits beside everything else.
    const double per_sample = batch_total / std::max<double>(1.0, static_cast<double>(cfg.batch));
    const double fits = std::floor((m.available_bytes - (m.total_bytes - batch_total)) / per_sample);
    hint = fmt::format("use a smaller --batch (about {} of buffers per sample{}{}){}", gb(per_sample),
                       fits >= 1 ? fmt::format(": at most about {:.0f} fit", fits) : "",
                       dense_wide ? "; high-dimensional data belongs in a sparse dataset: libsvm:PATH, or "
                                    "synthetic with density below 0.5 or sparse=true"
                                  : "",
                       m.workload_instances > 1
                           ? fmt::format(", or fewer workload instances per worker ({} now: --local-threads, "
                                         "--pd-staleness + 1)",
                                         m.workload_instances)
                           : "");
  } else if (m.dataset_bytes >= replicas_total) {
    hint = dense_wide ? "the dense dataset dominates: use a sparse one (libsvm:PATH, or synthetic with density "
                        "below 0.5 or sparse=true), or fewer samples"
                      : "use a smaller dataset";
  } else {
    hint = fmt::format("use a smaller model ({:.3g} parameters{}){}", m.model_bytes / sizeof(float),
                       cfg.workload == "svm" ? fmt::format(": {} features x classes", train.features) : "",
                       m.workers_per_process * m.processes > 1 ? ", or fewer workers on this host" : "");
  }
  if (m.processes > 1) hint += fmt::format("; {} ranks of this run share this host", m.processes);
  DSGD_THROW(InputError, hint,
             "the run needs about {} of memory, more than the {} available on this machine: {} worker(s) x {} "
             "({} of model copies: {} per copy; {} of batch and activation buffers for --batch {}{}) + {} of "
             "dataset{}",
             gb(m.total_bytes), gb(m.available_bytes), m.workers_per_process * m.processes, gb(m.per_worker_bytes),
             gb(m.replicas_bytes), gb(m.model_bytes), gb(m.batch_bytes), cfg.batch,
             m.workload_instances > 1 ? fmt::format(" on {} workload instances", m.workload_instances) : "",
             gb(m.dataset_bytes), m.processes > 1 ? fmt::format(" per rank ({} ranks on this host)", m.processes) : "");
}

int64_t run_steps_for_shard(const RunConfig& cfg, size_t shard_rows) {
  if (cfg.steps > 0) return cfg.steps;
  const size_t per_epoch = shard_rows / static_cast<size_t>(std::max<int64_t>(1, cfg.batch));
  const double epochs = cfg.epochs > 0 ? cfg.epochs : 1.0;
  const double steps = std::ceil(epochs * static_cast<double>(per_epoch));
  if (!(steps <= static_cast<double>(kRunConfigMaxSteps)))
    DSGD_THROW(InputError,
               fmt::format("pass fewer --epochs (at most {:.3g} here), a larger --batch, or --steps",
                           static_cast<double>(kRunConfigMaxSteps) / static_cast<double>(per_epoch)),
               "--epochs {} is {:.3g} steps at {} batches per epoch, more than the {} a run may take", cfg.epochs,
               steps, per_epoch, kRunConfigMaxSteps);
  return run_schedule_make(cfg, per_epoch).steps;  // the trainer's and the simulator's rule
}

RunPreflight memory_preflight(const RunConfig& cfg, int world_size, int ranks_on_host) {
  RunPreflight p;
  // In-process backends (sim) estimate their shared memory themselves (sim_memory_estimate).
  if (backend_get(cfg.backend).launch == BackendLaunch::launch_in_process) return p;
  preflight_check_names(cfg);
  p.data = dataset_load_shared(cfg);
  const Dataset& train = p.data->train;
  p.algorithm = algorithm_create(cfg.algo, cfg);
  const Algorithm* algorithm = p.algorithm.get();
  // The batch sampler's check, before any batch buffer is allocated.
  const int data_ranks = std::max(1, algorithm->worker_count(world_size));
  const size_t shard = train.rows / static_cast<size_t>(data_ranks);
  const size_t batch = static_cast<size_t>(cfg.batch);
  if (batch == 0 || shard < batch)
    DSGD_THROW(InputError, "use a smaller --batch or fewer --workers",
               "--batch {} is larger than each worker's shard ({} of {} training samples over {} workers)", batch,
               shard, train.rows, data_ranks);
  run_steps_for_shard(cfg, shard);
  p.workload = workload_create(cfg, train);
  p.memory = memory_estimate(cfg, train, p.data->test, p.workload->param_count(), p.workload->reserve_bytes(batch),
                             algorithm, 1, ranks_on_host);
  memory_check(p.memory, cfg, train);
  return p;
}

}  // namespace dsgd
