// The tuner's tables (schema: results/migrations.cpp, migration "tuner"): tune_sessions, one
// row per `dsgd-tune recommend` or `grid`, and trials, one row per trial run (configuration,
// seed and budget), linked to the run it stored; tune_validations / tune_validation_configs
// (schema v10), one row per validation of a session on the real backend and one per validated
// configuration (tuner/tune_validate.hpp). A trial row is written when the trial has finished,
// in its own transaction, so a killed session keeps every finished trial and `--resume` does
// not run them again. The one reader and writer of these tables: the tuner (tuner/) and the
// reports (results/report_tuning.hpp) both call it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "results/store.hpp"
#include "results/trial_status.hpp"
#include "results/trial_stop.hpp"
#include "results/tune_session_status.hpp"

namespace dsgd {

struct TuneSessionRow {
  int64_t id = 0;
  std::string created_at, finished_at;
  TuneSessionStatus status = TuneSessionStatus::session_running;  // stored as its text
  std::string target;
  uint64_t seed = 0;
  std::string spec_json;    // tuner/search_space.hpp TuneSpec
  std::string result_json;  // the recommendation (empty until finished)
  std::string host, git_commit, error;
  std::string kind = "recommend";  // recommend | grid (tuner/grid.hpp)
};

struct TrialRow {
  int64_t id = 0;
  int64_t session_id = 0;
  std::string trial_key;   // config key | seed | budget: unique in a session
  std::string phase;       // "rung 0", "rung 1", ..., "race", "refine" (re-measured at a finer R)
  std::string config_key;  // tuner/search_space.hpp candidate_key
  std::string config_json;
  uint64_t seed = 0;
  double budget_s = 0;
  int64_t run_id = 0;                                 // 0: none stored
  TrialStatus status = TrialStatus::trial_completed;  // stored as its text
  std::string stop_reason;                            // the human account, stored
  // Its kind, set with stop_reason (read back from it: trial_stop_kind_of_reason; not stored).
  StopKind stop_kind = StopKind::stop_end_of_steps;
  bool reached = false;
  double time_s = 0, progress = 0;
  int64_t steps = 0;
  double step_s = 0, compute_s = 0, comm_s = 0, wait_s = 0, bytes_per_step = 0;
  double wall_s = 0;
  std::string created_at;
};

// Whether the database has the tuner's tables (an unmigrated read-only one before v9 does not).
bool tune_tables_exist(const Store& store);

int64_t tune_session_begin(Store& store, const TuneSessionRow& row);
void tune_session_set_status(Store& store, int64_t id, TuneSessionStatus status);
// Replaces a session's stored spec (a grid widened to more seeds).
void tune_session_set_spec(Store& store, int64_t id, const std::string& spec_json);
void tune_session_finish(Store& store, int64_t id, TuneSessionStatus status, const std::string& result_json,
                         const std::string& error);
// Throws InputError naming the database when the session does not exist (or the schema
// predates the tuner).
TuneSessionRow tune_session_get(const Store& store, int64_t id);
std::vector<TuneSessionRow> tune_sessions_list(const Store& store);  // newest first
// Number of trials of each listed session (same order).
int64_t tune_session_trial_count(const Store& store, int64_t id);

void tune_trial_insert(Store& store, const TrialRow& row);
std::vector<TrialRow> tune_trials_get(const Store& store, int64_t session_id);  // in insertion order

struct TopValidationRow {
  int64_t rank = 0;  // in the session's ranking (1: the recommendation)
  std::string config_key;
  int64_t sim_run_id = 0, mpi_run_id = 0;
  std::optional<double> predicted_time_s, measured_time_s;  // time-to-target; empty: not reached
  double predicted_step_s = 0, measured_step_s = 0;
  int64_t measured_steps = 0;  // steps the MPI run was given
};

struct TopValidation {
  int64_t id = 0, session_id = 0;
  std::string created_at, host;
  int64_t top_k = 0;
  std::vector<TopValidationRow> rows;  // by rank
  std::optional<bool> ranking_agrees;  // the top two's measured order; empty: undecided
};

// Stores a validation and its rows in one transaction; sets v.id.
void tune_validation_insert(Store& store, TopValidation& v);
// The session's stored validations, oldest first (empty before schema v10).
std::vector<TopValidation> tune_validations_get(const Store& store, int64_t session_id);

}  // namespace dsgd
