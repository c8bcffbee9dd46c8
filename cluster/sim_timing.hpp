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
// and start_i(t+1) = end_i(t). Like the trainer, every worker leaves an evaluation or
// flush point at the latest worker's time (untimed collectives synchronise); those points
// are the trainer's: before step 0, after steps that are multiples of eval_every, the last
// step, and whenever flush_every steps have passed since the previous one.
// The threaded simulator gives the same times for the same configuration (up to float
// rounding of sums in a different order); tests/integration/sim_backend.sh checks that.
//
// Limits: only the synchronous algorithms whose communication pattern is fixed (ssgd
// without --overlap, localsgd); others need the numerics (their pattern may depend on
// data or on the interleaving).
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

// Whether the timing-only path models this algorithm (ssgd without overlap, localsgd).
bool sim_timing_supports(const std::string& algo, bool overlap);

struct SimTimingPlan {
  int workers = 1;
  int64_t steps = 0;
  int64_t eval_every = 1;
  int64_t flush_every = 1;
  std::string algo = "ssgd";
  int64_t period = 1;          // H (localsgd)
  double param_bytes = 0;      // |x|·4
  SimComputeCost cost;
  Stragglers stragglers;
  std::optional<NetworkModel> network;  // empty: ideal
  CollAlgo net_algo = CollAlgo::algo_auto;
};

// One worker's timings in one step (seconds on the virtual clock; start relative to 0).
struct SimStepTiming {
  double start = 0, step = 0, data = 0, fwd = 0, bwd = 0, opt = 0, comm = 0, wait = 0, injected = 0, bytes = 0;
};

struct SimTimingResult {
  double end_time = 0;          // the latest worker's clock at the end
  int64_t worker_steps = 0;     // workers × steps simulated
};

// Runs the plan. keep(step) says whether the step's per-worker timings are wanted; when it
// returns true, sink(step, timings) receives `workers` entries (valid during the call).
// Throws InputError when the algorithm is not supported.
SimTimingResult sim_timing_run(const SimTimingPlan& plan, const std::function<bool(int64_t)>& keep,
                               const std::function<void(int64_t, const SimStepTiming*)>& sink);

}  // namespace dsgd
