// `dsgd-bench track`: the CI gate over a benchmark's history, and `track annotate` /
// `track annotations` (results/track.hpp; docs/reports.md, "Tracking and the CI gate").
#include "results/track.hpp"

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/history_options.hpp"
#include "core/errors.hpp"
#include "results/store.hpp"

namespace dsgd {

namespace {

struct TrackCliOptions {
  std::string db = "./dsgd.db";
  std::string format = "table";
  TrackOptions track;
  Annotation annotation;
  std::string kind = "expected";
};

int track_gate(const TrackCliOptions& o) {
  Store store = Store::open(o.db);
  const TrackReport report = track_run(store, o.track);
  if (o.format == "json")
    fmt::print("{}\n", track_json(report, o.track).dump(2));
  else
    fmt::print("{}", track_table(report, o.track));
  if (report.regressed > 0) {
    fmt::print(stderr, "dsgd-bench: {} regression(s) (exit 1)\n", report.regressed);
    return 1;
  }
  if (report.inconclusive > 0) {
    fmt::print(stderr, "dsgd-bench: inconclusive (exit 3): {} series changed beyond the threshold, unsupported\n",
               report.inconclusive);
    return 3;
  }
  if (report.tested == 0)
    DSGD_THROW(InputError,
               "store more commits' runs of the case first (the baseline needs 3 commits since the last change)",
               "track: no series could be tested ({} selected)", report.results.size());
  return 0;
}

void setup_annotate(CLI::App& track, const std::shared_ptr<TrackCliOptions>& opts) {
  CLI::App* sub = track.add_subcommand("annotate",
                                       "Annotate a commit: an expected change, an invalid or an outlying "
                                       "measurement (stored in the database)");
  sub->add_option("commit", opts->annotation.commit, "the commit (its hash, or a prefix of 4 or more characters)")
      ->required();
  sub->add_option("--kind", opts->kind,
                  "expected (an acknowledged change: no alert), invalid (a broken measurement: left out and hidden), "
                  "outlier (left out of detection and the baseline, listed)")
      ->capture_default_str();
  sub->add_option("--note", opts->annotation.note, "why, for whoever reads the history");
  sub->add_option("--db", opts->db, "SQLite results database")->capture_default_str();
  sub->add_option("--case", opts->annotation.series, "only series whose case label contains this (default: all)");
  sub->add_option("--metric", opts->annotation.metric, "only this metric (default: all)");
  sub->callback([opts]() {
    Annotation a = opts->annotation;
    a.kind = annotation_kind_parse(opts->kind);
    Store store = Store::open(opts->db);
    const int64_t id = annotation_add(store, a);
    fmt::print("annotation {}: {} {}\n", id, annotation_kind_text(a.kind), a.commit);
  });
  CLI::App* list = track.add_subcommand("annotations", "List the stored annotations");
  list->add_option("--db", opts->db, "SQLite results database")->capture_default_str();
  list->callback([opts]() {
    Store store = Store::open_readonly(opts->db);
    fmt::print("{:>4}  {:<20} {:<14} {:<9} {:<20} {:<16} {}\n", "id", "created", "commit", "kind", "case", "metric",
               "note");
    for (const Annotation& a : annotations_list(store))
      fmt::print("{:>4}  {:<20} {:<14} {:<9} {:<20} {:<16} {}\n", a.id, a.created_at.substr(0, 19), a.commit,
                 annotation_kind_text(a.kind), a.series.empty() ? "(all)" : a.series,
                 a.metric.empty() ? "(all)" : a.metric, a.note);
  });
}

}  // namespace

void setup_track(CLI::App& app) {
  auto opts = std::make_shared<TrackCliOptions>();
  CLI::App* sub = app.add_subcommand(
      "track",
      "CI gate over history: record each series' change points, and test each series' newest commit against the "
      "commits since its last change (exit 1: regressed, 3: inconclusive)");
  sub->add_option("--db", opts->db, "SQLite results database")->capture_default_str();
  history_add_options(*sub, opts->track.history);
  sub->add_option("--commit", opts->track.commit, "the candidate commit (a prefix; default: each series' newest)");
  sub->add_option("--threshold", opts->track.threshold, "smallest relative change that matters (0.05: 5 %)")
      ->capture_default_str();
  sub->add_option("--gate-pvalue", opts->track.gate_pvalue, "the candidate test's significance")->capture_default_str();
  sub->add_option("--baseline", opts->track.baseline, "most commits in the baseline (the newest since the last change)")
      ->capture_default_str();
  sub->add_option("--format", opts->format, "table | json")
      ->capture_default_str()
      ->check(CLI::IsMember({"table", "json"}));
  setup_annotate(*sub, opts);
  sub->footer(
      "Exit: 0 no regression, 1 a regression, 2 bad input or nothing testable, 3 inconclusive.\n"
      "Examples:\n"
      "  dsgd-bench track --metric step_time\n"
      "  dsgd-bench track annotate 1a2b3c4d --kind expected --note 'bigger model'\n");
  sub->callback([sub, opts]() {
    if (!sub->get_subcommands().empty()) return;  // annotate / annotations ran
    cli_exit_code() = track_gate(*opts);
  });
}

}  // namespace dsgd
