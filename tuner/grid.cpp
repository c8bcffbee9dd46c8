// See grid.hpp.
#include "tuner/grid.hpp"

#include <fmt/format.h>

#include <map>

#include "core/clock.hpp"
#include "core/errors.hpp"
#include "engine/shared_dataset.hpp"
#include "results/trial_backend.hpp"
#include "results/tune_store.hpp"
#include "tuner/evaluator.hpp"

namespace dsgd {

GridPlan grid_plan(TuneSpec spec, int64_t seeds, int64_t max_trial_steps) {
  if (!(spec.trial_time_s > 0))
    DSGD_THROW(InputError, "pass --trial-time, e.g. --trial-time 0.5s (virtual seconds)",
               "dsgd-tune grid needs --trial-time: every configuration runs at that full trial time R");
  if (trial_backend_find(spec.base.backend) != TrialBackend::trial_sim)
    DSGD_THROW(InputError, "drop --backend (a grid runs on the simulated cluster)",
               "dsgd-tune grid runs its trials on --backend sim only (got --backend {}): a stored grid is replayed as "
               "an exact, deterministic oracle",
               spec.base.backend);
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
  // Seed by seed; every seed's dataset held meanwhile (the trials of one seed share it).
  std::vector<std::shared_ptr<const DatasetPair>> seed_data;
  std::vector<TuneTrialRequest> requests;
  for (int64_t s = 0; s < grid.seeds; ++s) {
    RunConfig seeded = plan.spec.base;
    seeded.seed = plan.spec.base.seed + static_cast<uint64_t>(s);
    seed_data.push_back(dataset_load_shared(seeded));
    for (const Candidate& c : plan.space.feasible)
      requests.push_back({c, seeded.seed, plan.trial_time_s, fmt::format("grid seed {}", s)});
  }
  TuneResult run;
  const auto report = [&](const TuneProgress& p) {
    if (progress) progress({p.trial, grid.trials, p.current, p.best, p.used_s});
  };
  result.trials = tune_trials_run(plan, store, session_id, requests, report, run);
  result.notes.insert(result.notes.end(), run.notes.begin(), run.notes.end());
  result.trials_run = run.trials_run;
  result.trials_kept = run.trials_resumed;
  result.used_s = run.used_s;
  result.trial_wall_s = run.trial_wall_s;
  return result;
}

}  // namespace dsgd
