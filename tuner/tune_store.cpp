// See tune_store.hpp.
#include "tuner/tune_store.hpp"

#include <fmt/format.h>

#include "core/errors.hpp"
#include "core/system_info.hpp"
#include "results/sqlite.hpp"

namespace dsgd {

namespace {

bool tuner_tables_exist(const Store& store) {
  SqlStatement stmt(store.handle(), "SELECT count(*) FROM sqlite_master WHERE type='table' AND name='tune_sessions'");
  return stmt.step() && stmt.column_int64(0) > 0;
}

constexpr const char* session_columns =
    "id, created_at, finished_at, status, target, seed, spec_json, result_json, host, git_commit, error, kind";

TuneSessionRow session_read(const SqlStatement& s) {
  TuneSessionRow r;
  int c = 0;
  r.id = s.column_int64(c++);
  r.created_at = s.column_text(c++);
  r.finished_at = s.column_text(c++);
  r.status = s.column_text(c++);
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

int64_t tune_session_begin(Store& store, const TuneSessionRow& row) {
  const SystemInfo sys = system_info_read();
  SqlStatement stmt(store.handle(),
                    "INSERT INTO tune_sessions (created_at, status, target, seed, spec_json, host, git_commit, kind) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?)");
  stmt.bind_all(system_time_iso8601(), std::string("running"), row.target, std::to_string(row.seed), row.spec_json,
                sys.host, sys.git_commit, row.kind.empty() ? std::string("recommend") : row.kind);
  stmt.run();
  SqlStatement id(store.handle(), "SELECT last_insert_rowid()");
  id.step();
  return id.column_int64(0);
}

void tune_session_set_status(Store& store, int64_t id, const std::string& status) {
  SqlStatement stmt(store.handle(), "UPDATE tune_sessions SET status = ?, finished_at = NULL WHERE id = ?");
  stmt.bind_all(status, id);
  stmt.run();
}

void tune_session_finish(Store& store, int64_t id, const std::string& status, const std::string& result_json,
                         const std::string& error) {
  SqlStatement stmt(store.handle(),
                    "UPDATE tune_sessions SET status = ?, finished_at = ?, result_json = ?, error = ? WHERE id = ?");
  stmt.bind(1, status);
  stmt.bind(2, system_time_iso8601());
  stmt.bind_text_or_null(3, result_json);
  stmt.bind_text_or_null(4, error);
  stmt.bind(5, id);
  stmt.run();
}

TuneSessionRow tune_session_get(const Store& store, int64_t id) {
  if (tuner_tables_exist(store)) {
    SqlStatement stmt(store.handle(), fmt::format("SELECT {} FROM tune_sessions WHERE id = ?", session_columns));
    stmt.bind(1, id);
    if (stmt.step()) return session_read(stmt);
  }
  DSGD_THROW(InputError, "list the sessions with `dsgd-tune sessions --db PATH`", "no tuning session {} in '{}'", id,
             store.path());
}

std::vector<TuneSessionRow> tune_sessions_list(const Store& store) {
  std::vector<TuneSessionRow> out;
  if (!tuner_tables_exist(store)) return out;
  SqlStatement stmt(store.handle(), fmt::format("SELECT {} FROM tune_sessions ORDER BY id DESC", session_columns));
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
  stmt.bind(++c, r.status);
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
  if (!tuner_tables_exist(store)) return out;
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
    r.status = stmt.column_text(c++);
    r.stop_reason = stmt.column_text(c++);
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

}  // namespace dsgd
