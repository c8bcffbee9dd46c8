// The replay benchmark of `dsgd-tune bench` (tuner/replay.hpp) on a synthetic grid: a trial cut
// at a budget as the live callback would cut it, the regret and cost arithmetic, a strategy
// given the whole budget finding the best, the exhaustive floor, and bad input (unknown
// session, a session that is not a grid, reps 0, an unknown strategy, a budget fraction outside
// (0, 1]). Also the search itself against the replay (tuner/recommend.hpp tune_search): its
// trials capped at the leaders' margin, the race of the leaders only, further passes on what
// the first one left.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <set>

#include "core/errors.hpp"
#include "results/store.hpp"
#include "results/target.hpp"
#include "results/tune_store.hpp"
#include "tuner/hyperband.hpp"
#include "tuner/prior.hpp"
#include "tuner/recommend.hpp"
#include "tuner/replay.hpp"

namespace dsgd {
namespace {

constexpr double kR = 0.3;       // the grid's trial time
constexpr double kEvery = 0.01;  // its evaluation interval (virtual seconds)

TuneSpec replay_spec() {
  TuneSpec s;
  s.base.workers = 4;
  s.base.backend = "sim";
  s.base.dataset = "synthetic:n=200,d=8,classes=2,test=50";
  s.base.target = "acc=0.8";
  s.base.seed = 1;
  s.algos = {"ssgd", "localsgd"};
  s.periods = {2, 4};
  s.batches = {16, 32};
  s.lr_scalings = {"linear"};
  s.trial_time_s = kR;
  return s;
}

// A grid trial whose accuracy rises linearly to 0.8 at `reach_s` (never, when reach_s > R: it
// tops out below the target), evaluated every kEvery up to the target or the first time >= R.
GridTrial synthetic_trial(const std::string& key, uint64_t seed, double reach_s) {
  GridTrial g;
  TrialRow& t = g.trial;
  t.config_key = key;
  t.seed = seed;
  t.budget_s = kR;
  t.status = TrialStatus::trial_completed;
  t.run_id = 1;
  for (int k = 0;; ++k) {
    EvalRow e;
    e.step = 10 * k;
    e.time_s = k * kEvery;
    e.train_loss = e.test_loss = 1.0;
    e.test_acc = reach_s <= kR ? 0.8 * (e.time_s + 1e-9) / reach_s : 0.7 * e.time_s / kR;
    g.evals.push_back(e);
    if (e.test_acc >= 0.8) {
      t.reached = true;
      t.time_s = e.time_s;
      t.stop_kind = StopKind::stop_target;
      t.stop_reason = "target: reached";
      break;
    }
    if (e.time_s >= kR - 1e-12) {
      t.time_s = e.time_s;
      t.stop_kind = StopKind::stop_budget;
      t.stop_reason = "budget: reached";
      break;
    }
  }
  t.progress = g.evals.back().test_acc;
  return g;
}

using ReachTimes = std::map<std::string, std::vector<double>>;  // configuration -> time per seed

// A grid of these times to the target (the synthetic space of replay_spec).
StoredGrid synthetic_grid(const std::vector<uint64_t>& seeds, const ReachTimes& reach) {
  StoredGrid g;
  g.session_id = 7;
  g.spec = replay_spec();
  g.max_trial_steps = 20000;
  g.trial_time_s = kR;
  g.seeds = seeds;
  for (const auto& [key, times] : reach)
    for (size_t s = 0; s < seeds.size(); ++s) {
      GridTrial t = synthetic_trial(key, seeds[s], times[s]);
      g.total_cost_s += t.trial.time_s;
      g.trials[{key, seeds[s]}] = t;
    }
  return g;
}

// Times to the target per configuration and seed: A is best on seed 1, B on seed 2.
StoredGrid synthetic_grid(const std::vector<uint64_t>& seeds) {
  const ReachTimes reach = {
      {"localsgd H=4 b=16 lr=linear", {0.10, 0.12}},  // A
      {"localsgd H=4 b=32 lr=linear", {0.11, 0.11}},  // B
      {"localsgd H=2 b=16 lr=linear", {0.20, 0.20}},
      {"localsgd H=2 b=32 lr=linear", {0.25, 0.25}},
      {"ssgd b=16 lr=linear", {9, 9}},  // never
      {"ssgd b=32 lr=linear", {9, 9}},
  };
  return synthetic_grid(seeds, reach);
}

TEST(TunerReplay, CutsTheCurveAtTheBudgetAsALiveTrialWould) {
  const Target target = *target_parse("acc=0.8");
  const GridTrial g = synthetic_trial("localsgd H=2 b=16 lr=linear", 1, 0.20);
  const TrialRow full = replay_trial(g, target, kR);
  EXPECT_TRUE(full.reached);
  EXPECT_NEAR(full.time_s, 0.20, 1e-12);
  // At 0.1 s: censored at the first evaluation at or past 0.1 s, with its accuracy as progress.
  const TrialRow cut = replay_trial(g, target, 0.1);
  EXPECT_FALSE(cut.reached);
  EXPECT_NEAR(cut.time_s, 0.10, 1e-12);
  EXPECT_NEAR(cut.progress, 0.4, 1e-6);
  EXPECT_NEAR(trial_cost_s(cut), 0.10, 1e-12);
  // Between evaluations: the next one stops it.
  EXPECT_NEAR(replay_trial(g, target, 0.095).time_s, 0.10, 1e-12);
  // Never reached: censored at R with the cost of the whole trial.
  const TrialRow never = replay_trial(synthetic_trial("ssgd b=16 lr=linear", 1, 9), target, kR);
  EXPECT_FALSE(never.reached);
  EXPECT_NEAR(never.time_s, kR, 1e-12);
}

TEST(TunerReplay, RegretAndCostArithmeticWithAHeldOutSeed) {
  const StoredGrid grid = synthetic_grid({1, 2});
  BenchOptions o;
  o.reps = 2;
  o.strategies = {"random"};
  o.budget_fractions = {1.0};  // random search then tries every configuration on the search seed
  const BenchReport r = bench_run(grid, o);
  ASSERT_EQ(r.rows.size(), 1u);
  const BenchRow& row = r.rows[0];
  ASSERT_EQ(row.reps.size(), 2u);
  // Rep 0 holds seed 1 out and searches on seed 2, whose best is B (0.11): on seed 1 B takes
  // 0.11 against A's 0.10. Rep 1 the other way: A, 0.12 against B's 0.11 on seed 2.
  EXPECT_EQ(row.reps[0].held_out_seed, 1u);
  EXPECT_EQ(row.reps[0].recommended, "localsgd H=4 b=32 lr=linear");
  EXPECT_NEAR(row.reps[0].regret, 0.11 / 0.10 - 1, 1e-9);
  EXPECT_EQ(row.reps[1].recommended, "localsgd H=4 b=16 lr=linear");
  EXPECT_NEAR(row.reps[1].regret, 0.12 / 0.11 - 1, 1e-9);
  // Cost: one seed's trials of the two; the seeds cost the same but for A (0.10 vs 0.12).
  const double seed1 = 0.10 + 0.11 + 0.20 + 0.25 + 2 * kR, seed2 = seed1 + 0.02;
  EXPECT_NEAR(grid.total_cost_s, seed1 + seed2, 1e-9);
  EXPECT_NEAR(row.reps[0].cost_share, seed2 / (seed1 + seed2), 1e-9);
  EXPECT_NEAR(row.reps[1].cost_share, seed1 / (seed1 + seed2), 1e-9);
  EXPECT_NEAR(row.regret_median, ((0.11 / 0.10 - 1) + (0.12 / 0.11 - 1)) / 2, 1e-9);
  EXPECT_EQ(row.within_5pct, 0);
  // The grid's best by the median over seeds, of two the worse (as the grid's table takes
  // it): A's 0.12 (0.10, 0.12), B's 0.11 (0.11, 0.11).
  EXPECT_EQ(r.grid_best, "localsgd H=4 b=32 lr=linear");
  EXPECT_NEAR(r.grid_best_time_s, 0.11, 1e-12);
}

TEST(TunerReplay, StrategiesGivenTheWholeBudgetFindTheBest) {
  const StoredGrid grid = synthetic_grid({1});  // one seed: searched and scored on the same
  BenchOptions o;
  o.reps = 3;
  o.strategies = {"tuner"};  // (random search starts a trial only while a full R fits: not all of them)
  o.budget_fractions = {1.0};
  const BenchReport r = bench_run(grid, o);
  for (const BenchRow& row : r.rows) {
    SCOPED_TRACE(row.strategy);
    EXPECT_EQ(row.no_recommendation, 0);
    for (const BenchRep& rep : row.reps) {
      EXPECT_EQ(rep.recommended, "localsgd H=4 b=16 lr=linear");
      EXPECT_NEAR(rep.regret, 0, 1e-12);
      EXPECT_GT(rep.cost_share, 0);
      EXPECT_LE(rep.cost_share, 1 + 1e-9);
    }
  }
  // With a tenth of the grid's time random search affords no full trial of R beyond its budget.
  o.budget_fractions = {0.1};
  o.strategies = {"random"};
  const BenchReport tenth = bench_run(grid, o);  // named: a range-for over a temporary's member dangles
  for (const BenchRep& rep : tenth.rows[0].reps) EXPECT_LE(rep.cost_share, 0.1 + 1e-9);
}

TEST(TunerReplay, ExhaustiveTakesTheBestMedianOfTheSearchSeedsAtTheirWholeCost) {
  const StoredGrid grid = synthetic_grid({1, 2});
  BenchOptions o;
  o.reps = 2;
  o.strategies = {"exhaustive"};
  o.budget_fractions = {0.1};  // ignored: it runs everything on the search seeds
  const BenchReport r = bench_run(grid, o);
  const BenchRow& row = r.rows.at(0);
  // One search seed per repetition: its best, scored on the held-out seed, as random search
  // given the whole budget; its cost is that seed's whole share.
  const double seed1 = 0.10 + 0.11 + 0.20 + 0.25 + 2 * kR, seed2 = seed1 + 0.02;
  EXPECT_EQ(row.reps.at(0).recommended, "localsgd H=4 b=32 lr=linear");
  EXPECT_NEAR(row.reps[0].regret, 0.11 / 0.10 - 1, 1e-9);
  EXPECT_NEAR(row.reps[0].cost_share, seed2 / (seed1 + seed2), 1e-9);
  EXPECT_EQ(row.reps.at(1).recommended, "localsgd H=4 b=16 lr=linear");
  EXPECT_NEAR(row.reps[1].cost_share, seed1 / (seed1 + seed2), 1e-9);
}

// The search's requests, answered by the replay.
class RecordingEvaluator : public TrialEvaluator {
 public:
  struct Ask {
    std::string key, phase;
    uint64_t seed = 0;
    double budget = 0;
    TrialRow trial;
  };
  explicit RecordingEvaluator(ReplayEvaluator& inner) : inner_(inner) {}
  TrialRow evaluate(const Candidate& c, uint64_t seed, double budget, const std::string& phase) override {
    TrialRow t = inner_.evaluate(c, seed, budget, phase);
    asked.push_back({candidate_key(c), phase, seed, budget, t});
    return t;
  }
  std::vector<Ask> asked;

 private:
  ReplayEvaluator& inner_;
};

TunePlan search_plan(const StoredGrid& grid, double budget_share) {
  TuneSpec spec = grid.spec;
  spec.budget_s = budget_share * grid.total_cost_s;
  spec.race_seeds = 2;
  return tune_plan(spec, grid.max_trial_steps);
}

TEST(TunerSearch, LaterRungsAreCappedAtTheLeadersMarginAndOnlyTheLeadersAreRaced) {
  const StoredGrid grid = synthetic_grid({1, 2});
  const TunePlan plan = search_plan(grid, 1.0);  // every configuration in the design
  ASSERT_EQ(plan.initial_design, 6u);
  ReplayEvaluator replay(grid, plan.target, plan.spec.base.seed, {1, 2});
  RecordingEvaluator rec(replay);
  TuneResult result;
  tune_search(plan, rec, {}, nullptr, result);
  // Rung 0 (R/9 = 0.033 s): nobody reaches 0.8. Rung 1 (0.1 s): A reaches it at 0.10. From then
  // on no trial of seed 1 runs past 1.5 x 0.10: rung 2 is capped there, not at R.
  double best = std::numeric_limits<double>::infinity();
  std::string rung;
  double rung_best = best;  // the incumbent when the current rung began
  int capped = 0;
  for (const auto& a : rec.asked) {
    SCOPED_TRACE(a.phase + " " + a.key);
    if (a.phase != rung) {
      rung = a.phase;
      rung_best = best;
    }
    if (a.phase != "race") {
      EXPECT_EQ(a.seed, 1u);
      if (std::isfinite(rung_best)) {
        EXPECT_LE(a.budget, 1.5 * rung_best * (1 + 1e-9));
        ++capped;
      }
    }
    if (a.trial.reached) best = std::min(best, a.trial.time_s);
  }
  EXPECT_GT(capped, 0);
  for (const auto& a : rec.asked) EXPECT_LT(a.budget, kR);  // nothing needed the full R
  // The race: A (0.10) and B (0.11), the only ones within 1.5 x the best, on the second seed,
  // capped at 2 x the slower one's first time.
  std::set<std::string> raced;
  for (const auto& a : rec.asked)
    if (a.phase == "race") {
      EXPECT_EQ(a.seed, 2u);
      EXPECT_NEAR(a.budget, 2 * 0.11, 1e-9);
      raced.insert(a.key);
    }
  EXPECT_EQ(raced, (std::set<std::string>{"localsgd H=4 b=16 lr=linear", "localsgd H=4 b=32 lr=linear"}));
  // B's median over the two seeds (0.11, 0.11) beats A's (the worse of 0.10 and 0.12).
  ASSERT_FALSE(result.ranking.empty());
  EXPECT_EQ(result.ranking.front().key, "localsgd H=4 b=32 lr=linear");
  EXPECT_LE(result.used_s, plan.spec.budget_s * (1 + 1e-9));
}

TEST(TunerSearch, WhatTheFirstPassLeavesGoesToFurtherPasses) {
  // Every configuration reaches the target in a fifth to a third of R: the plan (every trial at
  // its rung's full budget, the race at R/3 a trial) takes fewer configurations than the space
  // holds; capping leaves budget, spent on more of them.
  const StoredGrid grid = synthetic_grid({1, 2}, {{"localsgd H=4 b=16 lr=linear", {0.05, 0.06}},
                                                  {"localsgd H=4 b=32 lr=linear", {0.055, 0.05}},
                                                  {"localsgd H=2 b=16 lr=linear", {0.06, 0.06}},
                                                  {"localsgd H=2 b=32 lr=linear", {0.07, 0.07}},
                                                  {"ssgd b=16 lr=linear", {0.08, 0.08}},
                                                  {"ssgd b=32 lr=linear", {0.09, 0.09}}});
  const TunePlan plan = search_plan(grid, 0.85);
  ASSERT_LT(plan.initial_design + plan.proposals, 6u);
  ReplayEvaluator replay(grid, plan.target, plan.spec.base.seed, {1, 2});
  RecordingEvaluator rec(replay);
  TuneResult result;
  tune_search(plan, rec, {}, nullptr, result);
  std::set<std::string> tried;
  for (const auto& a : rec.asked) tried.insert(a.key);
  EXPECT_GT(tried.size(), plan.initial_design + plan.proposals);
  bool noted = false;
  for (const std::string& n : result.notes) noted = noted || n.find("a further pass of") != std::string::npos;
  EXPECT_TRUE(noted);
  EXPECT_LE(result.used_s, plan.spec.budget_s * (1 + 1e-9));
  ASSERT_FALSE(result.ranking.empty());
  EXPECT_TRUE(result.ranking.front().median.reached);
}

TEST(TunerReplay, PriorStrategyRecommendsTheArgminAtTheProbesCostScoredOnEverySeed) {
  const StoredGrid grid = synthetic_grid({1, 2});
  TuneSpec spec = grid.spec;
  spec.budget_s = grid.total_cost_s;
  const TunePlan plan = tune_plan(spec, grid.max_trial_steps);
  // A prior that ranks B (localsgd H=4 b=32) first: on seed 1 it takes 0.11 against A's 0.10,
  // on seed 2 it is the best (0.11).
  TunePrior prior;
  prior.probe.cost_s = 0.05 * grid.total_cost_s;
  for (size_t i = 0; i < plan.space.feasible.size(); ++i) {
    const std::string key = candidate_key(plan.space.feasible[i]);
    prior.log_time.push_back(key == "localsgd H=4 b=32 lr=linear" ? -3.0 : static_cast<double>(i));
    if (key == "localsgd H=4 b=32 lr=linear") prior.argmin = i;
  }
  BenchOptions o;
  o.reps = 2;
  o.strategies = {"prior", "tuner-prior"};
  o.budget_fractions = {1.0};
  EXPECT_THROW(bench_run(grid, o), Error);  // a prior strategy needs the prior
  const BenchReport r = bench_run(grid, o, &prior);
  ASSERT_EQ(r.rows.size(), 2u);
  EXPECT_EQ(r.prior_best, "localsgd H=4 b=32 lr=linear");
  for (const BenchRep& rep : r.rows[0].reps) {
    EXPECT_EQ(rep.recommended, "localsgd H=4 b=32 lr=linear");
    EXPECT_NEAR(rep.cost_share, 0.05, 1e-12);  // no trial: the probe's cost alone
    // It evaluated no seed of the grid: regret over both, the mean of 0.11/0.10 − 1 and 0.
    EXPECT_EQ(rep.regret_seeds, (std::vector<uint64_t>{1, 2}));
    EXPECT_NEAR(rep.regret, (0.11 / 0.10 - 1) / 2, 1e-9);
  }
  // The search with the prior charges the probe first, then finds the held-out seed's answer
  // on the other seed with the whole budget (regret on the held-out seed alone: it used the other).
  for (const BenchRep& rep : r.rows[1].reps) {
    EXPECT_GT(rep.cost_share, 0.05);
    EXPECT_EQ(rep.regret_seeds, (std::vector<uint64_t>{rep.held_out_seed}));
    EXPECT_FALSE(rep.recommended.empty());
  }
}

TEST(TunerReplay, RefusesBadInput) {
  BenchOptions o;
  o.strategies = {"tuner"};
  o.reps = 0;
  EXPECT_THROW(bench_options_validate(o), InputError);
  o.reps = 20;
  o.strategies = {"simulated-annealing"};
  EXPECT_THROW(bench_options_validate(o), InputError);
  o.strategies = {"tuner"};
  o.budget_fractions = {0};
  EXPECT_THROW(bench_options_validate(o), InputError);
  o.budget_fractions = {1.5};
  EXPECT_THROW(bench_options_validate(o), InputError);

  const std::string path = (std::filesystem::temp_directory_path() / "dsgd_test_tuner_replay.db").string();
  std::filesystem::remove(path);
  {
    Store store = Store::open(path);
    EXPECT_THROW(replay_grid_load(store, 1), InputError);  // unknown session
    TuneSessionRow recommend;
    recommend.target = "acc=0.8";
    recommend.spec_json = "{}";
    const int64_t id = tune_session_begin(store, recommend);
    EXPECT_EQ(tune_session_get(store, id).kind, "recommend");
    try {
      replay_grid_load(store, id);
      ADD_FAILURE() << "a recommend session replayed as a grid";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("not a grid"), std::string::npos) << e.what();
    }
    TuneSessionRow grid;
    grid.kind = "grid";
    grid.target = "acc=0.8";
    grid.spec_json = tune_spec_to_json(replay_spec()).dump();
    const int64_t gid = tune_session_begin(store, grid);
    EXPECT_EQ(tune_session_get(store, gid).kind, "grid");
    EXPECT_THROW(replay_grid_load(store, gid), InputError);  // a grid without trials
  }
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace dsgd

namespace dsgd {
namespace {

// Counts the budgets the strategy asks for, answering through the replay.
class CountingEvaluator : public TrialEvaluator {
 public:
  explicit CountingEvaluator(TrialEvaluator& inner) : inner_(inner) {}
  TrialRow evaluate(const Candidate& c, uint64_t seed, double budget_s, const std::string& phase) override {
    budgets.push_back(budget_s);
    return inner_.evaluate(c, seed, budget_s, phase);
  }
  std::vector<double> budgets;

 private:
  TrialEvaluator& inner_;
};

TEST(TunerHyperband, FirstBracketHalvesFromROver9AndTheWholeBudgetFindsTheBest) {
  const StoredGrid grid = synthetic_grid({1});
  TuneSpec spec = grid.spec;
  spec.budget_s = grid.total_cost_s * 10;  // room for every bracket
  const TunePlan plan = tune_plan(spec, grid.max_trial_steps);
  ReplayEvaluator replay(grid, plan.target, 1, {1});
  CountingEvaluator counting(replay);
  const HyperbandOutcome h = hyperband_search(plan, counting, 1);
  EXPECT_EQ(h.recommended, "localsgd H=4 b=16 lr=linear");
  // Bracket s = 2 (eta 3): min(9, 6 configurations) at R/9, then 3 at R/3 and 1 at R, less the
  // ones a shorter trial already answered (reached, so they cost nothing more).
  ASSERT_GE(counting.budgets.size(), 6u);
  for (size_t k = 0; k < 6; ++k) EXPECT_NEAR(counting.budgets[k], kR / 9, 1e-12);
  for (double b : counting.budgets)
    EXPECT_TRUE(std::abs(b - kR / 9) < 1e-12 || std::abs(b - kR / 3) < 1e-12 || std::abs(b - kR) < 1e-12) << b;
  EXPECT_LE(h.cost_s, spec.budget_s);
  // A budget below one trial at R/9 runs nothing and recommends nothing.
  TunePlan tiny = plan;
  tiny.spec.budget_s = kR / 10;
  const HyperbandOutcome none = hyperband_search(tiny, replay, 1);
  EXPECT_EQ(none.trials, 0);
  EXPECT_TRUE(none.recommended.empty());
}

}  // namespace
}  // namespace dsgd
