// See timing_rules.hpp.
#include "algorithms/timing_rules.hpp"

#include <algorithm>

#include "core/errors.hpp"

namespace dsgd {

void timing_step_allreduce(const SimTimingPlan& plan, int64_t step, std::vector<double>& clock, SimStepTiming* rows,
                           bool communicate, bool after_update) {
  const size_t n = clock.size();
  const SimComputeCost& c = plan.cost;
  const SimTimingCompute k = sim_timing_compute(c);
  double latest = -1.0;
  for (size_t i = 0; i < n; ++i) {
    const double d = sim_timing_delay(plan, static_cast<int>(i), step, k.fwd_bwd);
    rows[i].injected = d;
    // Arrival at the step's collective: after backward, or after the update.
    const double a = clock[i] + k.compute_before + d + (after_update ? c.opt_s : 0.0);
    rows[i].start = a;  // the arrival until the step's end is known
    if (a > latest) latest = a;
  }
  const double model = communicate ? sim_collective_time(plan.network, plan.native, CollKind::coll_allreduce,
                                                         plan.net_algo, plan.param_bytes, plan.workers)
                                   : 0.0;
  const double done = latest + model;
  const double bytes = communicate ? ring_allreduce_bytes_sent(plan.param_bytes, plan.workers) : 0.0;
  for (size_t i = 0; i < n; ++i) {
    SimStepTiming& r = rows[i];
    const double arrive = r.start;
    double end, wait = 0, comm = 0;
    if (communicate) {
      wait = latest - arrive;
      comm = model;
      end = after_update ? done : done + c.opt_s;
    } else {
      end = after_update ? arrive : arrive + c.opt_s;
    }
    r.start = clock[i];
    r.step = end - clock[i];
    sim_timing_fill_compute(plan, k, r);
    r.comm = comm;
    r.wait = wait;
    r.bytes = bytes;
    clock[i] = end;
  }
}

void timing_step_gossip(const SimTimingPlan& plan, int64_t step, std::vector<double>& clock, SimStepTiming* rows) {
  const size_t n = clock.size();
  if (n > 1 && plan.neighbors.size() != n)
    DSGD_THROW(Error, "this is a bug: pass the topology's neighbours", "timing-only gossip without neighbours");
  const SimTimingCompute k = sim_timing_compute(plan.cost);
  std::vector<double> arrive(n), depart(n);
  for (size_t i = 0; i < n; ++i) {
    const double d = sim_timing_delay(plan, static_cast<int>(i), step, k.fwd_bwd);
    rows[i].injected = d;
    arrive[i] = clock[i] + k.compute_before + d + plan.cost.opt_s;
    depart[i] = arrive[i];
  }
  // The neighbour exchange, with the same arithmetic as SimWorld::exchange_start.
  if (n > 1) {
    for (size_t i = 0; i < n; ++i) {
      const int src = static_cast<int>(i);
      double busy = 0;
      for (int j : plan.neighbors[i]) {
        const double msg = sim_message_time(plan.network, plan.native, plan.group_of, src, j, plan.param_bytes);
        const double alpha = sim_message_time(plan.network, plan.native, plan.group_of, src, j, 0.0);
        busy += msg - alpha;
        double& dj = depart[static_cast<size_t>(j)];
        dj = std::max(dj, arrive[i] + alpha + busy);
      }
      depart[i] = std::max(depart[i], arrive[i] + busy);
    }
  }
  const double latest = *std::max_element(arrive.begin(), arrive.end());
  for (size_t i = 0; i < n; ++i) {
    SimStepTiming& r = rows[i];
    const double total = depart[i] - arrive[i];
    const double wait = depart[i] <= latest ? total : std::max(0.0, latest - arrive[i]);
    r.start = clock[i];
    r.step = depart[i] - clock[i];
    sim_timing_fill_compute(plan, k, r);
    r.comm = total - wait;
    r.wait = wait;
    r.bytes = n > 1 ? plan.param_bytes * double(plan.neighbors[i].size()) : 0.0;
    clock[i] = depart[i];
  }
}

}  // namespace dsgd
