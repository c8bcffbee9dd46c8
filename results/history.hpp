// A benchmark's history across commits (`dsgd-bench history`; docs/reports.md, "History and
// change points"): stored runs grouped into series, each series one benchmark case (the run
// configuration as `compare` matches it) x one metric x one machine, its points the commits in
// the first-parent order of the git repository the command runs in (results/git_order.hpp), or
// the order their first run was stored where there is no repository (per commit: median,
// quartiles and count of the repetitions), and the change points of the log of the per-commit medians
// (results/change_points.hpp). Machines never mix: the machine fingerprint is the host, CPU
// model, MPI version and build type.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "results/change_points.hpp"
#include "results/store.hpp"

namespace dsgd {

struct HistoryPoint {
  std::string commit;  // the runs' git commit (as recorded, "-dirty" included)
  std::string date;    // created_at of the commit's first stored run
  std::vector<int64_t> run_ids;
  std::vector<double> values;  // the repetitions' values of the metric
  double median = 0, q25 = 0, q75 = 0;
  size_t count = 0;
  size_t loaded = 0;  // runs taken on a busy host (history_run_loaded)
};

struct HistorySeries {
  std::string label;    // the case, as compare labels it ("svm/fashion-mnist ssgd w2 b64 ...")
  std::string machine;  // "host | CPU | MPI | build"
  std::string metric;
  std::vector<HistoryPoint> points;  // stored order of the commits
  std::vector<ChangePoint> changes;  // on the log of the medians (or the medians, if one is <= 0)
  bool log_scale = true;
  bool bigger_is_better = false;  // the metric's good direction
  std::string unit;               // imported series: the file's unit (runs' metrics: empty)
  std::string order = "stored";   // how the points are ordered: "stored" or "git <ref> first-parent"
  size_t off_line = 0;            // commits left out: not on the git line (order "git ...")
};

struct HistoryOptions {
  std::string metric = "step_time_s";  // a compare metric (dsgd-bench compare's list)
  std::string case_filter;             // keep series whose label contains this (empty: all)
  std::string machine_filter;          // keep series whose machine contains this (empty: all)
  ChangePointOptions detect;
  // The points' order: "git" (the first-parent line of git_ref in the repository at git_dir;
  // commits off it are left out), "stored" (the order of storage; imported points by date) or
  // "auto" (git where the directory is a repository and the series has a commit on the line).
  std::string order = "auto";
  std::string git_dir = ".";
  std::string git_ref = "HEAD";
};

// The series of `runs` (completed runs with a summary; the others are left out) for the
// metric. Throws InputError for an unknown metric, naming the known ones.
std::vector<HistorySeries> history_build(const std::vector<RunWithSummary>& runs, const HistoryOptions& options);

// The series of the database: the stored runs' (history_build), or the imported ones for the
// metric `imported` (results/history_import.hpp); ordered as options.order says, change points
// detected. Throws InputError for an unknown metric or order, or order "git" outside a
// repository. What `history`, `track` and `report --history` show.
std::vector<HistorySeries> history_load(const Store& store, const HistoryOptions& options);

// Whether s passes options' --case and --machine filters; if so, its points get their values
// (values[i]: point i's repetitions) and it its change points.
bool history_series_finish(HistorySeries& s, std::vector<std::vector<double>> values, const HistoryOptions& options);

// Sets a point's values, median, quartiles and count.
void history_point_set_values(HistoryPoint& p, std::vector<double> values);

// (Re)computes s.changes from s.points with the detector's options (on the log of the medians
// when they are all positive: s.log_scale).
void history_detect(HistorySeries& s, const ChangePointOptions& options);

// A commit as the tables show it (12 hex digits, "-dirty" kept; "(none)" for no commit).
std::string history_short_commit(const std::string& commit);
// "change +28.9 % (p = 5.3e-06)", and whether it is unconfirmed.
std::string history_change_text(const ChangePoint& c);
// The detector's parameters, as printed under every result.
std::string history_parameters_text(const HistoryOptions& options);

// Whether a run was taken on a busy host: a load beyond its own processes above half a core per
// core (kBusyLoad), or more than 5 % of the CPU time stolen by the hypervisor (kBusySteal).
inline constexpr double kBusyLoad = 0.5, kBusySteal = 0.05;
bool history_run_loaded(const RunWithSummary& r);

// The machine fingerprint of a run.
std::string history_machine(const RunRecord& run);

// Output: a table per series (the last `last` points, 0: all; detection always sees every
// point), CSV (one row per point) and JSON (series with points, changes and the parameters).
std::string history_table(const std::vector<HistorySeries>& series, const HistoryOptions& options, size_t last);
std::string history_csv(const std::vector<HistorySeries>& series, size_t last);
nlohmann::json history_json(const std::vector<HistorySeries>& series, const HistoryOptions& options, size_t last);

}  // namespace dsgd
