// See tune_validate.hpp.
#include "tuner/tune_validate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "algorithms/config_check.hpp"
#include "cluster/launcher.hpp"
#include "core/errors.hpp"
#include "core/system_info.hpp"
#include "engine/child_run.hpp"
#include "results/sqlite.hpp"
#include "results/tune_store.hpp"

namespace dsgd {

namespace {

// The MPI run of a sim trial's configuration: same workload, algorithm, knobs, cluster flags and
// seed; the simulator's own flags dropped; the trial's steps (see the header).
RunConfig mpi_config(const TrialRow& trial, const TuneSessionRow& session, const std::string& db, int64_t rank) {
  RunConfig cfg;
  run_config_apply_json(cfg, nlohmann::json::parse(trial.config_json), fmt::format("trial {}", trial.id));
  if (cfg.target.empty()) cfg.target = session.target;  // the run measures time-to-target against it
  cfg.backend = "mpi";
  cfg.timing_only = false;
  cfg.profile_from = 0;
  cfg.compute_scale = 1.0;
  cfg.native_floor = false;
  cfg.save_params.clear();
  cfg.db = db;
  cfg.tag = fmt::format("tune-validate:session={},rank={}", session.id, rank);
  const int64_t every = std::max<int64_t>(cfg.eval_every, 1);
  const int64_t wanted = std::max<int64_t>(trial.steps, 1);
  cfg.epochs = 0;
  cfg.steps = (wanted + every - 1) / every * every;
  return cfg;
}

}  // namespace

TopValidationPlan tune_validate_plan(const Store& store, int64_t session_id, int64_t top_k, const char* flag) {
  const TuneSessionRow session = tune_session_get(store, session_id);
  if (session.status != TuneSessionStatus::session_completed || session.result_json.empty())
    DSGD_THROW(InputError, fmt::format("finish it first: dsgd-tune recommend --resume {}", session_id),
               "session {} is {}: it has no ranking to validate", session_id, tune_session_status_text(session.status));
  const nlohmann::json ranking = nlohmann::json::parse(session.result_json).value("ranking", nlohmann::json::array());
  if (top_k < 1 || top_k > static_cast<int64_t>(ranking.size()))
    DSGD_THROW(
        InputError,
        fmt::format("pass {} 1..{} (the session ranked {} configurations)", flag, ranking.size(), ranking.size()),
        "{} {} is not in 1..{}", flag, top_k, ranking.size());
  const std::vector<TrialRow> trials = tune_trials_get(store, session_id);
  TopValidationPlan plan;
  plan.session_id = session_id;
  plan.top_k = top_k;
  for (int64_t k = 0; k < top_k; ++k) {
    const nlohmann::json& entry = ranking[static_cast<size_t>(k)];
    const int64_t run_id = entry.value("run_id", int64_t(0));
    const auto trial =
        std::find_if(trials.begin(), trials.end(), [&](const TrialRow& t) { return t.run_id == run_id; });
    if (run_id == 0 || trial == trials.end() || trial->status != TrialStatus::trial_completed)
      DSGD_THROW(InputError, fmt::format("pass a smaller {}", flag),
                 "session {}: configuration {} ({}) has no completed sim trial to compare with", session_id, k + 1,
                 entry.value("config", std::string("?")));
    plan.runs.push_back(mpi_config(*trial, session, store.path(), k + 1));
    TopValidationRow row;
    row.rank = k + 1;
    row.config_key = trial->config_key;
    row.sim_run_id = run_id;
    if (trial->reached) row.predicted_time_s = trial->time_s;
    row.predicted_step_s = trial->step_s;
    row.measured_steps = plan.runs.back().steps;
    plan.rows.push_back(row);
  }
  plan.warning = tune_validate_check_workers(plan.runs.front().workers, plan.runs.front().hostfile, flag);
  for (const RunConfig& cfg : plan.runs) config_validate(cfg);
  return plan;
}

std::string tune_validate_check_workers(int64_t workers, const std::string& hostfile, const char* flag,
                                        const std::string& hint) {
  if (workers <= 1 || !hostfile.empty()) return {};
  try {
    return launcher_check_local_ranks(static_cast<int>(workers), system_info_read().cores, false);
  } catch (const InputError& e) {
    DSGD_THROW(InputError,
               hint.empty() ? std::string("validate on a machine with more cores, or give the session's configuration "
                                          "a hostfile (mpiexec -f)")
                            : hint,
               "{}: {} workers are more MPI ranks than this machine runs: {}", flag, workers, e.what());
  }
}

bool tune_validate_predicted_tie(const std::vector<TopValidationRow>& rows) {
  return rows.size() >= 2 && rows[0].predicted_time_s && rows[1].predicted_time_s &&
         *rows[0].predicted_time_s == *rows[1].predicted_time_s;
}

std::optional<bool> tune_validate_ranking_agrees(const std::vector<TopValidationRow>& rows) {
  if (rows.size() < 2 || tune_validate_predicted_tie(rows)) return std::nullopt;
  const auto& a = rows[0].measured_time_s;
  const auto& b = rows[1].measured_time_s;
  if (a && b) return *a <= *b;
  if (a || b) return a.has_value();
  return std::nullopt;
}

TopValidation tune_validate_run(const TopValidationPlan& plan, Store& store, ValidationObserver& observer) {
  TopValidation v;
  v.session_id = plan.session_id;
  v.top_k = plan.top_k;
  v.host = system_info_read().host;
  v.rows = plan.rows;
  const int total = static_cast<int>(plan.runs.size());
  for (int i = 0; i < total; ++i) {
    const RunConfig& cfg = plan.runs[static_cast<size_t>(i)];
    TopValidationRow& row = v.rows[static_cast<size_t>(i)];
    observer.child_begin(fmt::format("rank {}: {}", row.rank, row.config_key),
                         fmt::format("mpi, {} ranks, {} steps", cfg.workers, cfg.steps), i + 1, total);
    row.mpi_run_id = child_run_config(cfg, fmt::format("validation of rank {}", row.rank), "",
                                      [&](const std::string& line) { observer.child_line(line); });
    const RunWithSummary m = store.run_get(row.mpi_run_id);
    if (!m.summary) DSGD_THROW(Error, "", "validation: MPI run {} has no summary", row.mpi_run_id);
    row.measured_time_s = m.summary->time_to_target_s;
    row.measured_step_s = m.summary->step_time_s;
  }
  v.ranking_agrees = tune_validate_ranking_agrees(v.rows);
  v.created_at = system_time_iso8601();
  tune_validation_insert(store, v);
  return v;
}

}  // namespace dsgd
