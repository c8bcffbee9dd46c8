// See replay.hpp.
#include "tuner/replay.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <set>

#include "core/errors.hpp"
#include "core/stats.hpp"
#include "results/tune_store.hpp"
#include "tuner/hyperband.hpp"
#include "tuner/recommend.hpp"

namespace dsgd {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
const std::vector<std::string> kStrategies = {"tuner", "random", "hyperband", "prior", "tuner-prior", "exhaustive"};

double truth_time(const StoredGrid& grid, const std::string& key, uint64_t seed) {
  auto it = grid.trials.find({key, seed});
  if (it == grid.trials.end() || !it->second.trial.reached) return kInf;
  return it->second.trial.time_s;
}

// The recommendation and cost of one strategy in one repetition.
struct StrategyOutcome {
  std::string recommended;
  double cost_s = 0;
  std::set<uint64_t> used;  // grid seeds evaluated
};

// recommend's search; with `prior`, as `recommend --prior on` (its design, the GP's mean, the
// probe's cost charged first).
StrategyOutcome strategy_tuner(const StoredGrid& grid, const TunePlan& base, uint64_t strategy_seed,
                               const std::vector<uint64_t>& search_seeds, const TunePrior* prior) {
  TunePlan plan = base;
  plan.spec.base.seed = strategy_seed;
  ReplayEvaluator ev(grid, plan.target, strategy_seed, search_seeds);
  TuneResult result;
  if (prior) {
    plan.prior_log_time = prior->log_time;
    result.used_s = prior->probe.cost_s;
  }
  tune_search(plan, ev, {}, nullptr, result);
  StrategyOutcome out;
  out.cost_s = result.used_s;
  out.used = ev.used_seeds();
  if (!result.ranking.empty() && result.ranking.front().median.reached) out.recommended = result.ranking.front().key;
  return out;
}

// The prior's argmin: no trial; its cost is the probe's.
StrategyOutcome strategy_prior(const TunePlan& plan, const TunePrior& prior) {
  StrategyOutcome out;
  out.recommended = candidate_key(plan.space.feasible.at(prior.argmin));
  out.cost_s = prior.probe.cost_s;
  return out;
}

StrategyOutcome strategy_random(const StoredGrid& grid, const TunePlan& plan, uint64_t strategy_seed,
                                const std::vector<uint64_t>& search_seeds) {
  const std::vector<Candidate>& all = plan.space.feasible;
  std::vector<size_t> order(all.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::mt19937_64 rng(strategy_seed);
  std::shuffle(order.begin(), order.end(), rng);
  ReplayEvaluator ev(grid, plan.target, strategy_seed, search_seeds);
  const double R = plan.trial_time_s;
  StrategyOutcome out;
  TrialRow best;
  bool any = false;
  for (size_t i : order) {
    // As the live runner: a trial starts only when its full budget still fits.
    if (out.cost_s + R > plan.spec.budget_s * (1 + 1e-9)) break;
    const TrialRow t = ev.evaluate(all[i], strategy_seed, R, "random");
    out.cost_s += trial_cost_s(t);
    if (!any || objective_better(trial_score(t), trial_score(best))) {
      best = t;
      any = true;
    }
  }
  if (any && best.reached) out.recommended = best.config_key;
  out.used = ev.used_seeds();
  return out;
}

// Every configuration on every search seed at R; the best median (the censored order over the
// seeds' trials). Not a strategy anyone would run: the floor of the regret a search over these
// seeds can reach, at the cost of all of them.
StrategyOutcome strategy_exhaustive(const StoredGrid& grid, const TunePlan& plan, uint64_t strategy_seed,
                                    const std::vector<uint64_t>& search_seeds) {
  ReplayEvaluator ev(grid, plan.target, strategy_seed, search_seeds);
  const double R = plan.trial_time_s;
  StrategyOutcome out;
  TrialRow best;
  bool any = false;
  for (const Candidate& c : plan.space.feasible) {
    std::vector<TrialRow> trials;
    for (size_t k = 0; k < search_seeds.size(); ++k) {
      trials.push_back(ev.evaluate(c, strategy_seed + k, R, "exhaustive"));
      out.cost_s += trial_cost_s(trials.back());
    }
    const TrialRow median = trials_median(trials);  // the tuner's median (of an even count the worse middle one)
    if (!any || objective_better(trial_score(median), trial_score(best))) {
      best = median;
      any = true;
    }
  }
  if (any && best.reached) out.recommended = best.config_key;
  out.used = ev.used_seeds();
  return out;
}

StrategyOutcome strategy_hyperband(const StoredGrid& grid, const TunePlan& base, uint64_t strategy_seed,
                                   const std::vector<uint64_t>& search_seeds) {
  TunePlan plan = base;
  plan.spec.base.seed = strategy_seed;
  ReplayEvaluator ev(grid, plan.target, strategy_seed, search_seeds);
  const HyperbandOutcome h = hyperband_search(plan, ev, strategy_seed);
  return {h.recommended, h.cost_s, ev.used_seeds()};
}

}  // namespace

StoredGrid replay_grid_load(const Store& store, int64_t session_id) {
  const TuneSessionRow s = tune_session_get(store, session_id);
  if (s.kind != "grid")
    DSGD_THROW(InputError, "make one with `dsgd-tune grid ...`, or list them with `dsgd-tune sessions`",
               "session {} in '{}' is a {} session, not a grid", session_id, store.path(), s.kind);
  const auto j = nlohmann::json::parse(s.spec_json);
  StoredGrid g;
  g.session_id = session_id;
  g.spec = tune_spec_from_json(j);
  g.max_trial_steps = j.value("max-trial-steps", int64_t(20000));
  g.trial_time_s = g.spec.trial_time_s;
  std::set<uint64_t> seeds;
  for (const TrialRow& t : tune_trials_get(store, session_id)) {
    GridTrial gt;
    gt.trial = t;
    if (t.run_id > 0) gt.evals = store.evals_get(t.run_id);
    seeds.insert(t.seed);
    g.total_cost_s += trial_cost_s(t);
    g.trials[{t.config_key, t.seed}] = std::move(gt);
  }
  if (g.trials.empty())
    DSGD_THROW(InputError, fmt::format("run it: dsgd-tune grid --resume {} --db {}", session_id, store.path()),
               "grid session {} in '{}' has no trials", session_id, store.path());
  g.seeds.assign(seeds.begin(), seeds.end());
  return g;
}

TrialRow replay_trial(const GridTrial& g, const Target& target, double budget) {
  TrialRow row = g.trial;
  row.budget_s = budget;
  if (g.trial.status == TrialStatus::trial_failed) return row;
  // The live trial's callback (tuner/trial.cpp), evaluation by evaluation.
  bool any_progress = false;
  row.progress = -1e30;
  for (const EvalRow& e : g.evals) {
    const double metric = target.metric == TargetMetric::target_test_acc ? e.test_acc : -e.test_loss;
    if (std::isfinite(metric) && (!any_progress || metric > row.progress)) {
      row.progress = metric;
      any_progress = true;
    }
    row.steps = e.step;
    row.time_s = e.time_s;
    if (target_reached(target, e)) {
      row.reached = true;
      row.stop_kind = StopKind::stop_target;
      row.stop_reason = fmt::format("target: replayed, reached at {:.4g} s (step {})", e.time_s, e.step);
      return row;
    }
    if (e.step > 0 && (!std::isfinite(e.train_loss) || !std::isfinite(e.test_loss))) {
      row.reached = false;
      row.stop_kind = StopKind::stop_diverged;
      row.stop_reason = fmt::format("diverged: non-finite loss at step {}", e.step);
      return row;
    }
    if (e.time_s >= budget) {
      row.reached = false;
      row.stop_kind = StopKind::stop_budget;
      row.stop_reason =
          fmt::format("budget: replayed, {:.4g} s reached at {:.4g} s (step {})", budget, e.time_s, e.step);
      return row;
    }
  }
  // The grid's trial stopped before this budget for a reason of its own (the last step, a
  // divergence the trainer found): a trial at this budget stops there too.
  TrialRow r = g.trial;
  r.budget_s = budget;
  return r;
}

TrialRow ReplayEvaluator::evaluate(const Candidate& c, uint64_t seed, double budget, const std::string& phase) {
  const std::string key = candidate_key(c);
  const uint64_t offset = seed >= seed0_ ? seed - seed0_ : 0;
  const uint64_t grid_seed = search_seeds_[offset % search_seeds_.size()];
  used_.insert(grid_seed);
  auto it = grid_.trials.find({key, grid_seed});
  if (it == grid_.trials.end())
    DSGD_THROW(Error, "rerun or resume the grid so it holds every configuration",
               "grid session {} has no trial of {} with seed {}", grid_.session_id, key, grid_seed);
  if (budget > grid_.trial_time_s * (1 + 1e-9))
    DSGD_THROW(Error, "", "a replayed trial cannot run past the grid's trial time ({} s > {} s)", budget,
               grid_.trial_time_s);
  TrialRow row = replay_trial(it->second, target_, budget);
  row.seed = seed;
  row.phase = phase;
  row.trial_key = trial_key(key, seed, budget);
  return row;
}

void bench_options_validate(const BenchOptions& o) {
  if (o.reps < 1) DSGD_THROW(InputError, "pass e.g. --reps 20", "--reps must be at least 1 (got {})", o.reps);
  if (o.strategies.empty()) DSGD_THROW(InputError, "pass e.g. --strategies tuner,random", "--strategies is empty");
  for (const std::string& s : o.strategies)
    if (std::find(kStrategies.begin(), kStrategies.end(), s) == kStrategies.end())
      DSGD_THROW(InputError, fmt::format("pick from: {}", fmt::join(kStrategies, ", ")),
                 "--strategies: unknown strategy '{}'", s);
  if (o.budget_fractions.empty())
    DSGD_THROW(InputError, "pass e.g. --budget-fraction 0.1", "--budget-fraction is empty");
  for (double f : o.budget_fractions)
    if (!(f > 0 && f <= 1))
      DSGD_THROW(InputError, "pass a share of the grid's cost in (0, 1], e.g. --budget-fraction 0.1",
                 "--budget-fraction {} is outside (0, 1]", f);
}

bool bench_needs_prior(const BenchOptions& o) {
  for (const std::string& s : o.strategies)
    if (s == "prior" || s == "tuner-prior") return true;
  return false;
}

namespace {

TunePlan bench_plan(const StoredGrid& grid, double budget_s) {
  TuneSpec spec = grid.spec;
  spec.budget_s = budget_s;
  spec.trials = 0;
  spec.trial_time_s = grid.trial_time_s;
  // The race's seeds: recommend's default, at most the search seeds (every grid seed but the
  // held-out one).
  const size_t n_seeds = grid.seeds.size();
  spec.race_seeds = std::min<int64_t>(spec.race_seeds, static_cast<int64_t>(n_seeds > 1 ? n_seeds - 1 : 1));
  return tune_plan(spec, grid.max_trial_steps, false);  // a replay runs nothing: no memory refusal
}

// The grid's best configuration by its median time over all seeds: of an even count the
// worse middle one, as `dsgd-tune grid`'s table and the tuner's ranking take it.
void grid_best_find(const StoredGrid& grid, const std::set<std::string>& keys, BenchReport& report) {
  for (const std::string& key : keys) {
    std::vector<double> times;
    for (uint64_t s : grid.seeds) times.push_back(truth_time(grid, key, s));
    std::sort(times.begin(), times.end());
    const double med = times.empty() ? kInf : times[times.size() / 2];
    if (std::isfinite(med) && (report.grid_best.empty() || med < report.grid_best_time_s)) {
      report.grid_best = key;
      report.grid_best_time_s = med;
    }
  }
}

// The grid's best per seed (into the report); returns its time by seed.
std::map<uint64_t, double> best_per_seed(const StoredGrid& grid, const std::set<std::string>& keys,
                                         BenchReport& report) {
  std::map<uint64_t, double> best_at;
  for (uint64_t s : grid.seeds) {
    std::string arg;
    double best = kInf;
    for (const std::string& key : keys) {
      const double t = truth_time(grid, key, s);
      if (t < best) {
        best = t;
        arg = key;
      }
    }
    best_at[s] = best;
    report.best_per_seed.push_back({s, {arg, best}});
  }
  return best_at;
}

// The prior's best configuration, its notes and its predicted time per configuration.
void prior_report(const StoredGrid& grid, const TunePrior& prior, BenchReport& report) {
  const TunePlan plan = bench_plan(grid, grid.total_cost_s);
  report.prior_best = candidate_key(plan.space.feasible.at(prior.argmin));
  report.prior_notes = prior_describe(plan, prior);
  for (size_t i = 0; i < plan.space.feasible.size() && i < prior.predictions.size(); ++i)
    report.prior_times.push_back({candidate_key(plan.space.feasible[i]), prior.predictions[i].time_s});
}

// Repetition r of `row`'s strategy: searches on every seed but the held-out one (all of them
// when there is one), then the regret of its recommendation on the seeds it did not evaluate.
void bench_rep_run(const StoredGrid& grid, const TunePlan& plan, const TunePrior* prior, int64_t r,
                   std::map<uint64_t, double>& best_at, BenchRow& row) {
  const std::string& strategy = row.strategy;
  const size_t n_seeds = grid.seeds.size();
  BenchRep rep;
  const size_t held = static_cast<size_t>(r) % n_seeds;
  rep.held_out_seed = grid.seeds[held];
  std::vector<uint64_t> search;
  for (size_t k = 0; k < n_seeds; ++k)
    if (k != held || n_seeds == 1) search.push_back(grid.seeds[k]);
  const uint64_t strategy_seed = 1000003ULL * static_cast<uint64_t>(r + 1) + grid.spec.base.seed;
  StrategyOutcome out;
  if (strategy == "tuner" || strategy == "tuner-prior")
    out = strategy_tuner(grid, plan, strategy_seed, search, strategy == "tuner-prior" ? prior : nullptr);
  else if (strategy == "prior")
    out = strategy_prior(plan, *prior);
  else if (strategy == "random")
    out = strategy_random(grid, plan, strategy_seed, search);
  else if (strategy == "exhaustive")
    out = strategy_exhaustive(grid, plan, strategy_seed, search);
  else
    out = strategy_hyperband(grid, plan, strategy_seed, search);
  rep.recommended = out.recommended;
  rep.cost_share = grid.total_cost_s > 0 ? out.cost_s / grid.total_cost_s : 0;
  // Regret on every grid seed the strategy did not evaluate (the held-out one among them).
  for (uint64_t s : grid.seeds)
    if (s == rep.held_out_seed || !out.used.count(s)) rep.regret_seeds.push_back(s);
  if (out.recommended.empty()) {
    ++row.no_recommendation;
    rep.regret = kInf;
  } else {
    double sum = 0;
    for (uint64_t s : rep.regret_seeds) sum += truth_time(grid, out.recommended, s) / best_at[s] - 1;
    rep.regret = sum / static_cast<double>(rep.regret_seeds.size());
  }
  if (rep.regret <= 0.05) ++row.within_5pct;
  row.reps.push_back(rep);
}

// The quartiles of the row's regrets and cost shares.
void row_quartiles(BenchRow& row) {
  std::vector<double> regrets, costs;
  for (const BenchRep& rep : row.reps) {
    regrets.push_back(rep.regret);
    costs.push_back(rep.cost_share);
  }
  row.regret_q25 = stats_quantile(regrets, 0.25);
  row.regret_median = stats_quantile(regrets, 0.5);
  row.regret_q75 = stats_quantile(regrets, 0.75);
  row.cost_q25 = stats_quantile(costs, 0.25);
  row.cost_median = stats_quantile(costs, 0.5);
  row.cost_q75 = stats_quantile(costs, 0.75);
}

}  // namespace

TunePrior bench_prior_build(const StoredGrid& grid, Store& read) {
  const TunePlan plan = bench_plan(grid, grid.total_cost_s);
  const uint64_t seed = grid.seeds.empty() ? grid.spec.base.seed : grid.seeds.back() + 1;
  return prior_build(plan, read, prior_probe_run(plan, read, seed));
}

BenchReport bench_run(const StoredGrid& grid, const BenchOptions& o, const TunePrior* prior) {
  bench_options_validate(o);
  if (bench_needs_prior(o) && !prior) DSGD_THROW(Error, "this is a bug", "bench_run: a prior strategy without a prior");
  BenchReport report;
  // The grid's best by median over all seeds, and per seed.
  std::set<std::string> keys;
  for (const auto& [k, t] : grid.trials) keys.insert(k.first);
  grid_best_find(grid, keys, report);
  std::map<uint64_t, double> best_at = best_per_seed(grid, keys, report);
  if (prior) prior_report(grid, *prior, report);
  for (double fraction : o.budget_fractions) {
    const TunePlan plan = bench_plan(grid, fraction * grid.total_cost_s);
    if (prior && prior->log_time.size() != plan.space.feasible.size())
      DSGD_THROW(Error, "this is a bug", "bench_run: the prior has {} candidates, the space {}", prior->log_time.size(),
                 plan.space.feasible.size());
    for (const std::string& strategy : o.strategies) {
      BenchRow row;
      row.strategy = strategy;
      row.budget_fraction = fraction;
      for (int64_t r = 0; r < o.reps; ++r) bench_rep_run(grid, plan, prior, r, best_at, row);
      row_quartiles(row);
      report.rows.push_back(std::move(row));
    }
  }
  return report;
}

nlohmann::json bench_report_json(const StoredGrid& grid, const BenchReport& r) {
  auto num = [](double x) { return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json("inf"); };
  nlohmann::json rows = nlohmann::json::array();
  for (const BenchRow& b : r.rows) {
    nlohmann::json reps = nlohmann::json::array();
    for (const BenchRep& rep : b.reps)
      reps.push_back({{"recommended", rep.recommended},
                      {"regret", num(rep.regret)},
                      {"cost_share", rep.cost_share},
                      {"held_out_seed", rep.held_out_seed},
                      {"regret_seeds", rep.regret_seeds}});
    rows.push_back(
        {{"strategy", b.strategy},
         {"budget_fraction", b.budget_fraction},
         {"regret", {{"q25", num(b.regret_q25)}, {"median", num(b.regret_median)}, {"q75", num(b.regret_q75)}}},
         {"cost_share", {{"q25", b.cost_q25}, {"median", b.cost_median}, {"q75", b.cost_q75}}},
         {"within_5pct", b.within_5pct},
         {"no_recommendation", b.no_recommendation},
         {"reps", reps}});
  }
  nlohmann::json best = nlohmann::json::array();
  for (const auto& [seed, kb] : r.best_per_seed)
    best.push_back({{"seed", seed}, {"config", kb.first}, {"time_s", num(kb.second)}});
  nlohmann::json out = {{"grid", grid.session_id},
                        {"configurations", grid.trials.size() / std::max<size_t>(1, grid.seeds.size())},
                        {"seeds", grid.seeds},
                        {"trial_time_s", grid.trial_time_s},
                        {"total_cost_s", grid.total_cost_s},
                        {"grid_best", r.grid_best},
                        {"grid_best_median_s", r.grid_best_time_s},
                        {"best_per_seed", best},
                        {"strategies", rows}};
  if (!r.prior_best.empty()) {
    nlohmann::json times = nlohmann::json::array();
    for (const auto& [key, t] : r.prior_times) times.push_back({{"config", key}, {"time_s", num(t)}});
    out["prior"] = {{"recommended", r.prior_best}, {"notes", r.prior_notes}, {"predicted", times}};
  }
  return out;
}

}  // namespace dsgd
