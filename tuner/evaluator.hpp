// The tuner's access to trials, one small interface between the search strategy
// (tuner/recommend.hpp tune_search: successive halving, GP proposals, the race) and what
// answers a trial other than the live runner: the replay oracle (tuner/replay.hpp: cuts a stored
// grid's curve at the budget). The search code (recommend.cpp's search) is the same whether its
// trials run on the live pool (`recommend`, `grid`) or are asked of an evaluator.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "results/store.hpp"
#include "results/tune_store.hpp"
#include "tuner/objective.hpp"
#include "tuner/search_space.hpp"

namespace dsgd {

class TrialEvaluator {
 public:
  virtual ~TrialEvaluator() = default;
  // Candidate c with this seed at a budget of `budget_s` evaluation (virtual) seconds. The row
  // carries the score (trial_score) and the evaluation seconds spent (trial_cost_s); its
  // config_key, seed, budget_s and phase are set. Never throws for a configuration that cannot
  // run: that is a failed row.
  virtual TrialRow evaluate(const Candidate& c, uint64_t seed, double budget_s, const std::string& phase) = 0;
  // The search is about to run trials of this seed (the live runner keeps that seed's dataset).
  virtual void begin_seed(uint64_t /*seed*/) {}
};

// The censored score of a trial row (tuner/objective.hpp); a non-finite progress ranks last.
TrialScore trial_score(const TrialRow& t);
// Evaluation seconds a trial spent: its time-to-target when reached, else its elapsed time.
double trial_cost_s(const TrialRow& t);
// The median of a configuration's trials (one per seed) in the censored order; of an even count
// the worse of the middle two. `trials` must not be empty.
TrialRow trials_median(std::vector<TrialRow> trials);
// "config key|seed=S|budget=B": a trial's key, unique in a session.
std::string trial_key(const std::string& config_key, uint64_t seed, double budget);

}  // namespace dsgd
