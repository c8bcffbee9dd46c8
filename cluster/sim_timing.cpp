// See sim_timing.hpp.
#include "cluster/sim_timing.hpp"

#include <algorithm>

#include "core/errors.hpp"

namespace dsgd {

SimTimingCompute sim_timing_compute(const SimComputeCost& c) {
  SimTimingCompute k;
  k.bwd = c.bwd_rest_s;
  for (double b : c.bwd_layer_s) k.bwd += b;
  k.compute_before = c.data_s + c.fwd_s + k.bwd;
  k.fwd_bwd = c.fwd_s + k.bwd;
  return k;
}

double sim_timing_delay(const SimTimingPlan& plan, int i, int64_t step, double fwd_bwd, SimStepTiming& row) {
  if (plan.stragglers.empty()) return 0.0;
  return plan.stragglers.delay_s(i, step, fwd_bwd, true, &row.jitter);
}

void sim_timing_fill_compute(const SimTimingPlan& plan, const SimTimingCompute& k, SimStepTiming& row) {
  row.data = plan.cost.data_s;
  row.fwd = plan.cost.fwd_s;
  row.bwd = k.bwd;
  row.opt = plan.cost.opt_s;
}

SimTimingResult sim_timing_run(const SimTimingPlan& plan, SimTimingStep rule, const std::function<bool(int64_t)>& keep,
                               const std::function<void(int64_t, const SimStepTiming*)>& sink) {
  if (!rule) DSGD_THROW(Error, "this is a bug: pass the variant's timing rule", "timing-only run without a step rule");
  const size_t n = static_cast<size_t>(plan.workers);
  const bool alike = !plan.simulate_each_worker && plan.stragglers.empty() && plan.neighbors.empty();
  std::vector<double> clock(alike ? 1 : n, 0.0);
  std::vector<SimStepTiming> rows(clock.size()), copies;
  SimTimingState state;
  int64_t since_sync = 0;
  for (int64_t step = 0; step < plan.steps; ++step) {
    rule(plan, state, step, clock, rows.data());
    if (keep && keep(step)) {
      if (alike) copies.assign(n, rows[0]);
      sink(step, alike ? copies.data() : rows.data());
    }
    // The trainer's evaluation / flush points synchronise the workers (untimed collectives).
    const int64_t steps_done = step + 1;
    ++since_sync;
    if (steps_done % plan.eval_every == 0 || steps_done == plan.steps || since_sync == plan.flush_every) {
      since_sync = 0;
      const double t = *std::max_element(clock.begin(), clock.end());
      std::fill(clock.begin(), clock.end(), t);
    }
  }
  SimTimingResult result;
  result.end_time = n ? *std::max_element(clock.begin(), clock.end()) : 0.0;
  result.worker_steps = plan.steps * static_cast<int64_t>(n);
  return result;
}

}  // namespace dsgd
