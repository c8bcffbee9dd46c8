// `dsgd-tune bench`: tuning strategies replayed against a stored grid (tuner/grid.hpp), so
// many repetitions cost no training. The replay oracle (ReplayEvaluator, a TrialEvaluator)
// answers "candidate c, seed s, budget b" from the grid's trial of (c, s): it walks the run's
// stored evaluations as the live trial's callback would (tuner/trial.hpp: target reached →
// stop, non-finite loss → diverged, time >= b → censored there), so the score is the one a
// live trial at b would have had (same schedule: the grid ran every configuration with the
// schedule `recommend` uses for that R) and the cost is the evaluation time up to that stop.
//
// A repetition r holds one seed out (the grid's seed r mod N; with N = 1 none is held out) and
// lets the strategy search on the others (its trial seeds map onto them in order). Regret of
// its recommendation = (time-to-target on the held-out seed) / (the best time-to-target of any
// configuration on that seed) − 1; a recommendation that does not reach the target there scores
// +inf; no recommendation is counted apart. Cost = the strategy's evaluation seconds / the
// grid's total evaluation seconds (every configuration, every seed).
//
// Strategies: "tuner" (tune_search: successive halving + GP proposals + race, the code of
// `recommend`), "random" (configurations in a seeded random order at the full R on the first
// search seed until the budget is spent; the best in the censored order), "hyperband"
// (tuner/hyperband.hpp), "prior" (the theory prior's argmin, tuner/prior.hpp: no trial, its cost
// the probe's) and "tuner-prior" (the search of "tuner" with the prior: its design and the GP's
// mean, the probe's cost charged to its budget).
//
// Regret is measured on every grid seed the strategy did not evaluate (the held-out seed of the
// repetition always among them): the mean over those seeds of the recommendation's time there
// over the best time there − 1 (+inf when it does not reach the target on one of them).
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "results/store.hpp"
#include "tuner/evaluator.hpp"
#include "tuner/grid.hpp"
#include "tuner/prior.hpp"

namespace dsgd {

// A grid session in memory: the plan, and per (configuration key, seed) its trial and curve.
struct GridTrial {
  TrialRow trial;
  std::vector<EvalRow> evals;  // the run's evaluations, in order (empty when the trial failed)
};
struct StoredGrid {
  int64_t session_id = 0;
  TuneSpec spec;
  int64_t max_trial_steps = 0;
  double trial_time_s = 0;      // R
  std::vector<uint64_t> seeds;  // the grid's seeds, ascending
  std::map<std::pair<std::string, uint64_t>, GridTrial> trials;
  double total_cost_s = 0;  // evaluation seconds of every trial
};

// Loads grid session `session_id` of `store`. Throws InputError naming the database for an
// unknown session, one that is not a grid, or a grid with no trials.
StoredGrid replay_grid_load(const Store& store, int64_t session_id);

// The score and cost a live trial of (config key, grid seed) at `budget_s` would have had.
TrialRow replay_trial(const GridTrial& g, const Target& target, double budget_s);

class ReplayEvaluator : public TrialEvaluator {
 public:
  // Trial seeds seed0, seed0 + 1, ... map onto search_seeds[0], [1], ... (cyclically).
  ReplayEvaluator(const StoredGrid& grid, const Target& target, uint64_t seed0, std::vector<uint64_t> search_seeds)
      : grid_(grid), target_(target), seed0_(seed0), search_seeds_(std::move(search_seeds)) {}
  TrialRow evaluate(const Candidate& c, uint64_t seed, double budget_s, const std::string& phase) override;
  // The grid seeds asked for so far.
  const std::set<uint64_t>& used_seeds() const { return used_; }

 private:
  const StoredGrid& grid_;
  Target target_;
  uint64_t seed0_;
  std::vector<uint64_t> search_seeds_;
  std::set<uint64_t> used_;
};

struct BenchOptions {
  int64_t reps = 20;
  std::vector<std::string> strategies = {"tuner", "random"};  // also "hyperband", "prior", "tuner-prior"
  std::vector<double> budget_fractions = {0.1};               // of the grid's total evaluation time
};

// One repetition of one strategy.
struct BenchRep {
  std::string recommended;  // configuration key; empty: none
  double regret = 0;        // +inf: the recommendation does not reach the target on the held-out seed
  double cost_share = 0;    // evaluation seconds / the grid's total
  uint64_t held_out_seed = 0;
  std::vector<uint64_t> regret_seeds;  // the grid seeds the regret is measured on (not evaluated by the strategy)
};
struct BenchRow {
  std::string strategy;
  double budget_fraction = 0;
  std::vector<BenchRep> reps;
  double regret_q25 = 0, regret_median = 0, regret_q75 = 0;
  double cost_q25 = 0, cost_median = 0, cost_q75 = 0;
  int64_t within_5pct = 0;        // reps with regret <= 0.05
  int64_t no_recommendation = 0;  // reps that recommended nothing
};
struct BenchReport {
  std::vector<BenchRow> rows;
  // Per held-out seed, the grid's best configuration and its time (the regret's denominator).
  std::vector<std::pair<uint64_t, std::pair<std::string, double>>> best_per_seed;
  std::string grid_best;  // by the median over all seeds
  double grid_best_time_s = 0;
  std::string prior_best;                                   // the prior's argmin (with a prior)
  std::vector<std::string> prior_notes;                     // the probe and the constants (prior_describe)
  std::vector<std::pair<std::string, double>> prior_times;  // per configuration, the prior's time-to-target
};

// Throws InputError for reps < 1, an unknown strategy (listing the known ones), a budget
// fraction outside (0, 1].
void bench_options_validate(const BenchOptions& o);
// Whether one of the strategies needs the prior (bench_prior_build's).
bool bench_needs_prior(const BenchOptions& o);
// The prior for the grid's space: its probe run now (unstored) with a seed that is none of the
// grid's (one past the largest), step times and calibrations from `read` (the grid's database).
TunePrior bench_prior_build(const StoredGrid& grid, Store& read);
// prior: required when a strategy needs it (else Error).
BenchReport bench_run(const StoredGrid& grid, const BenchOptions& o, const TunePrior* prior = nullptr);
nlohmann::json bench_report_json(const StoredGrid& grid, const BenchReport& r);

}  // namespace dsgd
