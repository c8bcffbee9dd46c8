// The timing-only fast path of the simulated cluster (`--backend sim --timing-only`): no
// numerics, no threads, only the virtual clocks of N workers advanced step by step by the
// same rules the threaded simulator applies (sim_world.hpp), for throughput and breakdown
// predictions of thousands of workers.
//
// Per worker i and step t (costs from the compute profile, δ from the straggler models):
//   arrive_i = start_i + data + fwd + bwd + δ_i(t, fwd + bwd)
//   ssgd:      A = max_j arrive_j;  T = A + model(all-reduce, |x|·4, n)
//              wait_i = A − arrive_i;  comm_i = T − A;  end_i = T + opt
//   localsgd:  local_i = arrive_i + opt; on steps with (t+1) mod H = 0 the same collective
//              from A = max_j local_j (wait_i = A − local_i); otherwise end_i = local_i
//   diloco:    as localsgd (the outer step has no modelled compute phase)
//   dpsgd (--dpsgd-delay 0, static topology): a_i = arrive_i + opt, then the neighbour
//              exchange of sim_world.hpp: the message to the k-th neighbour j arrives at
//              a_i + α_ij + Σ_{m≤k} S/B_m; end_i = max(a_i + Σ_k S/B_k, arrivals at i);
//              wait/comm split as the recorder does (docs/metrics.md): wait_i =
//              min(end_i, max_j a_j) − a_i, comm_i = end_i − a_i − wait_i
// and start_i(t+1) = end_i(t). Like the trainer, every worker leaves an evaluation or
// flush point at the latest worker's time (untimed collectives synchronise); those points
// are the trainer's: before step 0, after steps that are multiples of eval_every, the last
// step, and whenever flush_every steps have passed since the previous one.
// The threaded simulator gives the same times for the same configuration (up to float
// rounding of sums in a different order); tests/integration/sim_backend.sh checks that.
//
// Limits: only the synchronous algorithms whose communication pattern is fixed (ssgd
// without --overlap, localsgd, diloco, dpsgd with --dpsgd-delay 0 on a static topology);
// others need the numerics (their pattern depends on the interleaving, or non-blocking
// requests whose overlap accounting is not modelled here).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "cluster/network_model.hpp"
#include "cluster/sim_world.hpp"
#include "cluster/straggler.hpp"

namespace dsgd {

// Whether the timing-only path models this algorithm (ssgd without overlap, localsgd,
// diloco, dpsgd with delay 0; dpsgd also needs a static topology, checked by the caller).
bool sim_timing_supports(const std::string& algo, bool overlap, int64_t dpsgd_delay = 0);
// What the timing-only path supports, for messages.
extern const char* const sim_timing_supported_text;

struct SimTimingPlan {
  int workers = 1;
  int64_t steps = 0;
  int64_t eval_every = 1;
  int64_t flush_every = 1;
  std::string algo = "ssgd";
  int64_t period = 1;      // H (localsgd)
  double param_bytes = 0;  // |x|·4
  SimComputeCost cost;
  Stragglers stragglers;
  std::optional<NetworkModel> network;  // empty: ideal
  std::optional<NetworkModel> native;   // --native-floor (SimWorldOptions::native)
  CollAlgo net_algo = CollAlgo::algo_auto;
  // dpsgd: each rank's neighbours (ascending) and the ranks' groups (link classes).
  std::vector<std::vector<int>> neighbors;
  std::vector<int> group_of;
};

// One worker's timings in one step (seconds on the virtual clock; start relative to 0).
struct SimStepTiming {
  double start = 0, step = 0, data = 0, fwd = 0, bwd = 0, opt = 0, comm = 0, wait = 0, injected = 0, bytes = 0;
};

struct SimTimingResult {
  double end_time = 0;       // the latest worker's clock at the end
  int64_t worker_steps = 0;  // workers × steps simulated
};

// Runs the plan. keep(step) says whether the step's per-worker timings are wanted; when it
// returns true, sink(step, timings) receives `workers` entries (valid during the call).
// Throws InputError when the algorithm is not supported.
SimTimingResult sim_timing_run(const SimTimingPlan& plan, const std::function<bool(int64_t)>& keep,
                               const std::function<void(int64_t, const SimStepTiming*)>& sink);

}  // namespace dsgd
