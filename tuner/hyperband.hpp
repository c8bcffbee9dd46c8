// Hyperband (Li et al., JMLR 2018) as a search strategy in evaluation seconds, against any
// TrialEvaluator (tuner/evaluator.hpp): brackets from hyperband_brackets (tuner/
// successive_halving.hpp) over [R/eta^2, R] — with eta = 3: 9 configurations from R/9, 5 from
// R/3, 3 at R — each a successive halving over configurations drawn at random (seeded, without
// repeats while untried ones remain), repeated bracket after bracket while the next trial's
// full budget fits, or until a whole round asks for nothing new. A trial answered by a shorter
// one of the same configuration and seed (reached, diverged, failed or out of steps before that
// budget) costs nothing. The recommendation is the best trial at R in the censored order, else
// the best at any budget. Used by `dsgd-tune bench --strategies hyperband`; `recommend` does
// not use it (it did not beat the search on the reference grid, docs/tuner.md).
#pragma once

#include <cstdint>
#include <string>

#include "tuner/evaluator.hpp"
#include "tuner/recommend.hpp"

namespace dsgd {

struct HyperbandOutcome {
  std::string recommended;  // configuration key; empty when nothing reached the target
  double cost_s = 0;        // evaluation seconds spent
  int64_t trials = 0;       // trials asked of the evaluator
  int64_t brackets = 0;     // brackets started
};

// plan: its space, R (trial_time_s), eta and budget (spec.budget_s, evaluation seconds).
HyperbandOutcome hyperband_search(const TunePlan& plan, TrialEvaluator& eval, uint64_t seed);

}  // namespace dsgd
