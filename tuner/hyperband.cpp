// See hyperband.hpp.
#include "tuner/hyperband.hpp"

#include <algorithm>
#include <map>
#include <numeric>
#include <random>
#include <vector>

#include "tuner/successive_halving.hpp"

namespace dsgd {

HyperbandOutcome hyperband_search(const TunePlan& plan, TrialEvaluator& eval, uint64_t seed) {
  const std::vector<Candidate>& all = plan.space.feasible;
  const double R = plan.trial_time_s, eta = plan.spec.eta;
  HalvingPlan hp;
  hp.max_budget_s = R;
  hp.min_budget_s = R / (eta * eta);
  hp.eta = eta;
  const std::vector<HyperbandBracket> brackets = hyperband_brackets(hp);
  std::mt19937_64 rng(seed);
  std::vector<size_t> pool;  // untried configurations, drawn from the back
  auto draw = [&]() {
    if (pool.empty()) {
      pool.resize(all.size());
      std::iota(pool.begin(), pool.end(), size_t{0});
      std::shuffle(pool.begin(), pool.end(), rng);
    }
    const size_t i = pool.back();
    pool.pop_back();
    return i;
  };
  HyperbandOutcome out;
  std::map<size_t, std::vector<TrialRow>> done;  // configuration -> its trials (one seed)
  TrialRow best_full, best_any;
  bool have_full = false, have_any = false;
  bool exhausted = false;
  // The trial of configuration i at budget b: answered by a shorter one that stopped for good,
  // else run when its full budget fits.
  auto trial = [&](size_t i, double b) -> const TrialRow* {
    for (const TrialRow& t : done[i]) {
      const bool final_stop =
          t.reached || t.status == TrialStatus::trial_failed || t.stop_kind != StopKind::stop_budget;
      if (t.budget_s >= b * (1 - 1e-9) || (final_stop && t.budget_s < b)) return &t;
    }
    if (out.cost_s + b > plan.spec.budget_s * (1 + 1e-9)) {
      exhausted = true;
      return nullptr;
    }
    TrialRow t = eval.evaluate(all[i], plan.spec.base.seed, b, "hyperband");
    ++out.trials;
    out.cost_s += trial_cost_s(t);
    done[i].push_back(t);
    return &done[i].back();
  };
  auto better = [](const TrialRow& a, const TrialRow& b) { return objective_better(trial_score(a), trial_score(b)); };
  while (!exhausted) {
    const int64_t before = out.trials;
    for (const HyperbandBracket& br : brackets) {
      if (exhausted) break;
      ++out.brackets;
      std::vector<size_t> alive;
      for (int k = 0; k < br.configs && k < static_cast<int>(all.size()); ++k) alive.push_back(draw());
      const std::vector<int> sizes = successive_halving_rung_sizes(br.configs, br.rungs, eta);
      double b = br.start_budget_s;
      for (int rung = 0; rung < br.rungs && !alive.empty(); ++rung, b *= eta) {
        std::vector<std::pair<size_t, TrialRow>> ran;
        for (size_t i : alive) {
          const TrialRow* t = trial(i, std::min(b, R));
          if (!t) break;
          ran.emplace_back(i, *t);
          if (!have_any || better(*t, best_any)) best_any = *t, have_any = true;
          if (rung + 1 == br.rungs && (!have_full || better(*t, best_full))) best_full = *t, have_full = true;
        }
        std::stable_sort(ran.begin(), ran.end(),
                         [&](const auto& x, const auto& y) { return better(x.second, y.second); });
        const size_t keep = rung + 1 < br.rungs ? static_cast<size_t>(sizes[static_cast<size_t>(rung) + 1]) : 0;
        alive.clear();
        for (size_t k = 0; k < ran.size() && k < keep; ++k) alive.push_back(ran[k].first);
        if (exhausted) break;
      }
    }
    if (out.trials == before) break;  // every trial of a whole round was answered already: nothing new to learn
  }
  const TrialRow* rec = have_full && best_full.reached ? &best_full
                        : have_any && best_any.reached ? &best_any
                                                       : nullptr;
  if (rec) out.recommended = rec->config_key;
  return out;
}

}  // namespace dsgd
