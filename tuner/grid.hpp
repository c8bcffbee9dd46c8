// `dsgd-tune grid`: every configuration of a (small) search space, each with N seeds, at the
// full trial time R, stored as a tuning session of kind 'grid' (tune_sessions.kind, schema
// v12). Each trial is an ordinary trial of the live runner (tuner/recommend.hpp tune_trials_run:
// the same code and schedule as `recommend` with the same R, so evaluations every R/9/40 of virtual time), stopped
// at the target or at R; its run keeps the per-evaluation curve (the evals table), from which
// `dsgd-tune bench` (tuner/replay.hpp) answers a trial at any budget up to R without training.
// Resumable: trials already stored in the session are not run again.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "results/store.hpp"
#include "tuner/recommend.hpp"

namespace dsgd {

struct GridPlan {
  TunePlan plan;  // its trial_time_s is R; rungs as `recommend` with that R
  int64_t seeds = 3;
  int64_t trials = 0;  // configurations × seeds
};

// Validates as tune_plan (bad input throws InputError before anything is stored). Requires
// spec.trial_time_s > 0 (--trial-time) and 1 <= seeds <= 100.
GridPlan grid_plan(TuneSpec spec, int64_t seeds, int64_t max_trial_steps);

// The session's spec as stored (tune_spec_to_json plus "grid-seeds" and "max-trial-steps") and back.
nlohmann::json grid_spec_to_json(const GridPlan& grid);
GridPlan grid_plan_from_json(const nlohmann::json& j);

struct GridResult {
  int64_t trials_run = 0, trials_kept = 0;  // run now; stored before (resume)
  double used_s = 0;                        // evaluation seconds of every trial of the grid
  double trial_wall_s = 0, profile_wall_s = 0;
  std::vector<std::string> notes;
  std::vector<TrialRow> trials;  // every trial of the session, in order
};

struct GridProgress {
  int64_t trial = 0, total = 0;
  std::string current;
  std::string best;   // the best trial so far ("none reached yet")
  double used_s = 0;  // evaluation seconds so far
};

// Runs the grid in session `session_id`: seed by seed, every feasible configuration at R.
GridResult grid_run(const GridPlan& grid, Store& store, int64_t session_id,
                    const std::function<void(const GridProgress&)>& progress);

}  // namespace dsgd
