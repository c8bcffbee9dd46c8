// The censored time-to-target order (see objective.hpp).
#include "tuner/objective.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace dsgd {
namespace {

double time_key(double t) {
  return std::isnan(t) ? std::numeric_limits<double>::infinity() : t;
}
double progress_key(double p) {
  return std::isnan(p) ? -std::numeric_limits<double>::infinity() : p;
}

}  // namespace

bool objective_better(const TrialScore& a, const TrialScore& b) {
  if (a.reached != b.reached) return a.reached;
  if (!a.reached) {
    const double pa = progress_key(a.progress), pb = progress_key(b.progress);
    if (pa != pb) return pa > pb;  // censored: closer to the target first
  }
  return time_key(a.time_s) < time_key(b.time_s);  // reached: sooner; censored at equal progress: got there sooner
}

std::vector<size_t> objective_rank(const std::vector<TrialScore>& scores) {
  std::vector<size_t> order(scores.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t i, size_t j) { return objective_better(scores[i], scores[j]); });
  return order;
}

}  // namespace dsgd
