// `dsgd-bench compare BASE CAND`: the CI regression gate. Each side is run ids
// ("3,4,5" or "3-5") or a tag ("suite=smoke" selects every repetition of a suite run;
// "tag:X" forces X to be read as a tag), read from --db or from --base-db / --cand-db.
// Exit code: 0 when no gating metric regressed significantly, 1 on a regression, 2 on a
// usage error or when nothing matched. Prints the markdown summary; --markdown, --junit,
// --benchmark-bigger / --benchmark-smaller also write it, JUnit XML and
// github-action-benchmark JSON to files. Method: results/compare_runs.hpp.
#include <fmt/format.h>

#include <fstream>
#include <regex>

#include "cli/commands.hpp"
#include "core/errors.hpp"
#include "core/output_file.hpp"
#include "results/compare_runs.hpp"
#include "results/report_select.hpp"
#include "results/store.hpp"

namespace dsgd {

namespace {

struct CompareCliOptions {
  std::string base, cand;
  std::string db = "./dsgd.db";
  std::string base_db, cand_db;
  std::string threshold = "5%";
  double alpha = 0.05;
  bool ignore_machine = false;
  std::string markdown, junit, bench_bigger, bench_smaller;
};

std::vector<RunWithSummary> side_runs(const std::string& db, const std::string& spec, const char* side) {
  Store store = Store::open_readonly(db);
  ReportSelection selection;
  static const std::regex ids(R"(^[0-9][0-9,\- ]*$)");
  if (spec.rfind("tag:", 0) == 0) {
    selection.tag = spec.substr(4);
  } else if (std::regex_match(spec, ids)) {
    selection.runs = spec;
  } else {
    selection.tag = spec;
  }
  if (selection.runs.empty() && selection.tag.empty())
    DSGD_THROW(InputError, "give run ids (3,4,5) or a tag (suite=smoke)", "{}: empty selection '{}'", side, spec);
  try {
    return report_select_runs(store, selection);
  } catch (const InputError& e) {
    DSGD_THROW(InputError, e.hint(), "{} '{}': {}", side, spec, e.what());
  }
}

void write_file(const std::string& path, const std::string& text, const char* flag) {
  if (path.empty()) return;
  OutputFile output(path, "compare output", flag);
  output.stream() << text;
  output.commit();
}

int compare_run(const CompareCliOptions& o) {
  CompareOptions options;
  compare_parse_thresholds(o.threshold, options);
  options.alpha = o.alpha;
  options.ignore_machine = o.ignore_machine;
  // Refuse unwritable outputs before reading anything.
  const std::pair<const std::string*, const char*> outputs[] = {{&o.markdown, "--markdown"},
                                                                {&o.junit, "--junit"},
                                                                {&o.bench_bigger, "--benchmark-bigger"},
                                                                {&o.bench_smaller, "--benchmark-smaller"}};
  for (const auto& [path, flag] : outputs)
    if (!path->empty() && *path != "-") OutputFile check(*path, "compare output", flag);
  const std::vector<RunWithSummary> base = side_runs(o.base_db.empty() ? o.db : o.base_db, o.base, "baseline");
  const std::vector<RunWithSummary> cand = side_runs(o.cand_db.empty() ? o.db : o.cand_db, o.cand, "candidate");
  const CompareResult result = compare_runs(base, cand, options);
  const std::string markdown = compare_markdown(result, o.base, o.cand);
  fmt::print("{}", markdown);
  for (const std::string& w : result.warnings) fmt::print(stderr, "dsgd-bench: warning: {}\n", w);
  write_file(o.markdown, markdown, "--markdown");
  write_file(o.junit, compare_junit(result), "--junit");
  if (!o.bench_bigger.empty())
    write_file(o.bench_bigger, compare_benchmark_json(result, true).dump(2) + "\n", "--benchmark-bigger");
  if (!o.bench_smaller.empty())
    write_file(o.bench_smaller, compare_benchmark_json(result, false).dump(2) + "\n", "--benchmark-smaller");
  // The gating metrics with a verdict, one line each (group, metric, why).
  auto gating = [&](CompareVerdict verdict) {
    std::string lines;
    for (const CompareGroup& g : result.groups)
      for (const CompareMetricResult& m : g.metrics)
        if (m.metric.gate && m.verdict == verdict)
          lines += fmt::format("\n  {}: {} {}", g.label, m.metric.name, m.note);
    return lines;
  };
  if (result.regressions > 0) {
    fmt::print(stderr, "dsgd-bench: regression:{}\n", gating(CompareVerdict::compare_regressed));
    return 1;
  }
  if (result.inconclusive > 0) {
    fmt::print(stderr, "dsgd-bench: inconclusive (exit 3; rerun with --repeat {}):{}\n", result.repetitions_needed,
               gating(CompareVerdict::compare_inconclusive));
    return 3;
  }
  return 0;
}

}  // namespace

void setup_compare(CLI::App& app) {
  auto opts = std::make_shared<CompareCliOptions>();
  CLI::App* sub = app.add_subcommand("compare", "Compare candidate runs with baseline runs (CI regression gate)");
  sub->add_option("base", opts->base, "baseline: run ids (3,4,5 or 3-5) or a tag (suite=smoke; tag:X forces a tag)")
      ->required();
  sub->add_option("cand", opts->cand, "candidate: run ids or a tag, as the baseline")->required();
  sub->add_option("--db", opts->db, "SQLite results database of both sides")->capture_default_str();
  sub->add_option("--base-db", opts->base_db, "database of the baseline (default: --db)");
  sub->add_option("--cand-db", opts->cand_db, "database of the candidate (default: --db)");
  sub->add_option("--threshold", opts->threshold,
                  "allowed change: 5% (relative) or 0.5pt (absolute, fractions), with per-metric overrides "
                  "throughput=3%,final_test_acc=0.5pt")
      ->capture_default_str();
  sub->add_option("--alpha", opts->alpha, "significance level of the Mann-Whitney U test")
      ->capture_default_str()
      ->check(CLI::Range(1e-6, 0.5));
  sub->add_flag("--ignore-machine", opts->ignore_machine, "match runs from different machines (host, CPU)");
  sub->add_option("--markdown", opts->markdown, "also write the markdown summary here (a PR comment)");
  sub->add_option("--junit", opts->junit, "write JUnit XML here (CI test reporters)");
  sub->add_option("--benchmark-bigger", opts->bench_bigger,
                  "write github-action-benchmark customBiggerIsBetter JSON here");
  sub->add_option("--benchmark-smaller", opts->bench_smaller,
                  "write github-action-benchmark customSmallerIsBetter JSON here");
  sub->callback([opts]() { cli_exit_code() = compare_run(*opts); });
}

}  // namespace dsgd
