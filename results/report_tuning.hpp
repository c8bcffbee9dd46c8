// The tuning section of a report: the dsgd-tune sessions (tables tune_sessions and trials,
// docs/tuner.md) whose trials' runs are in the report. Per session: what was searched and
// found (target, backend, budget, the verdict and the winner's command), the search's
// best-so-far curve — the best time-to-target among the trials that reached the target, after
// each trial, against the evaluation time spent so far (a trial costs its time-to-target when
// it reached it, else its elapsed time: the budget the tuner charged) —, every trial as a point
// of step time against steps to the target (censored trials apart: their steps at the stop are
// a lower bound), the race's time-to-target per seed (how far apart the top configurations
// are), the session's validations on the real backend, and the trials table. As rows: the
// `trials` report table (one row per stored trial, in the order the tuner ran them, with the
// cumulative cost and the best so far), for `dsgd-bench report --session S --format csv|json`.
// Trials answered by a shorter trial or kept from an earlier invocation are not stored twice,
// so the curve's cost is the session's stored trials' cost.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "results/report_rows.hpp"
#include "results/store.hpp"
#include "results/trial_backend.hpp"
#include "results/tune_store.hpp"

namespace dsgd {

struct HtmlReportOptions;

struct TuningTrial {
  int64_t id = 0;
  std::string phase, config_key, algo;
  TrialStatus status = TrialStatus::trial_completed;
  std::string stop_reason;
  StopKind stop_kind = StopKind::stop_end_of_steps;
  int64_t seed = 0;
  double budget_s = 0;
  int64_t run_id = 0;  // 0: none stored
  bool reached = false;
  double time_s = 0;  // time-to-target when reached, else the elapsed time at the stop
  int64_t steps = 0;  // at the target, or at the stop
  double step_s = 0, compute_s = 0, comm_s = 0, wait_s = 0, bytes_per_step = 0, wall_s = 0;
  double cost_s = 0;                    // evaluation seconds charged (time_s; 0 when not finite)
  double cumulative_cost_s = 0;         // of this and every earlier trial of the session
  std::optional<double> best_so_far_s;  // the best time-to-target of this and earlier trials
};

struct TuningSession {
  int64_t id = 0;
  std::string kind;
  TuneSessionStatus status = TuneSessionStatus::session_running;
  std::string target;
  TrialBackend backend = TrialBackend::trial_sim;
  std::string created_at;
  double budget_s = 0;  // --budget (0: none)
  std::string verdict;  // from the stored result
  std::string command;  // the winner's dsgd-bench run command (empty: none)
  double wall_s = 0;    // the session's real seconds (0: not stored)
  std::vector<TuningTrial> trials;
  std::vector<TopValidation> validations;  // oldest first (results/tune_store.hpp)
};

struct TuningReport {
  std::vector<TuningSession> sessions;  // by id
};

// The sessions with a stored trial whose run is in `run_ids`, each with every one of its trials
// (in the order they were stored) and validations. Empty for a database without the tuner's
// tables.
TuningReport report_tuning_load(const Store& store, const std::vector<int64_t>& run_ids);
// One session; throws InputError naming the database when it has no such session.
TuningReport report_tuning_load_session(const Store& store, int64_t session_id);
// The stored runs of the report's trials (the runs `report --session S` covers), ascending.
std::vector<int64_t> report_tuning_run_ids(const TuningReport& report);

// One row per trial of every session (columns: docs/reports.md, "trials").
ReportTable report_trials_table(const TuningReport& report);

// The HTML of the tuning section (empty when there is no session), drawn with the report's
// charts (results/html_report.hpp html_chart).
std::string report_tuning_html(const TuningReport& report, const HtmlReportOptions& options);

}  // namespace dsgd
