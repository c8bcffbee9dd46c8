// See sim_timing.hpp.
#include "cluster/sim_timing.hpp"

#include <algorithm>

#include "core/errors.hpp"

namespace dsgd {

const char* const sim_timing_supported_text =
    "ssgd (without --overlap), localsgd, diloco and dpsgd (--dpsgd-delay 0, static topology)";

bool sim_timing_supports(const std::string& algo, bool overlap, int64_t dpsgd_delay) {
  return (algo == "ssgd" && !overlap) || algo == "localsgd" || algo == "diloco" ||
         (algo == "dpsgd" && dpsgd_delay == 0);
}

namespace {

// One dpsgd (delay 0) step: arrive = after the local update; depart = the neighbour
// exchange's completion, with the same arithmetic as SimWorld::exchange_start.
void dpsgd_step(const SimTimingPlan& plan, int64_t step, double compute_before, double fwd_bwd,
                const std::vector<double>& clock, std::vector<double>& arrive, std::vector<double>& delay,
                std::vector<double>& depart) {
  const size_t n = clock.size();
  for (size_t i = 0; i < n; ++i) {
    const double d = plan.stragglers.empty() ? 0.0 : plan.stragglers.delay_s(static_cast<int>(i), step, fwd_bwd);
    delay[i] = d;
    arrive[i] = clock[i] + compute_before + d + plan.cost.opt_s;
    depart[i] = arrive[i];
  }
  if (n <= 1) return;
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

}  // namespace

SimTimingResult sim_timing_run(const SimTimingPlan& plan, const std::function<bool(int64_t)>& keep,
                               const std::function<void(int64_t, const SimStepTiming*)>& sink) {
  if (!sim_timing_supports(plan.algo, false))
    DSGD_THROW(InputError, "run the simulation with numerics (drop --timing-only)",
               "--timing-only models {} only (got {})", sim_timing_supported_text, plan.algo);
  const size_t n = static_cast<size_t>(plan.workers);
  const bool ssgd = plan.algo == "ssgd";
  const bool dpsgd = plan.algo == "dpsgd";
  if (dpsgd && plan.workers > 1 && plan.neighbors.size() != n)
    DSGD_THROW(Error, "this is a bug: pass the topology's neighbours", "timing-only dpsgd without neighbours");
  const int64_t period = std::max<int64_t>(1, plan.period);
  const SimComputeCost& c = plan.cost;
  double bwd = c.bwd_rest_s;
  for (double b : c.bwd_layer_s) bwd += b;
  const double compute_before = c.data_s + c.fwd_s + bwd;  // before the straggler delay
  const double fwd_bwd = c.fwd_s + bwd;
  const double model = sim_collective_time(plan.network, plan.native, CollKind::coll_allreduce, plan.net_algo,
                                           plan.param_bytes, plan.workers);
  const double bytes_sent = ring_allreduce_bytes_sent(plan.param_bytes, plan.workers);
  const bool stragglers = !plan.stragglers.empty();

  std::vector<double> clock(n, 0.0), arrive(n, 0.0), delay(n, 0.0), depart(n, 0.0);
  std::vector<SimStepTiming> rows(n);
  int64_t since_sync = 0;
  for (int64_t step = 0; step < plan.steps; ++step) {
    if (dpsgd) {
      dpsgd_step(plan, step, compute_before, fwd_bwd, clock, arrive, delay, depart);
      const bool wanted = keep && keep(step);
      const double latest = *std::max_element(arrive.begin(), arrive.end());
      for (size_t i = 0; i < n; ++i) {
        const double start = clock[i];
        const double total = depart[i] - arrive[i];
        const double wait = depart[i] <= latest ? total : std::max(0.0, latest - arrive[i]);
        clock[i] = depart[i];
        if (wanted) {
          SimStepTiming& r = rows[i];
          r = SimStepTiming{start,        depart[i] - start,
                            c.data_s,     c.fwd_s,
                            bwd,          c.opt_s,
                            total - wait, wait,
                            delay[i],     plan.workers > 1 ? plan.param_bytes * double(plan.neighbors[i].size()) : 0.0};
        }
      }
      if (wanted) sink(step, rows.data());
      const int64_t steps_done = step + 1;
      ++since_sync;
      if (steps_done % plan.eval_every == 0 || steps_done == plan.steps || since_sync == plan.flush_every) {
        since_sync = 0;
        const double t = *std::max_element(clock.begin(), clock.end());
        std::fill(clock.begin(), clock.end(), t);
      }
      continue;
    }
    const bool communicate = ssgd || (step + 1) % period == 0;
    double latest = -1.0;
    for (size_t i = 0; i < n; ++i) {
      const double d = stragglers ? plan.stragglers.delay_s(static_cast<int>(i), step, fwd_bwd) : 0.0;
      delay[i] = d;
      // Arrival at the step's collective: after backward (ssgd) or after the update (localsgd).
      const double a = clock[i] + compute_before + d + (ssgd ? 0.0 : c.opt_s);
      arrive[i] = a;
      if (a > latest) latest = a;
    }
    const double done = latest + model;
    const bool wanted = keep && keep(step);
    for (size_t i = 0; i < n; ++i) {
      const double start = clock[i];
      double end;
      double wait = 0, comm = 0;
      if (communicate) {
        wait = latest - arrive[i];
        comm = model;
        end = ssgd ? done + c.opt_s : done;
      } else {
        end = arrive[i];
      }
      clock[i] = end;
      if (wanted) {
        SimStepTiming& r = rows[i];
        r.start = start;
        r.step = end - start;
        r.data = c.data_s;
        r.fwd = c.fwd_s;
        r.bwd = bwd;
        r.opt = c.opt_s;
        r.comm = comm;
        r.wait = wait;
        r.injected = delay[i];
        r.bytes = communicate ? bytes_sent : 0.0;
      }
    }
    if (wanted) sink(step, rows.data());
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
