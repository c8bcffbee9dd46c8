// Successive halving promotions and Hyperband brackets (see successive_halving.hpp).
#include "tuner/successive_halving.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include "core/errors.hpp"
#include "tuner/objective.hpp"

namespace dsgd {
namespace {

constexpr double kRelSlack = 1e-9;  // absorbs rounding in log and in powers of a non-integer eta

void check_eta(double eta, const char* where) {
  if (!(eta > 1) || !std::isfinite(eta))
    DSGD_THROW(Error, "", "{}: eta must be a finite number > 1, got {}", where, eta);
}

// s_max = floor(log_eta(max/min)), by repeated multiplication so that exact powers count.
int hyperband_s_max(const HalvingPlan& p) {
  if (!(p.min_budget_s > 0) || !(p.max_budget_s >= p.min_budget_s) || !std::isfinite(p.max_budget_s))
    DSGD_THROW(Error, "", "HalvingPlan: budgets must satisfy 0 < min <= max, got min {} max {}", p.min_budget_s,
               p.max_budget_s);
  check_eta(p.eta, "HalvingPlan");
  const double ratio = p.max_budget_s / p.min_budget_s;
  int s = 0;
  double power = p.eta;
  while (power <= ratio * (1 + kRelSlack)) {
    ++s;
    power *= p.eta;
  }
  return s;
}

TrialScore score_of(const RungEntry& e) {
  return {e.reached, e.time_s, e.progress};
}

}  // namespace

std::vector<double> HalvingPlan::rung_budgets() const {
  const int s_max = hyperband_s_max(*this);
  std::vector<double> budgets(static_cast<size_t>(s_max) + 1);
  double b = max_budget_s;
  for (int i = s_max; i >= 0; --i) {
    budgets[static_cast<size_t>(i)] = b;
    b /= eta;
  }
  // Snap the first onto min when max/min is a power of eta up to rounding.
  if (std::abs(budgets[0] - min_budget_s) <= kRelSlack * min_budget_s) budgets[0] = min_budget_s;
  return budgets;
}

std::vector<int64_t> successive_halving_promote(const std::vector<RungEntry>& rung, double eta, double margin) {
  check_eta(eta, "successive_halving_promote");
  if (!(margin >= 0)) DSGD_THROW(Error, "", "successive_halving_promote: margin must be >= 0, got {}", margin);
  std::set<int64_t> ids;
  for (const RungEntry& e : rung)
    if (!ids.insert(e.trial).second)
      DSGD_THROW(Error, "", "successive_halving_promote: trial {} appears twice in the rung", e.trial);
  if (rung.empty()) return {};

  std::vector<const RungEntry*> order;
  order.reserve(rung.size());
  for (const RungEntry& e : rung) order.push_back(&e);
  std::sort(order.begin(), order.end(), [](const RungEntry* a, const RungEntry* b) {
    if (objective_better(score_of(*a), score_of(*b))) return true;
    if (objective_better(score_of(*b), score_of(*a))) return false;
    return a->trial < b->trial;
  });

  const double n = static_cast<double>(rung.size());
  // ceil(n / eta) with slack so that n = 9, eta = 3 keeps 3, not 4.
  size_t keep = static_cast<size_t>(std::ceil(n / eta * (1 - kRelSlack)));
  keep = std::clamp<size_t>(keep, 1, rung.size());

  std::vector<int64_t> promoted;
  for (size_t i = 0; i < keep; ++i) promoted.push_back(order[i]->trial);
  if (margin > 0) {
    const RungEntry& last = *order[keep - 1];
    for (size_t i = keep; i < order.size(); ++i) {
      const RungEntry& e = *order[i];
      bool near = false;
      if (last.reached) {
        near = e.reached && e.time_s <= last.time_s * (1 + margin);
      } else {
        near = !e.reached && e.progress >= last.progress - margin * std::abs(last.progress);
      }
      if (!near) break;  // the order is sorted: nothing after a far one is near
      promoted.push_back(e.trial);
    }
  }
  return promoted;
}

std::vector<HyperbandBracket> hyperband_brackets(const HalvingPlan& plan) {
  const int s_max = hyperband_s_max(plan);
  std::vector<HyperbandBracket> brackets;
  for (int s = s_max; s >= 0; --s) {
    const double eta_s = std::pow(plan.eta, s);
    // n = ceil(B/R · eta^s / (s+1)), B/R = s_max + 1; slack so exact integers stay put.
    const double n = (s_max + 1) * eta_s / (s + 1);
    HyperbandBracket b;
    b.configs = static_cast<int>(std::ceil(n * (1 - kRelSlack)));
    b.start_budget_s = plan.max_budget_s / eta_s;
    if (s == s_max && std::abs(b.start_budget_s - plan.min_budget_s) <= kRelSlack * plan.min_budget_s)
      b.start_budget_s = plan.min_budget_s;
    b.rungs = s + 1;
    brackets.push_back(b);
  }
  return brackets;
}

std::vector<int> successive_halving_rung_sizes(int configs, int rungs, double eta) {
  check_eta(eta, "successive_halving_rung_sizes");
  if (configs < 1 || rungs < 1)
    DSGD_THROW(Error, "", "successive_halving_rung_sizes: configs {} and rungs {} must be >= 1", configs, rungs);
  std::vector<int> sizes;
  double div = 1;
  for (int i = 0; i < rungs; ++i) {
    sizes.push_back(std::max(1, static_cast<int>(std::floor(configs / div * (1 + kRelSlack)))));
    div *= eta;
  }
  return sizes;
}

}  // namespace dsgd
