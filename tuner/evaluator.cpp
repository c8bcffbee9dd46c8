// See evaluator.hpp.
#include "tuner/evaluator.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace dsgd {

TrialScore trial_score(const TrialRow& t) {
  TrialScore s;
  s.reached = t.reached;
  s.time_s = std::isfinite(t.time_s) ? t.time_s : 0.0;
  s.progress = std::isfinite(t.progress) ? t.progress : -1e30;
  return s;
}

double trial_cost_s(const TrialRow& t) {
  return std::isfinite(t.time_s) ? t.time_s : 0.0;
}

TrialRow trials_median(std::vector<TrialRow> trials) {
  std::sort(trials.begin(), trials.end(),
            [](const TrialRow& a, const TrialRow& b) { return objective_better(trial_score(a), trial_score(b)); });
  return trials.at(trials.size() / 2);
}

std::string trial_key(const std::string& config_key, uint64_t seed, double budget) {
  return fmt::format("{}|seed={}|budget={:.6g}", config_key, seed, budget);
}

}  // namespace dsgd
