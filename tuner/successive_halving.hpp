// Successive halving / Hyperband in units of evaluation time (virtual seconds on the sim),
// comparing trials at equal time, not equal steps. A trial's score at a rung is its
// censored time-to-target (tuner/objective.hpp): reached → time, not reached → "at least
// the rung's budget", which ranks after every reached one.
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
  // Budgets of the rungs: min, min*eta, ... up to max (the last is max).
  std::vector<double> rung_budgets() const;
};

// Which trials go on to the next rung: the best ceil(n/eta) by censored order, plus any trial
// within `margin` (relative, about the seed-to-seed spread) of the last promoted one's time.
// Deterministic: ties broken by trial id.
std::vector<int64_t> successive_halving_promote(const std::vector<RungEntry>& rung, double eta, double margin);

// Hyperband brackets for [min, max] budget with eta: for each bracket s, the number of
// configurations to start and the starting budget.
struct HyperbandBracket {
  int configs = 0;
  double start_budget_s = 0;
};
std::vector<HyperbandBracket> hyperband_brackets(const HalvingPlan& plan);

}  // namespace dsgd
