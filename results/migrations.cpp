// The results-database schema history (see migrations.hpp). Column notes:
// - runs.seed is the uint64 seed as decimal TEXT: exact for values above 2^63 and
//   readable from the sqlite3 shell.
// - runs.id is AUTOINCREMENT so a deleted run's id is never handed to a new run
//   (reports and scripts refer to runs by id).
// - REAL columns are nullable: SQLite stores a NaN (a diverged loss) as NULL, and the
//   store reads it back as NaN; optional summary fields are NULL when they do not apply.
// - steps.injected_s / summaries.injected_s (v3) are NULL on rows written before v3, and
//   the store reads that NULL as 0 (no straggler delay was injected then).
// - evals.consensus_distance (v4) is NULL when it does not apply (replicas identical) and
//   on rows written before v4; the store reads NULL as an empty optional.
// - evals.eval_s (v11) is NULL on rows written before v11 (read as empty).
// - summaries.eval_total_s (v14, from the field table: no script) is NULL on rows written
//   before v14 and when no evaluation of the run has eval_s (read as empty).
// - steps.staleness, summaries.staleness_mean / staleness_max (v6) are NULL for algorithms
//   without staleness and on rows written before v6; the store reads NULL as empty.
// - summaries.model_gflops / peak_gflops / mfu (v7) are NULL when the run's config has no
//   "flops-per-sample" and "peak-gflops-per-worker" (before v7; timing-only sim runs).
// - runs.pid / pid_start / pid_scope / heartbeat_at / launch_id (v8) identify the process
//   writing a `running` run (results/run_liveness.hpp) and its last flush; NULL on rows
//   written before v8 (such a run's liveness cannot be checked).
// - profiles.spread (v15) is NULL on rows written before v15; the store reads it as NaN
//   (unknown), which the simulator reports rather than trusts.
// - change_points.git_commit is the first commit after the change, as the runs recorded it;
//   annotations.series / metric empty mean every series / metric.
// - calibrations.id is AUTOINCREMENT for the same reason as runs.id; the tuner and the
//   sim backend refer to a calibration by id (or take the host's latest).
#include "results/migrations.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "core/errors.hpp"
#include "results/row_fields.hpp"
#include "results/sqlite.hpp"

namespace dsgd {

namespace {

// v0 -> v1: runs, per-rank per-step timings, evaluations.
constexpr const char* migration_v1 = R"sql(
CREATE TABLE runs (
  id            INTEGER PRIMARY KEY AUTOINCREMENT,
  created_at    TEXT NOT NULL,
  finished_at   TEXT,
  status        TEXT NOT NULL,
  workload      TEXT NOT NULL DEFAULT '',
  dataset       TEXT NOT NULL DEFAULT '',
  algorithm     TEXT NOT NULL DEFAULT '',
  backend       TEXT NOT NULL DEFAULT '',
  workers       INTEGER NOT NULL DEFAULT 0,
  batch         INTEGER NOT NULL DEFAULT 0,
  period        INTEGER NOT NULL DEFAULT 0,
  steps         INTEGER NOT NULL DEFAULT 0,
  warmup        INTEGER NOT NULL DEFAULT 0,
  seed          TEXT NOT NULL DEFAULT '0',
  tag           TEXT NOT NULL DEFAULT '',
  config_json   TEXT NOT NULL DEFAULT '{}',
  tool_version  TEXT,
  git_commit    TEXT,
  host          TEXT,
  cpu_model     TEXT,
  mpi_version   TEXT,
  build_type    TEXT,
  error         TEXT
);
CREATE TABLE steps (
  run_id     INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  rank       INTEGER NOT NULL,
  step       INTEGER NOT NULL,
  timed      INTEGER NOT NULL,
  start_s    REAL,
  step_s     REAL,
  fwd_s      REAL,
  bwd_s      REAL,
  opt_s      REAL,
  data_s     REAL,
  comm_s     REAL,
  wait_s     REAL,
  overlap_s  REAL,
  bytes_sent REAL,
  train_loss REAL,
  PRIMARY KEY (run_id, rank, step)
) WITHOUT ROWID;
CREATE TABLE evals (
  run_id     INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  step       INTEGER NOT NULL,
  time_s     REAL,
  train_loss REAL,
  test_loss  REAL,
  test_acc   REAL,
  PRIMARY KEY (run_id, step)
) WITHOUT ROWID;
)sql";

// v1 -> v2: accuracy/loss target per run, stored summaries, listing index.
constexpr const char* migration_v2 = R"sql(
ALTER TABLE runs ADD COLUMN target TEXT;
CREATE TABLE summaries (
  run_id                   INTEGER PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
  throughput_samples_per_s REAL,
  step_time_s              REAL,
  compute_s                REAL,
  fwd_s                    REAL,
  bwd_s                    REAL,
  opt_s                    REAL,
  comm_s                   REAL,
  wait_s                   REAL,
  overlap_s                REAL,
  data_s                   REAL,
  bytes_sent_per_step      REAL,
  timed_steps              INTEGER NOT NULL,
  final_train_loss         REAL,
  final_test_loss          REAL,
  final_test_acc           REAL,
  time_to_target_s         REAL,
  steps_to_target          INTEGER
);
CREATE INDEX runs_by_created_at ON runs(created_at);
)sql";

// v2 -> v3: injected straggler delay per step and in summaries; calibration results
// (`dsgd-bench calibrate`): the sweep's collective timings, their alpha-beta fits and the
// workload's per-layer compute profile. Definitions in docs/metrics.md.
constexpr const char* migration_v3 = R"sql(
ALTER TABLE steps ADD COLUMN injected_s REAL;
ALTER TABLE summaries ADD COLUMN injected_s REAL;
CREATE TABLE calibrations (
  id            INTEGER PRIMARY KEY AUTOINCREMENT,
  created_at    TEXT NOT NULL,
  workers       INTEGER NOT NULL,
  host          TEXT,
  cpu_model     TEXT,
  mpi_version   TEXT,
  git_commit    TEXT,
  tool_version  TEXT,
  config_json   TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX calibrations_by_host ON calibrations(host, id);
CREATE TABLE collectives (
  calibration_id INTEGER NOT NULL REFERENCES calibrations(id) ON DELETE CASCADE,
  op             TEXT NOT NULL,
  bytes          INTEGER NOT NULL,
  iters          INTEGER NOT NULL,
  time_s         REAL,
  time_min_s     REAL,
  time_max_s     REAL,
  algbw_gbps     REAL,
  busbw_gbps     REAL,
  PRIMARY KEY (calibration_id, op, bytes)
) WITHOUT ROWID;
CREATE TABLE fits (
  calibration_id        INTEGER NOT NULL REFERENCES calibrations(id) ON DELETE CASCADE,
  op                    TEXT NOT NULL,
  alpha_s               REAL,
  beta_s_per_byte       REAL,
  bandwidth_bytes_per_s REAL,
  rel_error             REAL,
  PRIMARY KEY (calibration_id, op)
) WITHOUT ROWID;
CREATE TABLE profiles (
  calibration_id INTEGER NOT NULL REFERENCES calibrations(id) ON DELETE CASCADE,
  workload       TEXT NOT NULL,
  dataset        TEXT NOT NULL,
  batch          INTEGER NOT NULL,
  layer          INTEGER NOT NULL,
  layer_name     TEXT NOT NULL,
  fwd_s          REAL,
  bwd_s          REAL,
  PRIMARY KEY (calibration_id, workload, batch, layer)
) WITHOUT ROWID;
)sql";

// v3 -> v4: consensus distance (1/n)·Σ‖x_i − x̄‖² of the replicas at each evaluation
// (docs/metrics.md); NULL where the algorithm keeps the replicas identical, and on rows
// written before v4.
constexpr const char* migration_v4 = R"sql(
ALTER TABLE evals ADD COLUMN consensus_distance REAL;
)sql";

// v4 -> v5: validations (`dsgd-bench validate`): a configuration run on the real backend
// and on the simulator, and per metric the measured value, the prediction and the relative
// error |predicted − measured| / measured (NULL when measured is 0).
constexpr const char* migration_v5 = R"sql(
CREATE TABLE validations (
  id                INTEGER PRIMARY KEY AUTOINCREMENT,
  created_at        TEXT NOT NULL,
  host              TEXT,
  config_json       TEXT NOT NULL DEFAULT '{}',
  profile_run_id    INTEGER REFERENCES runs(id) ON DELETE SET NULL,
  measured_run_id   INTEGER REFERENCES runs(id) ON DELETE SET NULL,
  simulated_run_id  INTEGER REFERENCES runs(id) ON DELETE SET NULL
);
CREATE TABLE validation_metrics (
  validation_id  INTEGER NOT NULL REFERENCES validations(id) ON DELETE CASCADE,
  metric         TEXT NOT NULL,
  measured       REAL,
  predicted      REAL,
  rel_error      REAL,
  PRIMARY KEY (validation_id, metric)
) WITHOUT ROWID;
)sql";

// v5 -> v6: staleness (docs/metrics.md): per step and rank, the mean staleness of the
// updates the rank applied (ps) or read (adpsgd) in that step; NULL for algorithms without
// staleness and on rows written before v6. Per run, its mean and max over the timed steps.
constexpr const char* migration_v6 = R"sql(
ALTER TABLE steps ADD COLUMN staleness REAL;
ALTER TABLE summaries ADD COLUMN staleness_mean REAL;
ALTER TABLE summaries ADD COLUMN staleness_max REAL;
)sql";

// v6 -> v7: MFU (docs/metrics.md). Per run, the model GFLOP/s achieved per worker, the peak
// it is measured against and their ratio (NULL for runs without the inputs: written before
// v7, or timing-only sim runs). host_peaks keeps, per host and BLAS thread count, the
// highest SGEMM rate any run has measured there: a shared machine measures low when busy,
// and MFU against a low peak would flatter the run.
constexpr const char* migration_v7 = R"sql(
ALTER TABLE summaries ADD COLUMN model_gflops REAL;
ALTER TABLE summaries ADD COLUMN peak_gflops REAL;
ALTER TABLE summaries ADD COLUMN mfu REAL;
CREATE TABLE host_peaks (
  host         TEXT NOT NULL,
  threads      INTEGER NOT NULL,
  gflops       REAL NOT NULL,
  measured_at  TEXT NOT NULL,
  PRIMARY KEY (host, threads)
) WITHOUT ROWID;
)sql";

// v7 -> v8: the writer of a run (rank 0's process: pid, its start time in clock ticks since
// boot, "<boot id>/<pid namespace>"), its last sign of life (updated at every flush) and the
// `dsgd-bench run --workers N` launch that started it, so a run whose processes were killed
// (SIGKILL, the OOM killer) is recognised as `killed` instead of `running` forever. The
// database is stamped with application_id 'DSGD', so a file of another program (or random
// bytes after a SQLite header) is told apart from one written by a newer dsgd-bench.
constexpr const char* migration_v8 = R"sql(
ALTER TABLE runs ADD COLUMN pid INTEGER;
ALTER TABLE runs ADD COLUMN pid_start INTEGER;
ALTER TABLE runs ADD COLUMN pid_scope TEXT;
ALTER TABLE runs ADD COLUMN heartbeat_at TEXT;
ALTER TABLE runs ADD COLUMN launch_id TEXT;
CREATE INDEX runs_by_status ON runs(status);
PRAGMA application_id = 1146308420;
)sql";

// v8 -> v9: dsgd-tune sessions and their trials (results/tune_store.hpp, docs/tuner.md). A session
// keeps its effective options (spec_json: the base configuration, the search space, the
// budget) so `--resume` replays it; a trial is one run of one configuration at one budget
// and seed, unique per (session, trial_key), linked to its stored run. REAL columns are NULL
// where they do not apply (a failed trial has no step time).
constexpr const char* migration_v9 = R"sql(
CREATE TABLE tune_sessions (
  id           INTEGER PRIMARY KEY AUTOINCREMENT,
  created_at   TEXT NOT NULL,
  finished_at  TEXT,
  status       TEXT NOT NULL,
  target       TEXT NOT NULL DEFAULT '',
  seed         TEXT NOT NULL DEFAULT '0',
  spec_json    TEXT NOT NULL DEFAULT '{}',
  result_json  TEXT,
  host         TEXT,
  git_commit   TEXT,
  error        TEXT
);
CREATE TABLE trials (
  id             INTEGER PRIMARY KEY AUTOINCREMENT,
  session_id     INTEGER NOT NULL REFERENCES tune_sessions(id) ON DELETE CASCADE,
  trial_key      TEXT NOT NULL,
  phase          TEXT NOT NULL,
  config_key     TEXT NOT NULL,
  config_json    TEXT NOT NULL DEFAULT '{}',
  seed           TEXT NOT NULL DEFAULT '0',
  budget_s       REAL NOT NULL,
  run_id         INTEGER REFERENCES runs(id) ON DELETE SET NULL,
  status         TEXT NOT NULL,
  stop_reason    TEXT NOT NULL DEFAULT '',
  reached        INTEGER NOT NULL DEFAULT 0,
  time_s         REAL,
  progress       REAL,
  steps          INTEGER,
  step_s         REAL,
  compute_s      REAL,
  comm_s         REAL,
  wait_s         REAL,
  bytes_per_step REAL,
  wall_s         REAL,
  created_at     TEXT NOT NULL,
  UNIQUE (session_id, trial_key)
);
CREATE INDEX trials_session ON trials(session_id, id);
)sql";

// v10: validations of a tuner session's top configurations on the real backend
// (`dsgd-tune validate SESSION --top K`, `dsgd-tune recommend --validate K`): one row per
// invocation, one per configuration linking the session's sim trial run to its MPI run, with the
// predicted (sim) and measured (mpi) time-to-target and step time; and optimizer_profiles, the
// optimizer-step time of a calibration's compute profile (results/optimizer_profile_store.hpp).
constexpr const char* migration_v10 = R"sql(
CREATE TABLE tune_validations (
  id             INTEGER PRIMARY KEY,
  session_id     INTEGER NOT NULL REFERENCES tune_sessions(id),
  created_at     TEXT NOT NULL,
  top_k          INTEGER NOT NULL,
  host           TEXT,
  ranking_agrees INTEGER
);
CREATE TABLE tune_validation_configs (
  validation_id          INTEGER NOT NULL REFERENCES tune_validations(id),
  rank                   INTEGER NOT NULL,
  config_key             TEXT NOT NULL,
  sim_run_id             INTEGER REFERENCES runs(id),
  mpi_run_id             INTEGER REFERENCES runs(id),
  predicted_time_s       REAL,
  measured_time_s        REAL,
  predicted_step_s       REAL,
  measured_step_s        REAL,
  measured_steps         INTEGER,
  PRIMARY KEY (validation_id, rank)
);
CREATE INDEX tune_validations_session ON tune_validations(session_id, id);
CREATE TABLE optimizer_profiles (
  calibration_id INTEGER NOT NULL REFERENCES calibrations(id),
  workload       TEXT NOT NULL,
  dataset        TEXT NOT NULL,
  optimizer      TEXT NOT NULL,
  params         INTEGER NOT NULL,
  opt_s          REAL NOT NULL
);
CREATE INDEX optimizer_profiles_calibration ON optimizer_profiles(calibration_id);
)sql";

// v10 -> v11: evals.eval_s, the wall time of each evaluation on rank 0 (docs/metrics.md);
// NULL on rows written before v11.
constexpr const char* migration_v11 = R"sql(
ALTER TABLE evals ADD COLUMN eval_s REAL;
)sql";

// v11 -> v12: the kind of a dsgd-tune session: 'recommend' (a search) or 'grid' (every
// configuration of a small space at the full trial time, for `dsgd-tune bench` to replay;
// tuner/grid.hpp). Sessions stored before are searches.
constexpr const char* migration_v12 = R"sql(
ALTER TABLE tune_sessions ADD COLUMN kind TEXT NOT NULL DEFAULT 'recommend';
)sql";

// v12 -> v13: the probe of a dsgd-tune session's theory prior (tuner/prior_probe.hpp), one row
// per session, so --resume does not run it again: the probe as JSON, its evaluation (simulated)
// seconds and its real seconds.
constexpr const char* migration_v13 = R"sql(
CREATE TABLE tune_probes (
  session_id  INTEGER PRIMARY KEY REFERENCES tune_sessions(id) ON DELETE CASCADE,
  created_at  TEXT NOT NULL,
  probe_json  TEXT NOT NULL,
  cost_s      REAL NOT NULL,
  wall_s      REAL NOT NULL
);
)sql";

// v14: summaries.eval_total_s, added from the field table (no script).

// v14 -> v15: profiles.spread, the relative spread of a profiled batch's per-iteration compute
// time (interquartile range / median of forward + backward over the timed iterations, the
// slowest rank's), so the simulator can tell a profile it can predict from a noisy one; NULL
// on rows written before v15 (spread unknown).
constexpr const char* migration_v15 = R"sql(
ALTER TABLE profiles ADD COLUMN spread REAL;
)sql";

// v15 -> v16: `dsgd-bench track`'s records: the change points found in each series (one row
// per series, metric, machine and commit; kept while detection still finds them), and the
// annotations users give commits (expected: an acknowledged change; invalid / outlier: the
// commit's point leaves the series' detection and baseline).
constexpr const char* migration_v16 = R"sql(
CREATE TABLE change_points (
  id              INTEGER PRIMARY KEY AUTOINCREMENT,
  series          TEXT NOT NULL,
  metric          TEXT NOT NULL,
  machine         TEXT NOT NULL,
  git_commit      TEXT NOT NULL,
  relative_change REAL NOT NULL,
  pvalue          REAL NOT NULL,
  confirmed       INTEGER NOT NULL,
  first_seen      TEXT NOT NULL,
  last_seen       TEXT NOT NULL,
  UNIQUE (series, metric, machine, git_commit)
);
CREATE TABLE annotations (
  id          INTEGER PRIMARY KEY AUTOINCREMENT,
  created_at  TEXT NOT NULL,
  git_commit  TEXT NOT NULL,
  kind        TEXT NOT NULL CHECK (kind IN ('expected', 'invalid', 'outlier')),
  series      TEXT NOT NULL DEFAULT '',
  metric      TEXT NOT NULL DEFAULT '',
  note        TEXT NOT NULL DEFAULT ''
);
CREATE INDEX annotations_commit ON annotations (git_commit);
)sql";

// v16 -> v17: history brought in from elsewhere (`track import`: a CSV or
// github-action-benchmark's data; a point per line and repetition, unique so that a second
// import of one file adds nothing), and the noise floors `track calibrate` measures (the
// coefficient of variation of R runs of one commit, per series, metric and machine; the
// newest replaces the last). profiles.jitter: a profiled batch's per-iteration distribution
// (a JSON array of quantiles, on its layer-0 row). Also summaries.host_load and cpu_steal
// (field table).
constexpr const char* migration_v17 = R"sql(
CREATE TABLE imported_points (
  id               INTEGER PRIMARY KEY AUTOINCREMENT,
  series           TEXT NOT NULL,
  machine          TEXT NOT NULL,
  git_commit       TEXT NOT NULL,
  date             TEXT NOT NULL,
  value            REAL NOT NULL,
  unit             TEXT NOT NULL DEFAULT '',
  bigger_is_better INTEGER NOT NULL,
  repetition       INTEGER NOT NULL,
  source           TEXT NOT NULL,
  imported_at      TEXT NOT NULL,
  UNIQUE (series, machine, git_commit, date, value, repetition)
);
CREATE TABLE noise_floors (
  id          INTEGER PRIMARY KEY AUTOINCREMENT,
  series      TEXT NOT NULL,
  metric      TEXT NOT NULL,
  machine     TEXT NOT NULL,
  git_commit  TEXT NOT NULL,
  cv          REAL NOT NULL,
  runs        INTEGER NOT NULL,
  created_at  TEXT NOT NULL,
  UNIQUE (series, metric, machine)
);
ALTER TABLE profiles ADD COLUMN jitter TEXT;
)sql";

// v20: each point of a calibration's sweep keeps how widely its repetitions spread
// (interquartile range / median; NULL on points stored before). v18 and v19 add only
// field-table columns (results/row_fields.cpp).
constexpr const char* migration_v20 = R"sql(
ALTER TABLE collectives ADD COLUMN spread REAL;
)sql";

int user_version_read(sqlite3* db) {
  SqlStatement stmt(db, "PRAGMA user_version");
  return stmt.step() ? static_cast<int>(stmt.column_int64(0)) : 0;
}

bool column_exists(sqlite3* db, const char* table, const char* column) {
  SqlStatement stmt(db, "SELECT count(*) FROM pragma_table_info(?) WHERE name = ?");
  stmt.bind_all(table, column);
  return stmt.step() && stmt.column_int64(0) > 0;
}

// The columns of the field tables (results/row_fields.hpp) that schema `version` adds and the
// database lacks: a field newer than the scripts gets its column here (NULL on older rows); the
// columns the scripts above add are found present, so their migrations stay as they shipped.
void field_columns_add(sqlite3* db, int version) {
  for (const StoredColumn& c : row_fields_stored_columns()) {
    if (c.since_version != version || column_exists(db, c.table, c.column)) continue;
    sql_exec(db, fmt::format("ALTER TABLE {} ADD COLUMN {} {}", c.table, c.column, c.sql_type));
  }
}

// A version that only adds field-table columns (field_columns_add) has no script.
constexpr const char* kNoScript = "";

// The scripts, one per schema version: append the next one here.
const std::vector<const char*>& migration_scripts() {
  static const std::vector<const char*> table = {
      migration_v1,  migration_v2,  migration_v3,  migration_v4,  migration_v5,  migration_v6,  migration_v7,
      migration_v8,  migration_v9,  migration_v10, migration_v11, migration_v12, migration_v13, kNoScript,
      migration_v15, migration_v16, migration_v17, kNoScript,     kNoScript,     migration_v20,
  };
  return table;
}

}  // namespace

const std::vector<const char*>& migrations_all() {
  // Versions past the last script that only add field-table columns have an empty script.
  static const std::vector<const char*> table = [] {
    std::vector<const char*> all = migration_scripts();
    if (static_cast<int>(all.size()) < row_fields_newest_version())
      all.resize(static_cast<size_t>(row_fields_newest_version()), "");
    return all;
  }();
  return table;
}

void migrations_apply(sqlite3* db, int from, int to) {
  const auto& table = migrations_all();
  const int newest = static_cast<int>(table.size());
  if (from < 0 || from > to || to > newest) {
    DSGD_THROW(Error, "", "migrations_apply: bad range v{} -> v{} (this build knows v0..v{})", from, to, newest);
  }
  for (int version = from; version < to; ++version) {
    SqlTransaction transaction(db);
    const int current = user_version_read(db);
    if (current > version) {  // another process migrated meanwhile
      transaction.commit();
      continue;
    }
    if (current < version) {
      DSGD_THROW(Error, "", "cannot migrate '{}' from schema v{}: it is at v{}", sql_db_path(db), version, current);
    }
    try {
      sql_exec(db, table[static_cast<size_t>(version)]);
      field_columns_add(db, version + 1);
      sql_exec(db, "PRAGMA user_version = " + std::to_string(version + 1));
      transaction.commit();
    } catch (const Error& e) {
      DSGD_THROW(Error, e.hint(),
                 "migrating '{}' to schema v{} failed and was rolled back (the database "
                 "stays at v{}, nothing lost): {}",
                 sql_db_path(db), version + 1, version, e.what());
    }
  }
}

}  // namespace dsgd
