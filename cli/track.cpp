// `dsgd-bench track`: the CI gate over a benchmark's history, and `track annotate` /
// `track annotations` (results/track.hpp; docs/reports.md, "Tracking and the CI gate").
#include "results/track.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli/child_process.hpp"
#include "cli/commands.hpp"
#include "cli/history_options.hpp"
#include "core/errors.hpp"
#include "results/compare_runs.hpp"
#include "results/history_import.hpp"
#include "results/noise_floor.hpp"
#include "results/sqlite.hpp"
#include "results/store.hpp"

namespace dsgd {

namespace {

struct TrackCliOptions {
  std::string db = "./dsgd.db";
  std::string format = "table";
  TrackOptions track;
  Annotation annotation;
  std::string kind = "expected";
  // import
  std::string import_file;
  ImportOptions import;
  std::string bigger_is_better;  // "", "true", "false"
  // calibrate
  int repetitions = 10;
  std::string calibrate_commit;
  std::vector<std::string> command;
};

// `dsgd-bench ARGS...` as a child of this program, its stdout discarded; its exit status.
int run_self_quietly(std::vector<std::string> args) {
  const std::string exe = child_process_self_path();
  if (exe.empty()) DSGD_THROW(Error, "", "track calibrate: cannot find this program's path");
  args.insert(args.begin(), exe);
  return child_process_run(args, [](const std::string&) {}).first;
}

int64_t newest_run_id(const Store& store) {
  SqlStatement stmt(store.handle(), "SELECT coalesce(max(id), 0) FROM runs");
  return stmt.step() ? stmt.column_int64(0) : 0;
}

// `track calibrate`: R runs of the command (or the stored runs of --commit), their
// coefficients of variation stored as the series' noise floors.
void track_calibrate(const TrackCliOptions& o) {
  if (o.command.empty() == o.calibrate_commit.empty())
    DSGD_THROW(InputError,
               "pass the command to repeat after -- (e.g. -- run --workload svm --workers 2 --steps 300), or "
               "--commit C to use the runs already stored for commit C",
               "track calibrate: {}", o.command.empty() ? "nothing to measure" : "both a command and --commit given");
  if (o.repetitions < 3)
    DSGD_THROW(InputError, "pass --repetitions 3 or more (10 or more for a useful floor)",
               "track calibrate: --repetitions {} is too few to measure a spread", o.repetitions);
  std::vector<RunWithSummary> runs;
  if (!o.command.empty()) {
    std::vector<std::string> args = o.command;
    if (std::find(args.begin(), args.end(), "--db") == args.end()) {
      args.push_back("--db");
      args.push_back(o.db);
    }
    int64_t before = 0;
    {
      Store store = Store::open(o.db);
      before = newest_run_id(store);
    }
    for (int i = 1; i <= o.repetitions; ++i) {
      fmt::print(stderr, "track calibrate: run {}/{}\n", i, o.repetitions);
      const int rc = run_self_quietly(args);
      if (rc != 0)
        DSGD_THROW(InputError, "fix the command so that it runs on its own first",
                   "track calibrate: run {} of `dsgd-bench {}` exited with {}", i, fmt::join(o.command, " "), rc);
    }
    Store store = Store::open(o.db);
    for (RunWithSummary& r : store.runs_list(0))
      if (r.run.id > before) runs.push_back(std::move(r));
  } else {
    Store store = Store::open_readonly(o.db);
    for (RunWithSummary& r : store.runs_list(0))
      if (r.run.git_commit.compare(0, o.calibrate_commit.size(), o.calibrate_commit) == 0) runs.push_back(std::move(r));
  }
  std::vector<std::string> metrics;
  for (const CompareMetric& m : compare_metrics()) metrics.push_back(m.name);
  const std::vector<NoiseFloor> floors = noise_floor_measure(runs, metrics);
  if (floors.empty())
    DSGD_THROW(InputError, "repeat one configuration at least 3 times (one commit, one machine)",
               "track calibrate: no series has 3 or more completed runs of one commit among the {} run(s)",
               runs.size());
  Store store = Store::open(o.db);
  noise_floor_store(store, floors);
  fmt::print("{:<48} {:<22} {:>4} {:>8} {:>16}\n", "case", "metric", "runs", "CV", "floor (median of 3)");
  for (const NoiseFloor& f : floors)
    fmt::print("{:<48} {:<22} {:>4} {:>7.2f}% {:>15.2f}%\n", f.series.substr(0, 48), f.metric, f.runs, 100 * f.cv,
               100 * noise_floor_of_median(f.cv, 3));
  fmt::print("stored {} noise floor(s) in {}: `track` gates those series only on changes beyond them\n", floors.size(),
             o.db);
}

void track_import(TrackCliOptions o) {
  std::ifstream in(o.import_file, std::ios::binary);
  if (!in) DSGD_THROW(InputError, "pass a readable file", "track import: cannot read '{}'", o.import_file);
  std::stringstream text;
  text << in.rdbuf();
  if (!o.bigger_is_better.empty()) o.import.bigger_is_better = o.bigger_is_better == "true";
  const std::vector<ImportedPoint> points = history_import_parse(text.str(), o.import_file, o.import);
  Store store = Store::open(o.db);
  const std::string source = std::filesystem::path(o.import_file).filename().string();
  const ImportSummary s = history_import_store(store, points, o.import, source);
  fmt::print(
      "imported {} point(s) of {} series from {} ({} already stored); see them with "
      "`dsgd-bench history --metric imported`\n",
      s.added, s.series, o.import_file, s.duplicates);
}

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
  CLI::App* import = track.add_subcommand(
      "import",
      "Import history from a CSV (series,commit,date,value[,unit]) or github-action-benchmark's data.js / JSON; "
      "its series are the metric 'imported' of history, track and report --history");
  import->add_option("file", opts->import_file, "the file")->required();
  import->add_option("--db", opts->db, "SQLite results database")->capture_default_str();
  import->add_option("--format", opts->import.format, "auto | csv | gab (github-action-benchmark)")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "csv", "gab"}));
  import->add_option("--machine", opts->import.machine, "the machine the values were measured on (series never mix)")
      ->capture_default_str();
  import
      ->add_option("--bigger-is-better", opts->bigger_is_better,
                   "true | false: the values' good direction (default: from the tool or the unit: rates such as "
                   "ops/sec are bigger-is-better)")
      ->check(CLI::IsMember({"true", "false"}));
  import->callback([opts]() { track_import(*opts);
});

CLI::App* calibrate = track.add_subcommand(
    "calibrate",
    "A/A calibration: run a command R times at this commit (or take the stored runs of --commit) and store each "
    "series' coefficient of variation as its noise floor");
calibrate->add_option("--db", opts->db, "SQLite results database")->capture_default_str();
calibrate->add_option("-R,--repetitions", opts->repetitions, "runs of the command")->capture_default_str();
calibrate->add_option("--commit", opts->calibrate_commit,
                      "measure from the runs already stored for this commit instead of running anything");
calibrate->add_option("command", opts->command, "after --: the dsgd-bench command to repeat (run ... or suite ...)");
calibrate->footer(
    "Example:\n  dsgd-bench track calibrate -R 10 -- run --workload svm --workers 2 --steps 300 --batch 64\n");
calibrate->callback([opts]() { track_calibrate(*opts); });

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
}  // namespace

}  // namespace dsgd

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
  sub->add_option("--reference", opts->track.reference,
                  "a frozen reference case (text of its label) run beside the others: a regression it shows too "
                  "is the machine's, and inconclusive");
  sub->add_option("--format", opts->format, "table | json")
      ->capture_default_str()
      ->check(CLI::IsMember({"table", "json"}));
  setup_annotate(*sub, opts);
  sub->footer(
      "Exit: 0 no regression, 1 a regression, 2 bad input or nothing testable, 3 inconclusive.\n"
      "Examples:\n"
      "  dsgd-bench track --metric step_time\n"
      "  dsgd-bench track annotate 1a2b3c4d --kind expected --note 'bigger model'\n"
      "  dsgd-bench track calibrate -R 10 -- run --workload svm --workers 2 --steps 300\n"
      "  dsgd-bench track import bench-history.csv && dsgd-bench track --metric imported\n");
  sub->callback([sub, opts]() {
    if (!sub->get_subcommands().empty()) return;  // annotate / annotations ran
    cli_exit_code() = track_gate(*opts);
  });
}

}  // namespace dsgd
