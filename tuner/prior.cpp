// See prior.hpp.
#include "tuner/prior.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "algorithms/optimizer.hpp"
#include "algorithms/variant.hpp"
#include "cluster/topology.hpp"
#include "tuner/recommend.hpp"
#include "tuner/trial.hpp"

namespace dsgd {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// The learning rate candidate c would train with under `rule`: the base rate of c's optimizer
// (--lr, or that optimizer's default when --lr is not given) scaled by the rule.
double lr_of(const TuneSpec& spec, const Candidate& c, const std::string& rule) {
  const double base = optimizer_base_lr(candidate_config(spec, c, spec.base.seed));
  return lr_scaled(base, rule, c.batch, static_cast<int>(spec.base.workers), spec.base.lr_base_batch);
}

double gap_of(const TuneSpec& spec, const std::string& topology) {
  if (topology.empty()) return 1.0;
  return topology_make(topology, static_cast<int>(spec.base.workers), spec.base.seed).spectral_gap;
}

std::string steps_text(const ProbePoint& p) {
  return p.reached ? fmt::format("{}", p.steps) : fmt::format(">= {} (not reached: a lower bound)", p.steps);
}

}  // namespace

double prior_sync_steps(const PriorModel& m, double global_batch, double lr_ratio) {
  const double u = lr_ratio;
  if (!(u > 0 && u < 2) || !(global_batch > 0)) return kInf;
  return m.s_min * (1.0 + m.b_noise / global_batch) / (u * (2.0 - u));
}

double prior_period_penalty(double kappa, int64_t period) {
  return std::max(kPriorPenaltyFloor, 1.0 + kappa * static_cast<double>(std::max<int64_t>(0, period - 1)));
}

double prior_gap_penalty(double kappa, double spectral_gap) {
  const double p = std::clamp(spectral_gap, 1e-9, 1.0);
  return std::max(kPriorPenaltyFloor, 1.0 + kappa * (1.0 / p - 1.0));
}

PriorModel prior_fit(const PriorProbe& probe, const TuneSpec& spec) {
  PriorModel m;
  m.workers = probe.workers;
  const double n = static_cast<double>(probe.workers);
  const ProbePoint* sync = nullptr;
  const ProbePoint* sync_batch = nullptr;
  for (const ProbePoint& p : probe.points) {
    if (p.role == "sync") sync = &p;
    if (p.role == "sync-batch" && p.steps > 0) sync_batch = &p;
  }
  if (!sync || !(sync->steps > 0)) {
    m.s_min = 1;
    m.notes.push_back("no synchronous probe point: steps are not modelled (every configuration equal)");
    return m;
  }
  m.ref_rule = sync->candidate.lr_scaling;
  if (!probe.noise_at.empty() && probe.noise_at.back().valid) m.b_noise_grad = probe.noise_at.back().b_simple;
  const double b1 = n * static_cast<double>(sync->candidate.batch), s1 = static_cast<double>(sync->steps);
  if (sync_batch && sync->reached && sync_batch->reached) {
    // S_i = S_min (1 + B_noise/B_i) at both: B_noise = (S1 − S2) / (S2/B1 − S1/B2) (reported).
    const double b2 = n * static_cast<double>(sync_batch->candidate.batch), s2 = static_cast<double>(sync_batch->steps);
    const double den = s2 / b1 - s1 / b2;
    m.b_noise_steps = s1 <= s2 ? 0.0 : den > 0 ? (s1 - s2) / den : 1e12;
  }
  // B_noise: the gradient-norm estimate at the probe's last point (the target), else the steps'.
  m.b_noise = m.b_noise_grad >= 0 ? m.b_noise_grad : std::max(0.0, m.b_noise_steps);
  m.notes.push_back(
      fmt::format("B_noise = {:.4g} ({}; from the steps of the two synchronous points: {})", m.b_noise,
                  m.b_noise_grad >= 0 ? fmt::format("gradient norms at step {}", probe.noise_at_steps.back())
                                      : std::string("the gradient-norm estimate is not positive: from the steps"),
                  m.b_noise_steps >= 0 ? fmt::format("{:.4g}", m.b_noise_steps) : std::string("not available")));
  // S_min: the geometric mean over the synchronous points of S_i / (1 + B_noise/B_i).
  double log_sum = 0;
  int count = 0;
  std::vector<std::string> used;
  for (const ProbePoint* p : {sync, sync_batch}) {
    if (!p) continue;
    const double b = n * static_cast<double>(p->candidate.batch);
    log_sum += std::log(static_cast<double>(p->steps) / (1.0 + m.b_noise / b));
    ++count;
    used.push_back(fmt::format("ssgd b={} in {} steps", p->candidate.batch, steps_text(*p)));
  }
  m.s_min = std::exp(log_sum / count);
  m.notes.push_back(fmt::format("S_min = {:.4g} ({})", m.s_min, fmt::join(used, ", ")));
  for (const ProbePoint& p : probe.points) {
    if (p.role != "period" && p.role != "gossip") continue;
    const double base = prior_sync_steps(m, n * static_cast<double>(p.candidate.batch), 1.0);
    const double x = p.role == "period" ? static_cast<double>(p.candidate.period - 1)
                                        : 1.0 / std::clamp(p.spectral_gap, 1e-9, 1.0) - 1.0;
    double kappa = 0;
    if (p.steps > 0 && std::isfinite(base) && base > 0 && x > 0)
      kappa = (static_cast<double>(p.steps) / base - 1.0) / x;
    (p.role == "period" ? m.kappa_period : m.kappa_gap)[p.candidate.algo] = kappa;
    m.notes.push_back(fmt::format("kappa({}) = {:.4g} ({} in {} steps against {:.4g} synchronous)", p.candidate.algo,
                                  kappa, candidate_key(p.candidate), p.steps > 0 ? steps_text(p) : "failed", base));
  }
  return m;
}

double prior_steps(const PriorModel& m, const TuneSpec& spec, const Candidate& c) {
  const double u = lr_of(spec, c, c.lr_scaling) / lr_of(spec, c, m.ref_rule);
  double s = prior_sync_steps(m, static_cast<double>(m.workers * c.batch), u);
  if (auto it = m.kappa_period.find(c.algo); it != m.kappa_period.end() && variant_uses_period(c.algo))
    s *= prior_period_penalty(it->second, c.period);
  if (auto it = m.kappa_gap.find(c.algo); it != m.kappa_gap.end())
    s *= prior_gap_penalty(it->second, gap_of(spec, c.topology));
  return s;
}

std::vector<PriorStepTime> prior_step_times(const TunePlan& plan, Store& read) {
  std::vector<PriorStepTime> out;
  for (const Candidate& c : plan.space.feasible) {
    PriorStepTime t{kInf, kInf};
    try {
      RunConfig cfg = candidate_config(plan.spec, c, plan.spec.base.seed);
      t.step_s = trial_step_time_estimate(cfg, read);
      prior_probe_ideal_link(cfg);
      t.compute_s = std::min(t.step_s, trial_step_time_estimate(cfg, read));
    } catch (const std::exception&) {
      t = {kInf, kInf};
    }
    out.push_back(t);
  }
  return out;
}

double prior_time(const PriorStepTime& t, double steps, int64_t period) {
  if (!(steps >= 0) || !std::isfinite(steps) || !std::isfinite(t.step_s)) return kInf;
  if (period <= 1 || !std::isfinite(t.compute_s)) return steps * t.step_s;
  const double h = static_cast<double>(period);
  return steps * t.compute_s + std::floor(steps / h) * h * (t.step_s - t.compute_s);
}

std::vector<PriorPrediction> prior_predict(const PriorModel& m, const TunePlan& plan,
                                           const std::vector<PriorStepTime>& step_s) {
  std::vector<PriorPrediction> out;
  for (size_t i = 0; i < plan.space.feasible.size(); ++i) {
    const Candidate& c = plan.space.feasible[i];
    PriorPrediction p;
    p.step = i < step_s.size() ? step_s[i] : PriorStepTime{kInf, kInf};
    p.steps = prior_steps(m, plan.spec, c);
    p.time_s = prior_time(p.step, p.steps, variant_uses_period(c.algo) ? c.period : 1);
    p.log_time = p.time_s > 0 && std::isfinite(p.time_s) ? std::log(p.time_s) : kInf;
    out.push_back(p);
  }
  return out;
}

std::vector<double> prior_log_times(const std::vector<PriorPrediction>& p) {
  double worst = -kInf;
  for (const PriorPrediction& x : p)
    if (std::isfinite(x.log_time)) worst = std::max(worst, x.log_time);
  std::vector<double> out;
  out.reserve(p.size());
  for (const PriorPrediction& x : p)
    out.push_back(std::isfinite(x.log_time) ? x.log_time : std::isfinite(worst) ? worst + std::log(10.0) : 0.0);
  return out;
}

std::vector<size_t> prior_schedule_points(const std::vector<Candidate>& space, size_t best) {
  const Candidate& w = space[best];
  auto same = [&](const Candidate& c, const char* schedule) {
    return c.algo == w.algo && c.batch == w.batch && c.topology == w.topology && c.lr_scaling == w.lr_scaling &&
           c.compress == w.compress && c.period_schedule == schedule;
  };
  std::vector<size_t> out;
  for (size_t i = 0; i < space.size(); ++i)
    if (same(space[i], "qsr") && space[i].period == w.period) out.push_back(i);
  // adacomm: the largest H_0 in the space up to 4 H (its H falls with the loss from there).
  size_t pick = space.size();
  for (size_t i = 0; i < space.size(); ++i)
    if (same(space[i], "adacomm") && space[i].period <= 4 * w.period &&
        (pick == space.size() || space[i].period > space[pick].period))
      pick = i;
  if (pick < space.size()) out.push_back(pick);
  return out;
}

std::vector<size_t> prior_design(const std::vector<Candidate>& space, const std::vector<double>& log_time, size_t n,
                                 uint64_t seed) {
  std::vector<size_t> all(space.size());
  std::iota(all.begin(), all.end(), size_t{0});
  if (n >= space.size()) return all;
  std::vector<size_t> by_prior = all;
  std::stable_sort(by_prior.begin(), by_prior.end(), [&](size_t a, size_t b) { return log_time[a] < log_time[b]; });
  std::vector<size_t> chosen;
  auto has = [&](size_t i) { return std::find(chosen.begin(), chosen.end(), i) != chosen.end(); };
  // The best of each algorithm, best algorithms first (by_prior visits each algorithm's best first).
  std::vector<std::string> families;
  for (size_t i : by_prior) {
    if (std::find(families.begin(), families.end(), space[i].algo) != families.end()) continue;
    families.push_back(space[i].algo);
    if (chosen.size() < n) chosen.push_back(i);
  }
  // The schedule points of each algorithm with period schedules in the space, from its best
  // constant-period configuration by the prior (same H, batch, rule, compressor).
  for (const std::string& algo : families)
    for (size_t i : by_prior) {
      if (space[i].algo != algo || !space[i].period_schedule.empty()) continue;
      for (size_t j : prior_schedule_points(space, i))
        if (chosen.size() < n && !has(j)) chosen.push_back(j);
      break;
    }
  const size_t fill = n / 3;
  for (size_t i : by_prior) {
    if (chosen.size() >= n - fill) break;
    if (!has(i)) chosen.push_back(i);
  }
  if (chosen.size() < n) {
    const std::vector<size_t> spread = space_fill_sample(space, n, seed, chosen);
    for (size_t i : spread)
      if (chosen.size() < n && !has(i)) chosen.push_back(i);
  }
  return chosen;
}

TunePrior prior_build(const TunePlan& plan, Store& read, const PriorProbe& probe) {
  TunePrior p;
  p.probe = probe;
  p.model = prior_fit(probe, plan.spec);
  p.predictions = prior_predict(p.model, plan, prior_step_times(plan, read));
  p.log_time = prior_log_times(p.predictions);
  for (size_t i = 0; i < p.log_time.size(); ++i)
    if (p.log_time[i] < p.log_time[p.argmin]) p.argmin = i;
  return p;
}

std::vector<std::string> prior_describe(const TunePlan& plan, const TunePrior& prior) {
  std::vector<std::string> out = prior_probe_describe(prior.probe);
  out.push_back(fmt::format("prior constants: {}", fmt::join(prior.model.notes, "; ")));
  std::vector<std::string> best;
  std::vector<std::string> seen;
  std::vector<size_t> order(prior.log_time.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return prior.log_time[a] < prior.log_time[b]; });
  for (size_t i : order) {
    const Candidate& c = plan.space.feasible[i];
    if (std::find(seen.begin(), seen.end(), c.algo) != seen.end()) continue;
    seen.push_back(c.algo);
    if (i >= prior.predictions.size()) continue;
    const PriorPrediction& q = prior.predictions[i];
    best.push_back(fmt::format("{} ({:.4g} steps, {:.3g} ms a step of which compute {:.3g} ms: {:.4g} s)",
                               candidate_key(c), q.steps, q.step.step_s * 1e3, q.step.compute_s * 1e3, q.time_s));
  }
  out.push_back(fmt::format("prior's best per algorithm: {}", fmt::join(best, "; ")));
  return out;
}

}  // namespace dsgd
