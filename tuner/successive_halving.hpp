// Successive halving / Hyperband in units of evaluation time (virtual seconds on the sim),
// comparing trials at equal time, not equal steps. A trial's score at a rung is its
// censored time-to-target (tuner/objective.hpp): reached → time, not reached → "at least
// the rung's budget", which ranks after every reached one.
//
// Hyperband (Li et al., JMLR 2018, Algorithm 1) in budget units: R = max/min, s_max =
// floor(log_eta R), B = (s_max + 1) R; bracket s = s_max..0 starts n_s = ceil(B/R · eta^s/(s+1))
// configurations at r_s = max · eta^-s and runs s + 1 rungs; rung i of it keeps
// floor(n_s · eta^-i) configurations at budget r_s · eta^i.
#pragma once

#include <cstdint>
#include <vector>

namespace dsgd {

// One trial's standing at a rung of `budget_s` evaluation seconds.
struct RungEntry {
  int64_t trial = 0;     // caller's id
  bool reached = false;  // reached the target within the rung's budget
  double time_s = 0;     // time-to-target when reached, else the elapsed time (a lower bound)
  double progress = 0;   // when not reached: best value of the target metric so far, oriented so
                         // that larger is closer (e.g. accuracy, or -loss); ranks censored trials
};

struct HalvingPlan {
  double min_budget_s = 0;
  double max_budget_s = 0;
  double eta = 3;  // keep the best 1/eta at each rung
  // Budgets of the rungs, ascending: max·eta^-s_max, ..., max·eta^-1, max with s_max =
  // floor(log_eta(max/min)) (1e-9 relative slack), so the first is in [min, min·eta) and the
  // last is max; when max/min is a power of eta they are exactly min, min·eta, ..., max.
  // Throws dsgd::Error unless 0 < min <= max and eta > 1 (all finite).
  std::vector<double> rung_budgets() const;
};

// Which trials go on to the next rung: the best ceil(n/eta) by censored order
// (objective_better), plus, when margin > 0, every other trial within `margin` (relative,
// about the seed-to-seed spread) of the last promoted one:
//   last promoted reached:  reached trials with time_s <= t_last · (1 + margin);
//   last promoted censored: censored trials with progress >= p_last - margin · |p_last|.
// (A censored trial is never promoted by the margin past a reached one.) With margin == 0,
// exactly ceil(n/eta). Deterministic: ties broken by trial id (smaller first). Returns the ids
// best first. Throws dsgd::Error when eta <= 1, margin < 0 or is NaN, or a trial id repeats.
std::vector<int64_t> successive_halving_promote(const std::vector<RungEntry>& rung, double eta, double margin);

// Hyperband brackets for [min, max] budget with eta: for each bracket s, the number of
// configurations to start and the starting budget. Most exploratory bracket (s = s_max) first.
struct HyperbandBracket {
  int configs = 0;
  double start_budget_s = 0;
  int rungs = 0;  // s + 1: the bracket halves rungs - 1 times, its last rung runs at max
};
std::vector<HyperbandBracket> hyperband_brackets(const HalvingPlan& plan);

// Configurations kept at each rung of a successive-halving bracket that starts `configs` and
// runs `rungs` rungs: floor(configs · eta^-i), at least 1, for i = 0..rungs-1.
std::vector<int> successive_halving_rung_sizes(int configs, int rungs, double eta);

}  // namespace dsgd
