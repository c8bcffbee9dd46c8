// See grid.hpp.
#include "tuner/grid.hpp"

#include <fmt/format.h>

#include <map>

#include "core/clock.hpp"
#include "core/errors.hpp"
#include "engine/shared_dataset.hpp"
#include "tuner/evaluator.hpp"
#include "tuner/live_evaluator.hpp"
#include "tuner/tune_store.hpp"

namespace dsgd {

GridPlan grid_plan(TuneSpec spec, int64_t seeds, int64_t max_trial_steps) {
  if (!(spec.trial_time_s > 0))
    DSGD_THROW(InputError, "pass --trial-time, e.g. --trial-time 0.5s (virtual seconds)",
               "dsgd-tune grid needs --trial-time: every configuration runs at that full trial time R");
  if (seeds < 1 || seeds > 100)
    DSGD_THROW(InputError, "pass e.g. --seeds 3", "--seeds must be in 1..100 (got {})", seeds);
  spec.budget_s = 0;
  spec.trials = 1;  // replaced below by configurations × seeds: the grid runs them all
  GridPlan grid;
  grid.seeds = seeds;
  grid.plan = tune_plan(spec, max_trial_steps);
  grid.trials = static_cast<int64_t>(grid.plan.space.feasible.size()) * seeds;
  grid.plan.spec.trials = grid.trials;
  grid.plan.planned_trials = grid.trials;
  grid.plan.initial_design = grid.plan.space.feasible.size();
  grid.plan.proposals = 0;
  grid.plan.notes.clear();
  grid.plan.notes.push_back(
      fmt::format("{} configurations feasible ({} refused by formula) x {} seed{} = {} trials at R = {:.4g} s",
                  grid.plan.space.feasible.size(), grid.plan.space.refused.size(), seeds, seeds == 1 ? "" : "s",
                  grid.trials, grid.plan.trial_time_s));
  return grid;
}

nlohmann::json grid_spec_to_json(const GridPlan& grid) {
  nlohmann::json j = tune_spec_to_json(grid.plan.spec);
  j["grid-seeds"] = grid.seeds;
  j["max-trial-steps"] = grid.plan.max_trial_steps;
  return j;
}

GridPlan grid_plan_from_json(const nlohmann::json& j) {
  return grid_plan(tune_spec_from_json(j), j.at("grid-seeds").get<int64_t>(), j.at("max-trial-steps").get<int64_t>());
}

GridResult grid_run(const GridPlan& grid, Store& store, int64_t session_id,
                    const std::function<void(const GridProgress&)>& progress) {
  const TunePlan& plan = grid.plan;
  GridResult result;
  if (!plan.missing_profiles.empty())
    result.profile_wall_s = tune_profiles_measure(plan, store, session_id, result.notes);
  std::map<std::string, TrialRow> stored;
  for (const TrialRow& t : tune_trials_get(store, session_id)) stored[t.trial_key] = t;
  LiveTrialEvaluator live(plan, store, session_id);
  const double R = plan.trial_time_s;
  int64_t k = 0;
  for (int64_t s = 0; s < grid.seeds; ++s) {
    const uint64_t seed = plan.spec.base.seed + static_cast<uint64_t>(s);
    bool held = false;
    for (const Candidate& c : plan.space.feasible) {
      const std::string key = trial_key(candidate_key(c), seed, R);
      ++k;
      if (auto it = stored.find(key); it != stored.end()) {
        ++result.trials_kept;
        result.used_s += trial_cost_s(it->second);
        result.trials.push_back(it->second);
        continue;
      }
      if (!held) {  // this seed's dataset, loaded once for its trials
        live.begin_seed(seed);
        held = true;
      }
      if (progress) progress({k, grid.trials, candidate_key(c)});
      const TrialRow row = live.evaluate(c, seed, R, fmt::format("grid seed {}", s));
      ++result.trials_run;
      result.used_s += trial_cost_s(row);
      result.trials.push_back(row);
    }
  }
  result.trial_wall_s = live.trial_wall_s();
  return result;
}

}  // namespace dsgd
