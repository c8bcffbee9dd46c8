// The SQLite results store (embedded default ./dsgd.db). WAL mode, schema version in
// PRAGMA user_version with forward migrations (results/migrations.cpp). Only rank 0
// writes, in batched transactions. A run row is inserted as `running` and finished as
// `completed`, `failed`, `interrupted`, `killed`, `diverged` or `stopped` (results/run_status.hpp:
// read back as a RunStatus; a text it does not know is an error); the summary is computed from
// the stored steps and evaluations, so `show` and the per-step tables never disagree.
// Dead runs: each run records its writer process (host, pid, start time; schema v8) and a
// heartbeat at every flush. Opening the database marks a `running` run of this host whose
// writer is gone as `killed` ("process gone: ..."; only in what is read when the database
// cannot be written); a `running` run whose writer cannot be checked (another host or
// container, or written before v8) and that has been silent for over
// Store::stale_after_s reads as `stale?` (not stored). See results/run_liveness.hpp.
// Calibrations (`dsgd-bench calibrate`, schema v3) are stored beside runs: a
// calibration row, its collective sweep, the alpha-beta fit per collective and the
// per-layer compute profile (results/calibration_store.cpp; docs/metrics.md).
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/system_info.hpp"
#include "results/run_status.hpp"

struct sqlite3;

namespace dsgd {

// What a run is: identity, configuration and context; written once at start.
struct RunRecord {
  int64_t id = 0;
  std::string created_at;                     // ISO 8601 UTC, filled by the store when empty
  RunStatus status = RunStatus::run_running;  // stored as its text (results/run_status.hpp)
  std::string workload, dataset, algorithm, backend;
  int workers = 0;
  int64_t batch = 0;   // per worker
  int64_t period = 0;  // H
  int64_t steps = 0;   // total steps (including warm-up)
  int64_t warmup = 0;  // untimed steps at the start
  uint64_t seed = 0;
  std::string tag;
  std::string config_json;  // the full effective configuration
  std::string target;       // e.g. "acc=0.8", empty when none
  // context
  std::string tool_version, git_commit, host, cpu_model, mpi_version, build_type;
  std::string error;  // message when failed
  std::string finished_at;
  // The writing process (schema v8; filled by run_begin from the calling process and
  // $DSGD_LAUNCH_ID): 0 / empty on runs written before v8.
  int64_t pid = 0;
  std::string heartbeat_at;  // last flush (ISO 8601 UTC)
  std::string launch_id;     // the `run --workers N` launch (cluster/launcher.hpp)
};

// Keys of a run's config_json that its start measured (the SGEMM peak for MFU, where the
// training set landed, whether memory copies were slow by placement), not settings: two runs
// of one configuration differ in them, so grouping runs by configuration leaves them out.
inline constexpr std::array<const char*, 3> kRunMeasuredConfigKeys = {"peak-gflops-per-worker", "dataset-pages",
                                                                      "copy-aliasing"};

// One rank's timings for one step (seconds), and bytes it sent.
struct StepRow {
  int rank = 0;
  int64_t step = 0;
  bool timed = true;   // false for warm-up steps
  double start_s = 0;  // step start, seconds since the run's time origin (rank 0's clock)
  double step_s = 0, fwd_s = 0, bwd_s = 0, opt_s = 0, data_s = 0;
  double comm_s = 0, wait_s = 0, overlap_s = 0;
  double injected_s = 0;  // straggler delay injected into this rank's compute (--straggler)
  double bytes_sent = 0;
  double train_loss = 0;  // minibatch loss of this rank at this step
  // Mean staleness of the updates this rank applied (ps) or read (adpsgd) in this step
  // (docs/metrics.md); empty for algorithms without staleness (and before schema v6).
  std::optional<double> staleness;
};

struct EvalRow {
  int64_t step = 0;       // evaluation after this many steps
  double time_s = 0;      // training wall-clock at that point (evaluation time excluded)
  double train_loss = 0;  // mean minibatch loss since the previous evaluation, all ranks
  double test_loss = 0;
  double test_acc = 0;
  // (1/n)·Σ_i ‖x_i − x̄‖² over the n replicas (docs/metrics.md); empty when the algorithm
  // keeps them identical (and on rows written before schema v4).
  std::optional<double> consensus_distance{};
  // Seconds the evaluation took on rank 0 (run's clock): flush of the step records,
  // consensus model, test pass, divergence check; empty on rows written before v11.
  std::optional<double> eval_s{};
};

// Summary metrics (definitions in docs/metrics.md). Optional fields are null when
// they do not apply (no evaluation, target not reached).
struct Summary {
  double throughput_samples_per_s = 0;
  double step_time_s = 0, compute_s = 0, fwd_s = 0, bwd_s = 0, opt_s = 0;
  double comm_s = 0, wait_s = 0, overlap_s = 0, data_s = 0;
  double injected_s = 0;  // mean injected straggler delay
  double bytes_sent_per_step = 0;
  int64_t timed_steps = 0;
  std::optional<double> final_train_loss, final_test_loss, final_test_acc;
  std::optional<double> time_to_target_s;
  std::optional<int64_t> steps_to_target;
  // Mean and max of the step rows' staleness over timed steps; empty when no row has one.
  std::optional<double> staleness_mean, staleness_max;
  // Model FLOP/s achieved per worker (GFLOP/s), the peak per worker it is measured against
  // and MFU = model_gflops / peak_gflops; empty when the run has no FLOP count or peak.
  std::optional<double> model_gflops, peak_gflops, mfu;
  // Seconds the run's evaluations took on rank 0 (the sum of evals.eval_s; evaluations are
  // not in time_s or the step times); empty when no evaluation has eval_s (before v11).
  std::optional<double> eval_total_s;
  // The conditions the run was measured under, for marking runs a busy or oversubscribed host
  // slowed: the host's 1-minute load average at the run's end beyond the run's own processes,
  // per core; and the fraction of the host's CPU time the hypervisor stole during the run.
  // Empty where unreadable, and on runs stored before schema v17.
  std::optional<double> host_load, cpu_steal;
  // Seconds of one elementwise pass over the model's parameters (a copy, then y ← y + a·x;
  // their mean), timed by the trainer in the warm-up steps after the update: what the
  // simulator charges per pass an algorithm makes outside compute (gossip's mix). Empty
  // without warm-up steps, on the sim backend and before schema v18.
  std::optional<double> model_pass_s;
  // The standard error of step_time_s (summary_step_standard_error); empty under 4 timed steps
  // and before schema v19.
  std::optional<double> step_time_se_s;
};

struct RunWithSummary {
  RunRecord run;
  std::optional<Summary> summary;  // absent until the run finished
};

// One `dsgd-bench calibrate`: where and how it was measured; written once.
struct CalibrationRecord {
  int64_t id = 0;
  std::string created_at;  // ISO 8601 UTC, filled by the store when empty
  int workers = 0;
  std::string host, cpu_model, mpi_version, git_commit, tool_version;
  std::string config_json;  // the calibration's options (sizes, repetitions, batches, ...)
};

// One (collective, size) point of the sweep. time_s is the median over repetitions of
// the slowest rank's time per iteration; min/max over the same repetitions.
struct CollectiveRow {
  std::string op;     // allreduce | allreduce_mpi | reduce_scatter | allgather | broadcast | sendrecv
  int64_t bytes = 0;  // S: the whole buffer (nccl-tests' size)
  int64_t iters = 0;  // iterations per repetition
  double time_s = 0, time_min_s = 0, time_max_s = 0;
  double algbw_gbps = 0, busbw_gbps = 0;  // GB = 1e9 bytes
  // The repetitions' interquartile range / median; NaN where unknown (stored before v20).
  double spread = std::numeric_limits<double>::quiet_NaN();
};

// The alpha-beta fit of one collective: t = alpha + beta * S * busbw_factor.
struct FitRow {
  std::string op;
  double alpha_s = 0;
  double beta_s_per_byte = 0;
  double bandwidth_bytes_per_s = 0;  // 1 / beta
  double rel_error = 0;              // median |fit - t| / t over the sizes
};

// A calibration's all-reduce fit, with where it came from.
struct AllreduceFit {
  int64_t calibration_id = 0;
  int workers = 0;  // ranks of the calibration's sweep
  double alpha_s = 0;
  double bandwidth_bytes_per_s = 0;
};

// One layer's compute cost for one batch size (seconds per step, per worker).
struct ProfileRow {
  std::string workload, dataset;
  int64_t batch = 0;
  int64_t layer = 0;  // index into Workload::layers()
  std::string layer_name;
  double fwd_s = 0, bwd_s = 0;
  // The batch's relative spread: interquartile range / median of the per-iteration forward +
  // backward time (the same on every layer row of a batch). NaN: unknown (stored before v15).
  double spread = std::numeric_limits<double>::quiet_NaN();
  // The batch's per-iteration forward + backward distribution (the simulator's compute jitter):
  // its quantiles at probabilities (k + ½)/K, k < K, relative to the first (ascending, the first
  // 1). Carried by the batch's layer-0 row; empty on the others, and before schema v17.
  std::vector<double> jitter{};
};

struct StoreOpenOptions {
  // Mark `running` runs whose writer process is gone as `killed` (see above).
  bool reap_dead_runs = true;
  // PRAGMA quick_check before anything is written (writable opens of an existing file of
  // at most 512 MiB): a corrupt database is refused instead of written to. Cost:
  // docs/reports.md; callers that reopen a database just checked pass false.
  bool integrity_check = true;
};

class Store {
 public:
  // The newest schema version this build knows.
  static int schema_version();
  // A `running` run that cannot be checked reads as `stale?` after this long without a
  // heartbeat (flushes come every few seconds to minutes; an hour is generous).
  static constexpr double stale_after_s = 3600;

  // Opens (creating if needed) the database at path and migrates it to schema_version().
  // Throws InputError, without creating or changing anything, when the directory does
  // not exist or is not writable, the file is not a dsgd-bench database (another
  // program's, or a corrupt header), or it was written by a newer schema version; throws
  // Error when PRAGMA quick_check finds it corrupt.
  static Store open(const std::string& path, const StoreOpenOptions& options = {});
  // Opens an existing database read-only (for runs/show); throws InputError when missing.
  // In a read-only directory where SQLite cannot create the WAL index (-shm), the file is
  // read as immutable. Dead runs are marked `killed` through a short write connection when
  // the database can be written, else only in what this Store reads.
  static Store open_readonly(const std::string& path);

  Store(Store&& other) noexcept;
  Store& operator=(Store&& other) noexcept;
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;
  ~Store();

  const std::string& path() const { return path_; }
  int user_version() const;

  // Inserts the run as `running`; returns its id.
  int64_t run_begin(const RunRecord& run);
  // Appends rows in one transaction each call.
  void steps_append(int64_t run_id, const std::vector<StepRow>& rows);
  void evals_append(int64_t run_id, const std::vector<EvalRow>& rows);
  // Marks the run finished with status (completed, failed, interrupted, killed, diverged or
  // stopped; Error for running or stale?), computes and stores its summary from the rows.
  void run_finish(int64_t run_id, RunStatus status, const std::string& error);
  // The model pass the trainer timed (Summary::model_pass_s), stored by the run's run_finish.
  void run_note_model_pass(int64_t run_id, double seconds) { model_pass_.emplace_back(run_id, seconds); }
  // The ids of the runs of one launch (RunRecord::launch_id) with this status.
  std::vector<int64_t> runs_of_launch(const std::string& launch_id, RunStatus status) const;
  // Marks `running` runs of this host whose writer is gone as `killed`; returns their ids
  // (Store::open and open_readonly do it unless told not to).
  std::vector<int64_t> runs_reap_dead();
  // The `running` runs of this host whose writer is gone, with the reason (no change).
  std::vector<std::pair<int64_t, std::string>> runs_find_dead();
  // Finishes each still-`running` run as `killed` with its reason; returns the ids marked.
  std::vector<int64_t> runs_mark_killed(const std::vector<std::pair<int64_t, std::string>>& runs);

  std::vector<RunWithSummary> runs_list(int limit = 100) const;
  // Throws InputError when the id does not exist.
  RunWithSummary run_get(int64_t run_id) const;
  std::vector<EvalRow> evals_get(int64_t run_id) const;
  std::vector<StepRow> steps_get(int64_t run_id) const;

  // Calibrations (results/calibration_store.cpp). calibration_begin inserts the record
  // and returns its id; the *_append methods write their rows in one transaction each
  // and throw InputError for an unknown calibration id.
  int64_t calibration_begin(const CalibrationRecord& record);
  void collectives_append(int64_t calibration_id, const std::vector<CollectiveRow>& rows);
  void fits_append(int64_t calibration_id, const std::vector<FitRow>& rows);
  void profiles_append(int64_t calibration_id, const std::vector<ProfileRow>& rows);
  // The newest calibration (largest id), of `host` when not empty; nullopt when none
  // (or the schema predates calibrations).
  std::optional<int64_t> calibration_latest(const std::string& host = "") const;
  // The all-reduce fit (with a positive bandwidth) of `host`'s newest calibration that has one:
  // the native fabric that network emulation subtracts and the sim uses without --bandwidth;
  // nullopt when no calibration of the host measured it.
  std::optional<AllreduceFit> allreduce_fit_latest(const std::string& host) const;
  // The all-reduce fits of `host`'s calibrations that have one, newest first, at most `limit`.
  std::vector<AllreduceFit> allreduce_fits(const std::string& host, int limit) const;
  // Throws InputError when the id does not exist.
  CalibrationRecord calibration_get(int64_t calibration_id) const;
  std::vector<CalibrationRecord> calibrations_list(int limit = 100) const;  // newest first
  // Rows ordered by op then bytes / op / workload, batch, layer.
  std::vector<CollectiveRow> collectives_get(int64_t calibration_id) const;
  std::vector<FitRow> fits_get(int64_t calibration_id) const;
  std::vector<ProfileRow> profiles_get(int64_t calibration_id) const;

  // MFU's peak (docs/metrics.md): records a SGEMM rate measured on `host` with `threads`
  // BLAS threads and returns the highest this database has seen there (this one included).
  double host_peak_record(const std::string& host, int threads, double gflops);

  sqlite3* handle() const { return db_; }

 private:
  Store(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  // status/error of a run as read: killed runs not written back (read-only), `stale?`.
  void run_status_adjust(RunRecord& run) const;
  sqlite3* db_ = nullptr;
  std::string path_;
  // (run id, reason) of dead runs this read-only Store could not mark in the database.
  std::vector<std::pair<int64_t, std::string>> killed_unwritten_;
  // `running` runs whose writer was seen alive when the Store was opened.
  std::vector<int64_t> checked_alive_;
  // The host's CPU times when each run this Store began started (for its cpu_steal).
  std::vector<std::pair<int64_t, CpuTimes>> begin_cpu_;
  std::vector<std::pair<int64_t, double>> model_pass_;  // run_note_model_pass, until run_finish
};

// Computes the summary of a run from its stored rows (used by run_finish).
Summary summary_compute(const RunRecord& run, const std::vector<StepRow>& steps, const std::vector<EvalRow>& evals);
// The standard error of a run's mean step by batch means: its timed steps in step order (each
// step's mean over its ranks) cut into ⌊√n⌋ batches of consecutive steps, the standard deviation
// of the batch means over √batches, so that correlated steps (a drift, a lock race that goes
// one way for a while) are not counted as independent. 0 with fewer than 4 timed steps.
double summary_step_standard_error(const std::vector<StepRow>& steps);
// Sets summary.host_load (now) and cpu_steal (since the run's entry in `begin_cpu`, when it
// has one) for a run that ends now; neither for a simulated run (its clock is virtual).
void summary_conditions(const RunRecord& run, const std::vector<std::pair<int64_t, CpuTimes>>& begin_cpu,
                        Summary& summary);

}  // namespace dsgd
