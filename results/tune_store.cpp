// See tune_store.hpp.
#include "results/tune_store.hpp"

#include <fmt/format.h>

#include "core/errors.hpp"
#include "core/system_info.hpp"
#include "results/sqlite.hpp"

namespace dsgd {

namespace {

// A database opened read-only is not migrated: before schema v12 a session has no kind
// (every one was a recommend).
std::string session_columns(const Store& store) {
  return fmt::format(
      "id, created_at, finished_at, status, target, seed, spec_json, result_json, host, git_commit, "
      "error, {}",
      store.user_version() >= 12 ? "kind" : "'recommend'");
}

TuneSessionRow session_read(const SqlStatement& s) {
  TuneSessionRow r;
  int c = 0;
  r.id = s.column_int64(c++);
  r.created_at = s.column_text(c++);
  r.finished_at = s.column_text(c++);
  r.status = tune_session_status_parse(s.column_text(c++));
  r.target = s.column_text(c++);
  r.seed = std::stoull("0" + s.column_text(c++));
  r.spec_json = s.column_text(c++);
  r.result_json = s.column_text(c++);
  r.host = s.column_text(c++);
  r.git_commit = s.column_text(c++);
  r.error = s.column_text(c++);
  r.kind = s.column_text(c++);
  return r;
}

constexpr const char* trial_columns =
    "id, session_id, trial_key, phase, config_key, config_json, seed, budget_s, run_id, status, stop_reason, reached, "
    "time_s, progress, steps, step_s, compute_s, comm_s, wait_s, bytes_per_step, wall_s, created_at";

}  // namespace

bool tune_tables_exist(const Store& store) {
  return sql_table_exists(store.handle(), "tune_sessions") && sql_table_exists(store.handle(), "trials");
}

int64_t tune_session_begin(Store& store, const TuneSessionRow& row) {
  const SystemInfo sys = system_info_read();
  SqlStatement stmt(store.handle(),
                    "INSERT INTO tune_sessions (created_at, status, target, seed, spec_json, host, git_commit, kind) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?)");
  stmt.bind_all(system_time_iso8601(), tune_session_status_text(TuneSessionStatus::session_running), row.target,
                std::to_string(row.seed), row.spec_json, sys.host, sys.git_commit,
                row.kind.empty() ? std::string("recommend") : row.kind);
  stmt.run();
  SqlStatement id(store.handle(), "SELECT last_insert_rowid()");
  id.step();
  return id.column_int64(0);
}

void tune_session_set_status(Store& store, int64_t id, TuneSessionStatus status) {
  SqlStatement stmt(store.handle(), "UPDATE tune_sessions SET status = ?, finished_at = NULL WHERE id = ?");
  stmt.bind_all(tune_session_status_text(status), id);
  stmt.run();
}

void tune_session_set_spec(Store& store, int64_t id, const std::string& spec_json) {
  SqlStatement stmt(store.handle(), "UPDATE tune_sessions SET spec_json = ? WHERE id = ?");
  stmt.bind_all(spec_json, id);
  stmt.run();
}

void tune_session_finish(Store& store, int64_t id, TuneSessionStatus status, const std::string& result_json,
                         const std::string& error) {
  SqlStatement stmt(store.handle(),
                    "UPDATE tune_sessions SET status = ?, finished_at = ?, result_json = ?, error = ? WHERE id = ?");
  stmt.bind(1, tune_session_status_text(status));
  stmt.bind(2, system_time_iso8601());
  stmt.bind_text_or_null(3, result_json);
  stmt.bind_text_or_null(4, error);
  stmt.bind(5, id);
  stmt.run();
}

TuneSessionRow tune_session_get(const Store& store, int64_t id) {
  if (tune_tables_exist(store)) {
    SqlStatement stmt(store.handle(), fmt::format("SELECT {} FROM tune_sessions WHERE id = ?", session_columns(store)));
    stmt.bind(1, id);
    if (stmt.step()) return session_read(stmt);
  }
  DSGD_THROW(InputError, "list the sessions with `dsgd-tune sessions --db PATH`", "no tuning session {} in '{}'", id,
             store.path());
}

std::vector<TuneSessionRow> tune_sessions_list(const Store& store) {
  std::vector<TuneSessionRow> out;
  if (!tune_tables_exist(store)) return out;
  SqlStatement stmt(store.handle(),
                    fmt::format("SELECT {} FROM tune_sessions ORDER BY id DESC", session_columns(store)));
  while (stmt.step()) out.push_back(session_read(stmt));
  return out;
}

int64_t tune_session_trial_count(const Store& store, int64_t id) {
  SqlStatement stmt(store.handle(), "SELECT count(*) FROM trials WHERE session_id = ?");
  stmt.bind(1, id);
  return stmt.step() ? stmt.column_int64(0) : 0;
}

void tune_trial_insert(Store& store, const TrialRow& r) {
  SqlStatement stmt(
      store.handle(),
      "INSERT INTO trials (session_id, trial_key, phase, config_key, config_json, seed, budget_s, run_id, "
      "status, stop_reason, reached, time_s, progress, steps, step_s, compute_s, comm_s, wait_s, "
      "bytes_per_step, wall_s, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
      "?, ?, ?)");
  int c = 0;
  stmt.bind(++c, r.session_id);
  stmt.bind(++c, r.trial_key);
  stmt.bind(++c, r.phase);
  stmt.bind(++c, r.config_key);
  stmt.bind(++c, r.config_json);
  stmt.bind(++c, std::to_string(r.seed));
  stmt.bind(++c, r.budget_s);
  if (r.run_id > 0)
    stmt.bind(++c, r.run_id);
  else
    stmt.bind(++c, nullptr);
  stmt.bind(++c, trial_status_text(r.status));
  stmt.bind(++c, r.stop_reason);
  stmt.bind(++c, r.reached);
  stmt.bind(++c, r.time_s);
  stmt.bind(++c, r.progress);
  stmt.bind(++c, r.steps);
  stmt.bind(++c, r.step_s);
  stmt.bind(++c, r.compute_s);
  stmt.bind(++c, r.comm_s);
  stmt.bind(++c, r.wait_s);
  stmt.bind(++c, r.bytes_per_step);
  stmt.bind(++c, r.wall_s);
  stmt.bind(++c, system_time_iso8601());
  stmt.run();
}

std::vector<TrialRow> tune_trials_get(const Store& store, int64_t session_id) {
  std::vector<TrialRow> out;
  if (!tune_tables_exist(store)) return out;
  SqlStatement stmt(store.handle(),
                    fmt::format("SELECT {} FROM trials WHERE session_id = ? ORDER BY id", trial_columns));
  stmt.bind(1, session_id);
  while (stmt.step()) {
    TrialRow r;
    int c = 0;
    r.id = stmt.column_int64(c++);
    r.session_id = stmt.column_int64(c++);
    r.trial_key = stmt.column_text(c++);
    r.phase = stmt.column_text(c++);
    r.config_key = stmt.column_text(c++);
    r.config_json = stmt.column_text(c++);
    r.seed = std::stoull("0" + stmt.column_text(c++));
    r.budget_s = stmt.column_real(c++);
    r.run_id = stmt.column_int64(c++);
    r.status = trial_status_parse(stmt.column_text(c++));
    r.stop_reason = stmt.column_text(c++);
    r.stop_kind = trial_stop_kind_of_reason(r.stop_reason);
    r.reached = stmt.column_int64(c++) != 0;
    r.time_s = stmt.column_real(c++);
    r.progress = stmt.column_real(c++);
    r.steps = stmt.column_int64(c++);
    r.step_s = stmt.column_real(c++);
    r.compute_s = stmt.column_real(c++);
    r.comm_s = stmt.column_real(c++);
    r.wait_s = stmt.column_real(c++);
    r.bytes_per_step = stmt.column_real(c++);
    r.wall_s = stmt.column_real(c++);
    r.created_at = stmt.column_text(c++);
    out.push_back(std::move(r));
  }
  return out;
}

void tune_validation_insert(Store& store, TopValidation& v) {
  SqlTransaction transaction(store.handle());
  SqlStatement head(store.handle(),
                    "INSERT INTO tune_validations (session_id, created_at, top_k, host, ranking_agrees) "
                    "VALUES (?, ?, ?, ?, ?)");
  head.bind_all(v.session_id, v.created_at, v.top_k, v.host);
  if (v.ranking_agrees)
    head.bind(5, *v.ranking_agrees);
  else
    head.bind(5, nullptr);
  head.run();
  SqlStatement id(store.handle(), "SELECT last_insert_rowid()");
  id.step();
  v.id = id.column_int64(0);
  SqlStatement row_stmt(store.handle(),
                        "INSERT INTO tune_validation_configs (validation_id, rank, config_key, sim_run_id, mpi_run_id, "
                        "predicted_time_s, measured_time_s, predicted_step_s, measured_step_s, measured_steps) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  for (const TopValidationRow& r : v.rows) {
    row_stmt.bind_all(v.id, r.rank, r.config_key, r.sim_run_id, r.mpi_run_id, r.predicted_time_s, r.measured_time_s,
                      r.predicted_step_s, r.measured_step_s, r.measured_steps);
    row_stmt.run();
  }
  transaction.commit();
}

std::vector<TopValidation> tune_validations_get(const Store& store, int64_t session_id) {
  std::vector<TopValidation> out;
  if (!sql_table_exists(store.handle(), "tune_validations") ||
      !sql_table_exists(store.handle(), "tune_validation_configs"))
    return out;
  SqlStatement head(store.handle(),
                    "SELECT id, created_at, top_k, host, ranking_agrees FROM tune_validations WHERE session_id = ? "
                    "ORDER BY id");
  head.bind(1, session_id);
  while (head.step()) {
    TopValidation v;
    v.id = head.column_int64(0);
    v.session_id = session_id;
    v.created_at = head.column_text(1);
    v.top_k = head.column_int64(2);
    v.host = head.column_text(3);
    if (!head.column_is_null(4)) v.ranking_agrees = head.column_int64(4) != 0;
    SqlStatement rows(store.handle(),
                      "SELECT rank, config_key, sim_run_id, mpi_run_id, predicted_time_s, measured_time_s, "
                      "predicted_step_s, measured_step_s, measured_steps FROM tune_validation_configs "
                      "WHERE validation_id = ? ORDER BY rank");
    rows.bind(1, v.id);
    while (rows.step()) {
      TopValidationRow r;
      r.rank = rows.column_int64(0);
      r.config_key = rows.column_text(1);
      r.sim_run_id = rows.column_int64(2);
      r.mpi_run_id = rows.column_int64(3);
      r.predicted_time_s = rows.column_optional_real(4);
      r.measured_time_s = rows.column_optional_real(5);
      r.predicted_step_s = rows.column_real(6);
      r.measured_step_s = rows.column_real(7);
      r.measured_steps = rows.column_int64(8);
      v.rows.push_back(r);
    }
    out.push_back(std::move(v));
  }
  return out;
}

}  // namespace dsgd
