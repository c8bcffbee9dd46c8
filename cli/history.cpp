// `dsgd-bench history`: a benchmark's series across commits, with their change points
// (results/history.hpp; docs/reports.md, "History and change points").
#include "results/history.hpp"

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/history_options.hpp"
#include "core/errors.hpp"
#include "results/history_import.hpp"
#include "results/store.hpp"

namespace dsgd {

namespace {
struct HistoryCliOptions {
  std::string db = "./dsgd.db";
  std::string format = "table";
  size_t last = 0;
  HistoryOptions history;
};
}  // namespace

void history_add_options(CLI::App& sub, HistoryOptions& h) {
  sub.add_option("--metric", h.metric,
                 "a compared metric or its alias (step_time, throughput, acc, loss, time_to_target, ...), or "
                 "'imported' for the series brought in by `track import`")
      ->capture_default_str();
  sub.add_option("--order", h.order,
                 "commit order: git (the first-parent line of --git-ref; other commits are left out), stored (the "
                 "order runs were stored; imported points by date), auto (git where it applies)")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "git", "stored"}));
  sub.add_option("--git-dir", h.git_dir, "the repository whose history orders the commits")->capture_default_str();
  sub.add_option("--git-ref", h.git_ref, "the ref whose first-parent line orders the commits")->capture_default_str();
  sub.add_option("--case", h.case_filter, "keep the series whose case label contains this text (e.g. 'svm ssgd w2')");
  sub.add_option("--machine", h.machine_filter,
                 "keep the series whose machine (host | CPU | MPI | build) contains this text");
  sub.add_option("--window", h.detect.window, "points per window of the detector's first pass")->capture_default_str();
  sub.add_option("--max-pvalue", h.detect.max_pvalue,
                 "a change point's significance (two-sided Student's t); the first pass uses 10x")
      ->capture_default_str();
  sub.add_option("--min-magnitude", h.detect.min_magnitude,
                 "smallest relative change kept, e.g. 0.02 for 2 % (0: any significant change)")
      ->capture_default_str();
  sub.add_option("--min-segment", h.detect.min_segment,
                 "commits needed after a change point to confirm it, and between two points (closer ones are "
                 "a transient: the less significant is dropped)")
      ->capture_default_str();
  sub.add_option("--log", h.detect.log_when_positive,
                 "detect on the log of the per-commit medians when they are all positive (relative changes); "
                 "false: on the values as they are")
      ->capture_default_str();
  sub.add_option("--autocorrelation", h.detect.autocorrelation,
                 "allow for serially correlated noise in the final test (AR(1) effective sample size); false: "
                 "the plain t test")
      ->capture_default_str();
}

void setup_history(CLI::App& app) {
  auto opts = std::make_shared<HistoryCliOptions>();
  CLI::App* sub = app.add_subcommand(
      "history",
      "A metric's history across commits: per benchmark case and machine, the median, IQR and count of each "
      "commit's runs, and the change points (E-Divisive means with a Student's t test)");
  sub->add_option("--db", opts->db, "SQLite results database")->capture_default_str();
  history_add_options(*sub, opts->history);
  sub->add_option("--last", opts->last, "print the last N commits of each series (detection sees them all)");
  sub->add_option("--format", opts->format, "table | csv | json")
      ->capture_default_str()
      ->check(CLI::IsMember({"table", "csv", "json"}));
  sub->footer(
      "Series never mix machines. Commits are in the first-parent order of the git repository it runs in\n"
      "(--order), else in the order their first run was stored.\n"
      "Examples:\n"
      "  dsgd-bench history --metric step_time\n"
      "  dsgd-bench history --case 'svm ssgd w2' --last 20 --format csv\n"
      "  dsgd-bench history --metric imported --case my-benchmark\n");
  sub->callback([opts]() {
    Store store = Store::open_readonly(opts->db);
    const std::vector<HistorySeries> series = history_load(store, opts->history);
    if (series.empty())
      DSGD_THROW(InputError,
                 opts->history.metric == kImportedMetric
                     ? "import some first (dsgd-bench track import FILE), or loosen --case / --machine"
                     : "check --case / --machine against `dsgd-bench runs`, or store completed runs first",
                 "history: no series of metric '{}'{}{}", opts->history.metric,
                 opts->history.case_filter.empty() ? "" : " with case '" + opts->history.case_filter + "'",
                 opts->history.machine_filter.empty() ? "" : " on machine '" + opts->history.machine_filter + "'");
    if (opts->format == "csv")
      fmt::print("{}", history_csv(series, opts->last));
    else if (opts->format == "json")
      fmt::print("{}\n", history_json(series, opts->history, opts->last).dump(2));
    else
      fmt::print("{}", history_table(series, opts->history, opts->last));
  });
}

}  // namespace dsgd
