// See resolution.hpp.
#include "tuner/resolution.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>

namespace dsgd::tune_detail {

namespace {

// The plan at trial budget r: the rungs r/eta^k; the schedules follow r (Runner::schedule_probe).
TunePlan plan_at(const TunePlan& plan, double r) {
  TunePlan p = plan;
  p.trial_time_s = r;
  for (size_t i = 0; i < p.rungs.size(); ++i)
    p.rungs[i] = r / std::pow(plan.spec.eta, static_cast<double>(p.rungs.size() - 1 - i));
  return p;
}

}  // namespace

// A ranked configuration from its trials at the largest budget it ran at: the median in the
// censored order (of an even count, the worse of the middle two) and the spread of its times.
RankedConfig ranked_make(const TunePlan& plan, const Candidate& c, std::vector<TrialRow> trials, double fidelity_s,
                         bool raced) {
  RankedConfig rc;
  rc.candidate = c;
  rc.key = candidate_key(c);
  for (size_t f = 0; f < plan.space.feasible.size(); ++f)
    if (candidate_key(plan.space.feasible[f]) == rc.key) rc.bytes_per_step = plan.space.bytes_per_step[f];
  rc.raced = raced;
  rc.trials = std::move(trials);
  rc.fidelity_s = fidelity_s;
  rc.representative = trials_median(rc.trials);
  rc.median = score_of(rc.representative);
  std::vector<double> times;
  for (const TrialRow& t : rc.trials) {
    times.push_back(t.time_s);
    if (!t.reached) rc.spread_censored = true;
  }
  rc.spread_lo = *std::min_element(times.begin(), times.end());
  rc.spread_hi = *std::max_element(times.begin(), times.end());
  return rc;
}

// The evaluation interval of a ranked configuration's representative trial, in evaluation
// seconds (0 when unknown).
double eval_interval_s(const RankedConfig& rc) {
  const TrialRow& t = rc.representative;
  const auto cfg = nlohmann::json::parse(t.config_json, nullptr, false);
  const int64_t every = cfg.is_object() ? cfg.value("eval-every", int64_t(0)) : 0;
  if (every <= 0 || t.steps <= 0) return 0;
  return t.time_s * static_cast<double>(every) / static_cast<double>(t.steps);
}

// When the winner reached the target within its first two evaluations, the evaluation
// interval, not the configurations, decided the top: that interval; else 0.
double resolution_limit_s(const TuneResult& result) {
  if (result.ranking.empty() || !result.ranking.front().median.reached) return 0;
  const RankedConfig& w = result.ranking.front();
  const double interval = eval_interval_s(w);
  return interval > 0 && w.median.time_s <= 2.0 * interval * (1 + 1e-9) ? interval : 0;
}

// The verdict line (and top_two_overlap) of the ranking as it stands.
void verdict_make(const TunePlan& plan, TuneResult& result) {
  result.top_two_overlap = false;
  if (result.ranking.empty() || !result.ranking.front().median.reached) {
    result.verdict = fmt::format(
        "no configuration reached {} within its budget: no recommendation (raise --budget or "
        "--trial-time, or lower the target)",
        target_format(plan.target));
    return;
  }
  const RankedConfig& w = result.ranking.front();
  result.verdict = fmt::format("recommended: {} (median time-to-target {} over {} seed{})", w.key,
                               fmt_s(w.median.time_s), w.trials.size(), w.trials.size() == 1 ? "" : "s");
  if (result.ranking.size() > 1 && result.ranking[1].raced) {
    const RankedConfig& r = result.ranking[1];
    const double r_lo = r.spread_lo;
    const double w_hi = w.spread_censored ? std::numeric_limits<double>::infinity() : w.spread_hi;
    const double r_hi = r.spread_censored ? std::numeric_limits<double>::infinity() : r.spread_hi;
    result.top_two_overlap = r.median.reached && w_hi >= r_lo && r_hi >= w.spread_lo;
    if (result.top_two_overlap)
      result.verdict += fmt::format(
          "; the runner-up {} cannot be told apart: their spreads over seeds overlap ({:.4g}-{:.4g} s vs "
          "{:.4g}-{:.4g} s)",
          r.key, w.spread_lo, w.spread_hi, r.spread_lo, r.spread_hi);
    else
      result.verdict += fmt::format("; ahead of {} beyond the seed-to-seed spread", r.key);
  }
}

// Re-measures the leaders of a resolution-limited ranking at a finer evaluation interval: the
// configurations that reached the target within two of the winner's evaluation intervals (at
// most kRefineLeaders), at R' = 10 x the winner's time (its evaluations then come R'/360
// apart: about 36 before the winner's old time). Each leader runs once (the base seed); the
// best race_top of them then run over race_seeds seeds, and their medians re-rank them ahead
// of the other leaders, then the rest. Up to kRefineRounds rounds while the top stays
// limited, and only when the tuner chose R itself (not with --trial-time). The trials count
// against --budget; with --trials they come on top, at most kRefineLeaders + race_top x
// (race_seeds - 1) a round.
constexpr int kRefineRounds = 3;
constexpr size_t kRefineLeaders = 16;

void refine_resolution(const TunePlan& plan, Runner& runner, TuneResult& result) {
  const TuneSpec& spec = plan.spec;
  if (spec.trial_time_s > 0) return;
  for (int round = 0; round < kRefineRounds; ++round) {
    const double interval = resolution_limit_s(result);
    if (interval <= 0) return;
    const double fine_r = std::max(result.ranking.front().median.time_s * 10, 1e-6);
    if (fine_r >= plan.trial_time_s * (1 - 1e-9)) return;  // not finer than what ran
    std::vector<size_t> leaders;
    for (size_t k = 0; k < result.ranking.size() && leaders.size() < kRefineLeaders; ++k) {
      const RankedConfig& rc = result.ranking[k];
      if (rc.median.reached && rc.median.time_s <= 2.0 * interval * (1 + 1e-9)) leaders.push_back(k);
    }
    const size_t top = std::min(leaders.size(), static_cast<size_t>(spec.race_top));
    // The plan at R': its schedules (steps, evaluation interval) follow R' (Runner::schedule_probe).
    TunePlan fine = plan_at(plan, fine_r);
    if (spec.trials > 0)
      fine.spec.trials = static_cast<int64_t>(leaders.size() + top * static_cast<size_t>(spec.race_seeds - 1));
    // Stored trials answer only requests of the same key (resume); earlier trials at coarser
    // schedules must not answer them (no by_config).
    Runner fine_runner = runner_at(fine, runner);
    auto run = [&](const std::vector<size_t>& which, int64_t seeds) {
      std::vector<TrialRequest> reqs;
      std::vector<size_t> of;
      for (int64_t sd = 0; sd < seeds; ++sd)
        for (size_t k : which) {
          reqs.push_back({result.ranking[k].candidate, spec.base.seed + static_cast<uint64_t>(sd), fine_r, "refine"});
          of.push_back(k);
        }
      std::map<size_t, std::vector<TrialRow>> got;
      const auto rows = fine_runner.trials(reqs, false);
      for (size_t q = 0; q < reqs.size(); ++q)
        if (rows[q]) got[of[q]].push_back(*rows[q]);
      return got;
    };
    // Stage 1: every leader once; stage 2: the best `top` of them over the race's seeds.
    const auto once = run(leaders, 1);
    const auto better = [](const RankedConfig& a, const RankedConfig& b) {
      return tune_objective_better(a.median, b.median);
    };
    // Each leader's single trial, by its index in the ranking; the best `top` are raced.
    std::vector<std::pair<size_t, RankedConfig>> single;
    for (const auto& [k, trials] : once)
      single.emplace_back(k, ranked_make(plan, result.ranking[k].candidate, trials, fine_r, false));
    std::stable_sort(single.begin(), single.end(),
                     [&](const auto& a, const auto& b) { return better(a.second, b.second); });
    std::vector<size_t> raced;
    for (size_t i = 0; i < single.size() && raced.size() < top; ++i) raced.push_back(single[i].first);
    const auto seeded = run(raced, spec.race_seeds);
    runner_merge(runner, fine_runner);
    if (once.size() < leaders.size() || seeded.size() < raced.size()) {
      result.notes.push_back(fmt::format("resolution: the budget did not allow re-measuring the {} leaders at R = {}",
                                         leaders.size(), fmt_s(fine_r)));
      return;
    }
    // The raced leaders by their medians, then the other leaders by their single trial (already
    // in order), then the rest as they stood.
    std::vector<RankedConfig> first, rest;
    for (size_t k = 0; k < result.ranking.size(); ++k) {
      if (auto it = seeded.find(k); it != seeded.end())
        first.push_back(ranked_make(plan, result.ranking[k].candidate, it->second, fine_r, true));
      else if (once.find(k) == once.end())
        rest.push_back(std::move(result.ranking[k]));
    }
    std::stable_sort(first.begin(), first.end(), better);
    result.ranking = std::move(first);
    for (auto& [k, rc] : single)
      if (seeded.find(k) == seeded.end()) result.ranking.push_back(std::move(rc));
    for (RankedConfig& rc : rest) result.ranking.push_back(std::move(rc));
    result.notes.push_back(fmt::format(
        "resolution: {} configurations reached the target within two evaluations ({:.3g} s apart); re-measured at "
        "R = {} (each once, the best {} over {} seed{})",
        leaders.size(), interval, fmt_s(fine_r), raced.size(), spec.race_seeds, spec.race_seeds == 1 ? "" : "s"));
    verdict_make(plan, result);
  }
}

// R from a pilot when the user gave only --trials (neither --trial-time nor --budget): one
// configuration of the space (the middle one of its enumeration, base seed) runs at the
// default R; when it reaches the target at its first evaluation (its time only bounded from
// above), it runs again at R' = 10 x that time, up to kPilotRounds runs. R is then
// kPilotFactor x its time to the target (a configuration more than that much slower than it
// cannot be the winner), at most the default. The pilot's trials come on top of --trials.
// When it does not reach the target, R stays the default. Returns the plan to search with.
constexpr int kPilotRounds = 3;
constexpr double kPilotFactor = 10;

TunePlan pilot_trial_time(const TunePlan& plan, Runner& runner, TuneResult& result) {
  const TuneSpec& spec = plan.spec;
  if (spec.trial_time_s > 0 || spec.budget_s > 0 || plan.space.feasible.empty()) return plan;
  const Candidate& pilot = plan.space.feasible[plan.space.feasible.size() / 2];
  const std::string key = candidate_key(pilot);
  auto with_r = [&](double r) {
    TunePlan p = plan_at(plan, r);
    p.spec.trials = kPilotRounds;
    return p;
  };
  double r = plan.trial_time_s;
  std::optional<TrialRow> last;
  std::vector<std::string> runs;
  for (int round = 0; round < kPilotRounds; ++round) {
    const TunePlan at = with_r(r);
    Runner pilot_runner = runner_at(at, runner);
    const auto rows = pilot_runner.trials({{pilot, spec.base.seed, r, "pilot"}}, false);
    runner_merge(runner, pilot_runner);
    if (!rows[0]) break;
    last = rows[0];
    const auto sched = pilot_runner.steps_cache.find(key);
    const int64_t every = sched == pilot_runner.steps_cache.end() ? 0 : sched->second.second;
    runs.push_back(last->reached ? fmt::format("{} at R = {} (step {})", fmt_s(last->time_s), fmt_s(r), last->steps)
                                 : fmt::format("not reached at R = {} ({})", fmt_s(r), last->stop_reason));
    if (!last->reached || every <= 0 || last->steps > every) break;  // resolved (or not reached)
    const double finer = std::max(last->time_s * kPilotFactor, 1e-6);
    if (finer >= r * (1 - 1e-9)) break;
    r = finer;
  }
  if (!last || !last->reached) {
    result.notes.push_back(fmt::format("pilot {}: {}; R stays {}", key,
                                       runs.empty() ? std::string("not run") : fmt::format("{}", fmt::join(runs, "; ")),
                                       fmt_s(plan.trial_time_s)));
    return plan;
  }
  const double chosen = std::min(plan.trial_time_s, std::max(last->time_s * kPilotFactor, 1e-6));
  TunePlan out = with_r(chosen);
  out.spec.trials = plan.spec.trials;
  result.notes.push_back(fmt::format("pilot {}: target reached in {}; R = {:.0f} x that = {}", key,
                                     fmt::join(runs, ", then "), kPilotFactor, fmt_s(chosen)));
  return out;
}

}  // namespace dsgd::tune_detail
