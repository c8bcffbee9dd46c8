// The SQLite results store (see store.hpp).
//
// Opening for writing (Store::open) refuses before creating or touching anything: the
// directory must exist and be writable (WAL keeps -wal/-shm files beside the database),
// an existing file must be a SQLite database of a schema this build knows; that check
// reads the file header itself (no sqlite connection, so no -wal/-shm files appear) and
// is repeated through the connection before anything is written (a -wal file may hold a
// newer version than the header). Then WAL, synchronous=NORMAL, a 5 s busy
// timeout and foreign keys are set, and migrations bring the schema up to date, one
// transaction per version. Runs finished before summaries existed (schema v1) get their
// summary computed from their rows right after migrating.
//
// Refusals also cover files that are not dsgd-bench databases: an invalid SQLite header,
// another application_id, tables without a schema version (FileHeader, pragma_int). An
// existing file gets PRAGMA quick_check before anything is written (StoreOpenOptions).
// Both opens then look for dead runs (runs_find_dead, results/run_liveness.hpp).
//
// Opening read-only (Store::open_readonly, for `runs` / `show`) never writes, not even
// to migrate (it marks dead runs `killed` through a separate short-lived writer when it
// can, see store.hpp): an older schema is read as far as it goes (v2: no injected_s, read as 0,
// and no calibrations; v1: also no target and no stored summaries, so summaries read as
// absent; v0: no runs). A newer schema is refused.
// Like any read-only sqlite connection to a WAL database, it may leave empty -wal/-shm
// files behind; the next writer uses and removes them.
//
// Conventions: runs_list(limit) with limit <= 0 lists every run. Empty target / error /
// finished_at are stored as NULL. seed is stored as decimal text (exact for all uint64).
// SQLite stores NaN as NULL; step and evaluation values read back as NaN in that case,
// except injected_s, whose NULL means "written before v3" and reads back as 0.
// The calibration tables' methods are in results/calibration_store.cpp.
// Connections are opened without sqlite's per-call mutex: a Store may move between
// threads but must not be used by two at once (only rank 0's writer uses it).
#include "results/store.hpp"

#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <type_traits>
#include <utility>
#include <variant>

#include "core/errors.hpp"
#include "core/system_info.hpp"
#include "results/migrations.hpp"
#include "results/row_fields.hpp"
#include "results/run_liveness.hpp"
#include "results/run_status.hpp"
#include "results/sqlite.hpp"
#include "results/store_file.hpp"
#include "results/target.hpp"

namespace dsgd {

using namespace store_detail;

namespace {

namespace fs = std::filesystem;

// ---- row mapping -------------------------------------------------------------------------

// Columns of runs in RunRecord order; {target} is replaced by the column or NULL (v1).
constexpr const char* run_columns =
    "runs.id, runs.created_at, runs.status, runs.workload, runs.dataset, runs.algorithm, "
    "runs.backend, runs.workers, runs.batch, runs.period, runs.steps, runs.warmup, runs.seed, "
    "runs.tag, runs.config_json, {}, runs.tool_version, runs.git_commit, runs.host, "
    "runs.cpu_model, runs.mpi_version, runs.build_type, runs.error, runs.finished_at, {}";
constexpr int run_column_count = 27;
// The v8 columns of runs_columns' second {}.
constexpr const char* run_columns_v8 = "runs.pid, runs.heartbeat_at, runs.launch_id";
constexpr const char* run_columns_before_v8 = "NULL, NULL, NULL";

uint64_t seed_read(const SqlStatement& stmt, int col, int64_t run_id) {
  if (stmt.column_is_integer(col)) return static_cast<uint64_t>(stmt.column_int64(col));
  std::string text = stmt.column_text(col);
  uint64_t seed = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), seed);
  if (ec != std::errc() || end != text.data() + text.size()) {
    DSGD_THROW(Error, "", "run {} has a malformed seed '{}' in the database", run_id, text);
  }
  return seed;
}

RunRecord run_read(const SqlStatement& stmt) {
  RunRecord run;
  int c = 0;
  run.id = stmt.column_int64(c++);
  run.created_at = stmt.column_text(c++);
  run.status = run_status_parse(stmt.column_text(c++));
  run.workload = stmt.column_text(c++);
  run.dataset = stmt.column_text(c++);
  run.algorithm = stmt.column_text(c++);
  run.backend = stmt.column_text(c++);
  run.workers = static_cast<int>(stmt.column_int64(c++));
  run.batch = stmt.column_int64(c++);
  run.period = stmt.column_int64(c++);
  run.steps = stmt.column_int64(c++);
  run.warmup = stmt.column_int64(c++);
  run.seed = seed_read(stmt, c++, run.id);
  run.tag = stmt.column_text(c++);
  run.config_json = stmt.column_text(c++);
  run.target = stmt.column_text(c++);
  run.tool_version = stmt.column_text(c++);
  run.git_commit = stmt.column_text(c++);
  run.host = stmt.column_text(c++);
  run.cpu_model = stmt.column_text(c++);
  run.mpi_version = stmt.column_text(c++);
  run.build_type = stmt.column_text(c++);
  run.error = stmt.column_text(c++);
  run.finished_at = stmt.column_text(c++);
  run.pid = stmt.column_int64(c++);
  run.heartbeat_at = stmt.column_text(c++);
  run.launch_id = stmt.column_text(c++);
  return run;
}

// The columns of `fields` a database at `version` has, comma-separated, each after `prefix`;
// a column added after `version` (and a derived field, which has none) is left out and its
// member keeps its default.
template <class Row>
std::string field_columns(const std::vector<RowField<Row>>& fields, int version, const char* prefix = "") {
  std::string sql;
  for (const RowField<Row>& f : fields) {
    if (f.since_version > version || !f.stored()) continue;
    if (!sql.empty()) sql += ", ";
    sql += prefix;
    sql += f.column;
  }
  return sql;
}

// Reads the columns selected by field_columns(fields, version) from the current row, the
// first at column `first`.
template <class Row>
void fields_read(const SqlStatement& stmt, const std::vector<RowField<Row>>& fields, int version, Row& row,
                 int first = 0) {
  int c = first;
  for (const RowField<Row>& f : fields) {
    if (f.since_version > version || !f.stored()) continue;
    std::visit(
        [&](auto member) {
          using M = std::decay_t<decltype(row.*member)>;
          if constexpr (std::is_same_v<M, std::optional<double>>)
            row.*member = stmt.column_optional_real(c);
          else if constexpr (std::is_same_v<M, std::optional<int64_t>>)
            row.*member = stmt.column_optional_int64(c);
          else if constexpr (std::is_same_v<M, double>)
            row.*member = f.null_is_zero && stmt.column_is_null(c) ? 0.0 : stmt.column_real(c);
          else if constexpr (std::is_same_v<M, bool>)
            row.*member = stmt.column_int64(c) != 0;
          else
            row.*member = static_cast<M>(stmt.column_int64(c));
        },
        f.member);
    ++c;
  }
}

// The summary after column `first` (summaries.run_id: NULL when the LEFT JOIN found none).
std::optional<Summary> summary_read(const SqlStatement& stmt, int first, int version) {
  if (stmt.column_is_null(first)) return std::nullopt;
  Summary s;
  fields_read(stmt, summary_fields(), version, s, first + 1);
  return s;
}

// SELECT of runs (with their summary from schema v2 on) followed by `rest`
// (WHERE / ORDER BY / LIMIT on runs.*).
std::string run_select_sql(int version, const char* rest) {
  if (version >= 2) {
    return fmt::format(
        "SELECT {}, summaries.run_id, {} FROM runs LEFT JOIN summaries ON summaries.run_id = runs.id {}",
        fmt::format(fmt::runtime(run_columns), "runs.target", version >= 8 ? run_columns_v8 : run_columns_before_v8),
        field_columns(summary_fields(), version, "summaries."), rest);
  }
  return fmt::format("SELECT {} FROM runs {}", fmt::format(fmt::runtime(run_columns), "NULL", run_columns_before_v8),
                     rest);
}

RunWithSummary run_with_summary_read(const SqlStatement& stmt, int version) {
  RunWithSummary result;
  result.run = run_read(stmt);
  if (version >= 2) result.summary = summary_read(stmt, run_column_count, version);
  return result;
}

template <class Row>
std::vector<Row> rows_read(sqlite3* db, const char* table, const std::vector<RowField<Row>>& fields, int version,
                           int64_t run_id, const char* order) {
  SqlStatement stmt(
      db, fmt::format("SELECT {} FROM {} WHERE run_id = ? ORDER BY {}", field_columns(fields, version), table, order));
  stmt.bind(1, run_id);
  std::vector<Row> rows;
  while (stmt.step()) fields_read(stmt, fields, version, rows.emplace_back());
  return rows;
}

// Inserts rows into `table` under run_id, one column per stored field (the current schema);
// `verb` is INSERT or INSERT OR REPLACE.
template <class Row>
void rows_insert(sqlite3* db, const char* table, const std::vector<RowField<Row>>& fields, int64_t run_id,
                 const Row* rows, size_t count, const char* verb = "INSERT") {
  std::string placeholders = "?";
  for (const RowField<Row>& f : fields)
    if (f.stored()) placeholders += ", ?";
  SqlStatement stmt(db, fmt::format("{} INTO {} (run_id, {}) VALUES ({})", verb, table,
                                    field_columns(fields, Store::schema_version()), placeholders));
  for (size_t r = 0; r < count; ++r) {
    stmt.bind(1, run_id);
    int index = 2;
    for (const RowField<Row>& f : fields)
      if (f.stored()) std::visit([&](auto member) { stmt.bind(index++, rows[r].*member); }, f.member);
    stmt.run();
  }
}

std::vector<StepRow> steps_read(sqlite3* db, int version, int64_t run_id) {
  return rows_read(db, "steps", step_fields(), version, run_id, "step, rank");
}

std::vector<EvalRow> evals_read(sqlite3* db, int version, int64_t run_id) {
  return rows_read(db, "evals", eval_fields(), version, run_id, "step");
}

std::optional<RunRecord> run_find(sqlite3* db, int version, int64_t run_id) {
  SqlStatement stmt(db, run_select_sql(version, "WHERE runs.id = ?"));
  stmt.bind(1, run_id);
  if (!stmt.step()) return std::nullopt;
  return run_read(stmt);
}

[[noreturn]] void run_throw_not_found(const std::string& path, int64_t run_id) {
  DSGD_THROW(InputError, "`dsgd-bench runs` lists the stored runs", "run {} not found in DB '{}'", run_id, path);
}

void summary_write(sqlite3* db, int64_t run_id, const Summary& s) {
  rows_insert(db, "summaries", summary_fields(), run_id, &s, 1, "INSERT OR REPLACE");
}

// Whether the connection can read the schema at all (a WAL database in a directory where
// the -shm index cannot be created fails here with SQLITE_READONLY / SQLITE_CANTOPEN).
bool schema_readable(sqlite3* db) {
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v2(db, "SELECT count(*) FROM sqlite_master", -1, &stmt, nullptr);
  if (rc == SQLITE_OK) rc = sqlite3_step(stmt);
  sqlite3_finalize(stmt);
  const int primary = rc & 0xff;
  return !(primary == SQLITE_READONLY || primary == SQLITE_CANTOPEN);
}

// The run's last sign of life: every flush of the writer.
void heartbeat_write(sqlite3* db, int64_t run_id) {
  SqlStatement stmt(db, "UPDATE runs SET heartbeat_at = ? WHERE id = ? AND status = 'running'");
  stmt.bind_all(system_time_iso8601(), run_id);
  stmt.run();
}

// After migrating to v2: runs that finished under v1 have no summary; compute it.
void summaries_backfill(sqlite3* db) {
  SqlTransaction transaction(db);
  std::vector<int64_t> ids;
  {
    SqlStatement stmt(db,
                      "SELECT id FROM runs WHERE status <> 'running' AND id NOT IN "
                      "(SELECT run_id FROM summaries) ORDER BY id");
    while (stmt.step()) ids.push_back(stmt.column_int64(0));
  }
  for (int64_t id : ids) {
    std::optional<RunRecord> run = run_find(db, Store::schema_version(), id);
    summary_write(db, id,
                  summary_compute(*run, steps_read(db, Store::schema_version(), id),
                                  evals_read(db, Store::schema_version(), id)));
  }
  transaction.commit();
}

}  // namespace

// ---- Store ---------------------------------------------------------------------------------

int Store::schema_version() {
  return static_cast<int>(migrations_all().size());
}

Store Store::open(const std::string& path, const StoreOpenOptions& options) {
  path_check_writable(path);
  std::error_code ec;
  bool existed = false;
  if (fs::exists(path, ec)) {
    const FileHeader header = header_read(path);
    version_check_not_newer(path, header.user_version, header.application_id);
    existed = fs::file_size(path, ec) > 0;
  }

  // As a file: URI, so that the connection reads URIs in ATTACH (results/run_copy.cpp attaches
  // with mode=rw: a file removed meanwhile is not created again) while --db stays a plain path.
  Connection db =
      connection_open(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_URI,
                      sqlite_file_uri(path, ""));
  const int version = version_check_connection(db.get(), path);
  // quick_check reads the whole file (0.05-0.24 s for 100k step rows, 11 MB, on this
  // 2-core machine: docs/reports.md); past integrity_check_max_bytes it would take
  // seconds at every open, so it is left to `sqlite3 DB 'PRAGMA quick_check'`.
  if (existed && options.integrity_check && fs::file_size(path, ec) <= integrity_check_max_bytes)
    integrity_check(db.get(), path);
  {
    SqlStatement journal(db.get(), "PRAGMA journal_mode = WAL");
    std::string mode = journal.step() ? journal.column_text(0) : std::string();
    if (mode != "wal") {
      DSGD_THROW(InputError, "put the database on a local file system or pass another --db",
                 "cannot open database '{}': WAL journal mode is not available (got '{}')", path, mode);
    }
  }
  sql_exec(db.get(), "PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON");
  if (version < schema_version()) {
    migrations_apply(db.get(), version, schema_version());
    if (version < 2) summaries_backfill(db.get());
  }
  Store store(db.release(), path);
  if (options.reap_dead_runs) {
    try {
      store.runs_reap_dead();
    } catch (const Error&) {
      // Opportunistic (e.g. another writer holds the lock): the next open tries again.
    }
  }
  return store;
}

Store Store::open_readonly(const std::string& path) {
  std::error_code ec;
  if (path.empty() || !fs::exists(path, ec)) {
    DSGD_THROW(InputError, "run `dsgd-bench run` first or pass --db", "no database at '{}'", path);
  }
  file_check_regular(path);
  const FileHeader header = header_read(path);
  version_check_not_newer(path, header.user_version, header.application_id);
  Connection db = connection_open(path, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX);
  bool immutable = false;
  if (!schema_readable(db.get())) {
    // A WAL database whose directory we cannot write: SQLite cannot create the -shm
    // index. Read the file as immutable (correct when no -wal holds unmerged changes,
    // which is the case after every clean close).
    db = connection_open(path, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_URI,
                         sqlite_file_uri(path, "immutable=1"));
    immutable = true;
    if (fs::file_size(path + "-wal", ec) > 0 && !ec)
      std::fprintf(stderr,
                   "dsgd-bench: note: '%s' is read without its -wal file (the directory is not writable); changes "
                   "not yet checkpointed are not shown\n",
                   path.c_str());
  }
  const int version = version_check_connection(db.get(), path);
  Store store(db.release(), path);
  if (version >= 8) {
    std::vector<std::pair<int64_t, std::string>> dead = store.runs_find_dead();
    if (!dead.empty()) {
      try {
        if (immutable) throw Error("read as immutable");
        Store writer = Store::open(path, StoreOpenOptions{false, false});
        writer.runs_mark_killed(dead);
      } catch (const std::exception&) {
        store.killed_unwritten_ = std::move(dead);  // shown as killed, stored as running
      }
    }
  }
  return store;
}

Store::Store(Store&& other) noexcept
    : db_(std::exchange(other.db_, nullptr)),
      path_(std::move(other.path_)),
      killed_unwritten_(std::move(other.killed_unwritten_)),
      checked_alive_(std::move(other.checked_alive_)),
      begin_cpu_(std::move(other.begin_cpu_)),
      model_pass_(std::move(other.model_pass_)) {}

Store& Store::operator=(Store&& other) noexcept {
  if (this != &other) {
    sqlite3_close_v2(db_);
    db_ = std::exchange(other.db_, nullptr);
    path_ = std::move(other.path_);
    killed_unwritten_ = std::move(other.killed_unwritten_);
    checked_alive_ = std::move(other.checked_alive_);
    begin_cpu_ = std::move(other.begin_cpu_);
    model_pass_ = std::move(other.model_pass_);
  }
  return *this;
}

Store::~Store() {
  sqlite3_close_v2(db_);
}

int Store::user_version() const {
  return user_version_read(db_);
}

int64_t Store::run_begin(const RunRecord& run) {
  target_parse(run.target);  // refuse a malformed target before anything is stored
  SqlStatement stmt(db_,
                    "INSERT INTO runs (created_at, status, workload, dataset, algorithm, "
                    "backend, workers, batch, period, steps, warmup, seed, tag, config_json, "
                    "target, tool_version, git_commit, host, cpu_model, mpi_version, "
                    "build_type, pid, pid_start, pid_scope, heartbeat_at, launch_id) VALUES (?, 'running', ?, ?, ?, "
                    "?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  stmt.bind_all(run.created_at.empty() ? system_time_iso8601() : run.created_at, run.workload, run.dataset,
                run.algorithm, run.backend, run.workers, run.batch, run.period, run.steps, run.warmup,
                std::to_string(run.seed), run.tag, run.config_json);
  stmt.bind_text_or_null(14, run.target);
  int index = 15;
  for (const std::string* text :
       {&run.tool_version, &run.git_commit, &run.host, &run.cpu_model, &run.mpi_version, &run.build_type}) {
    stmt.bind(index++, *text);
  }
  // The writer (this process) and the launch, so a killed run is recognised (run_liveness.hpp).
  const ProcessIdentity self = process_identity_self();
  stmt.bind(index++, self.pid);
  stmt.bind(index++, self.start_ticks);
  stmt.bind(index++, self.scope);
  stmt.bind(index++, system_time_iso8601());
  const char* launch = std::getenv("DSGD_LAUNCH_ID");
  stmt.bind_text_or_null(index++, launch ? launch : "");
  stmt.run();
  const int64_t id = sqlite3_last_insert_rowid(db_);
  if (const std::optional<CpuTimes> cpu = system_cpu_times()) begin_cpu_.emplace_back(id, *cpu);
  return id;
}

void Store::steps_append(int64_t run_id, const std::vector<StepRow>& rows) {
  if (rows.empty()) return;
  SqlTransaction transaction(db_);
  rows_insert(db_, "steps", step_fields(), run_id, rows.data(), rows.size());
  heartbeat_write(db_, run_id);
  transaction.commit();
}

void Store::evals_append(int64_t run_id, const std::vector<EvalRow>& rows) {
  if (rows.empty()) return;
  SqlTransaction transaction(db_);
  rows_insert(db_, "evals", eval_fields(), run_id, rows.data(), rows.size());
  heartbeat_write(db_, run_id);
  transaction.commit();
}

double Store::host_peak_record(const std::string& host, int threads, double gflops) {
  SqlTransaction transaction(db_);
  SqlStatement upsert(db_,
                      "INSERT INTO host_peaks (host, threads, gflops, measured_at) VALUES (?, ?, ?, ?) "
                      "ON CONFLICT (host, threads) DO UPDATE SET gflops = excluded.gflops, "
                      "measured_at = excluded.measured_at WHERE excluded.gflops > host_peaks.gflops");
  upsert.bind_all(host, int64_t{threads}, gflops, system_time_iso8601());
  upsert.run();
  SqlStatement best(db_, "SELECT gflops FROM host_peaks WHERE host = ? AND threads = ?");
  best.bind_all(host, int64_t{threads});
  const double result = best.step() ? best.column_real(0) : gflops;
  transaction.commit();
  return result;
}

void Store::run_finish(int64_t run_id, RunStatus status, const std::string& error) {
  // The finished statuses (diverged: a non-finite loss or model; stopped: ended on purpose by
  // its caller before its last step, as dsgd-tune ends a trial at its target or budget;
  // docs/metrics.md).
  if (!run_status_finished(status)) {
    DSGD_THROW(Error, "",
               "run_finish: bad status '{}' for run {} (completed, failed, interrupted, killed, diverged or "
               "stopped)",
               run_status_text(status), run_id);
  }
  SqlTransaction transaction(db_);
  std::optional<RunRecord> run = run_find(db_, schema_version(), run_id);
  if (!run) run_throw_not_found(path_, run_id);
  Summary summary =
      summary_compute(*run, steps_read(db_, schema_version(), run_id), evals_read(db_, schema_version(), run_id));
  summary_conditions(*run, begin_cpu_, summary);
  std::erase_if(begin_cpu_, [&](const auto& entry) { return entry.first == run_id; });
  for (const auto& [id, seconds] : model_pass_)
    if (id == run_id) summary.model_pass_s = seconds;
  std::erase_if(model_pass_, [&](const auto& entry) { return entry.first == run_id; });
  summary_write(db_, run_id, summary);
  SqlStatement update(db_, "UPDATE runs SET status = ?, finished_at = ?, error = ? WHERE id = ?");
  update.bind_all(run_status_text(status), system_time_iso8601());
  update.bind_text_or_null(3, error);
  update.bind(4, run_id);
  update.run();
  transaction.commit();
}

std::vector<RunWithSummary> Store::runs_list(int limit) const {
  const int version = user_version();
  std::vector<RunWithSummary> result;
  if (version < 1) return result;
  SqlStatement stmt(db_, run_select_sql(version, "ORDER BY runs.created_at DESC, runs.id DESC LIMIT ?"));
  stmt.bind(1, limit > 0 ? limit : -1);
  while (stmt.step()) {
    result.push_back(run_with_summary_read(stmt, version));
    run_status_adjust(result.back().run);
  }
  return result;
}

RunWithSummary Store::run_get(int64_t run_id) const {
  const int version = user_version();
  if (version < 1) run_throw_not_found(path_, run_id);
  SqlStatement stmt(db_, run_select_sql(version, "WHERE runs.id = ?"));
  stmt.bind(1, run_id);
  if (!stmt.step()) run_throw_not_found(path_, run_id);
  RunWithSummary result = run_with_summary_read(stmt, version);
  run_status_adjust(result.run);
  return result;
}

std::vector<int64_t> Store::runs_of_launch(const std::string& launch_id, RunStatus status) const {
  std::vector<int64_t> ids;
  if (launch_id.empty() || user_version() < 8) return ids;
  SqlStatement stmt(db_, "SELECT id FROM runs WHERE launch_id = ? AND status = ? ORDER BY id");
  stmt.bind_all(launch_id, run_status_text(status));
  while (stmt.step()) ids.push_back(stmt.column_int64(0));
  return ids;
}

std::vector<std::pair<int64_t, std::string>> Store::runs_find_dead() {
  std::vector<std::pair<int64_t, std::string>> dead;
  if (user_version() < 8) return dead;
  const std::string this_host = system_info_read().host;
  SqlStatement stmt(db_, "SELECT id, host, pid, pid_start, pid_scope FROM runs WHERE status = 'running' ORDER BY id");
  while (stmt.step()) {
    const int64_t id = stmt.column_int64(0);
    const std::string host = stmt.column_text(1);
    const int64_t pid = stmt.column_int64(2);
    std::string why;
    switch (run_liveness_check(host, pid, stmt.column_int64(3), stmt.column_text(4), this_host, &why)) {
      case RunLiveness::run_gone:
        dead.emplace_back(id, fmt::format("process gone: the run's writer (pid {} on {}) ended without recording "
                                          "why ({}): killed by SIGKILL (the OOM killer?) or crashed",
                                          pid, host, why));
        break;
      case RunLiveness::run_alive: checked_alive_.push_back(id); break;
      case RunLiveness::run_unknown: break;
    }
  }
  return dead;
}

std::vector<int64_t> Store::runs_mark_killed(const std::vector<std::pair<int64_t, std::string>>& runs) {
  std::vector<int64_t> marked;
  for (const auto& [id, why] : runs) {
    {
      SqlStatement status(db_, "SELECT status FROM runs WHERE id = ?");
      status.bind(1, id);
      if (!status.step() || run_status_parse(status.column_text(0)) != RunStatus::run_running)
        continue;  // finished meanwhile
    }
    run_finish(id, RunStatus::run_killed, why);
    marked.push_back(id);
  }
  return marked;
}

std::vector<int64_t> Store::runs_reap_dead() {
  return runs_mark_killed(runs_find_dead());
}

void Store::run_status_adjust(RunRecord& run) const {
  if (run.status != RunStatus::run_running) return;
  for (const auto& [id, why] : killed_unwritten_) {
    if (id == run.id) {
      run.status = RunStatus::run_killed;
      run.error = why + " (not stored: the database could not be written)";
      return;
    }
  }
  if (std::find(checked_alive_.begin(), checked_alive_.end(), run.id) != checked_alive_.end()) return;
  const double silent = seconds_since_iso8601(run.heartbeat_at.empty() ? run.created_at : run.heartbeat_at);
  if (silent > stale_after_s) run.status = RunStatus::run_stale;
}

std::vector<EvalRow> Store::evals_get(int64_t run_id) const {
  if (user_version() < 1) return {};
  return evals_read(db_, user_version(), run_id);
}

std::vector<StepRow> Store::steps_get(int64_t run_id) const {
  const int version = user_version();
  if (version < 1) return {};
  return steps_read(db_, version, run_id);
}

}  // namespace dsgd
