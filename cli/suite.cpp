// `dsgd-bench suite NAME [--repeat R]`: runs every entry of a suite file (suites/NAME.toml;
// format in results/report_suite.hpp) R times, each as its own `dsgd-bench run` child
// process (the same binary) with a generated JSON config, tagged suite=NAME,rep=R.
// Repetitions are interleaved (rep 1 of every entry, then rep 2, ...) so slow drift of the
// machine spreads over all entries. A failed run is reported and the suite goes on; the
// exit code is 1 when any run failed, 2 for a bad suite file or flag. A suite with [[claims]]
// ends with the claims table (results/suite_claims.hpp): a claim that does not reproduce is a
// result, not a failure, and does not change the exit code. On a terminal one
// live line shows which run of how many, the suite's elapsed time and the current run's
// step as of its last evaluation (cli/progress_line.hpp; nothing when stdout is not one).
#include <fmt/format.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>

#include "algorithms/config_check.hpp"
#include "cli/child_process.hpp"
#include "cli/commands.hpp"
#include "cli/progress_line.hpp"
#include "core/errors.hpp"
#include "results/report_suite.hpp"
#include "results/store.hpp"
#include "results/suite_claims.hpp"

namespace dsgd {

namespace {

namespace fs = std::filesystem;

struct SuiteOptions {
  std::string name;
  int repeat = 1;
  std::string db = "./dsgd.db";
  bool dry_run = false;
};

// The step of the child's last evaluation line ("eval step  10/30 ..."), as "10/30";
// empty before its first evaluation.
std::string last_eval_step(const std::string& output) {
  const size_t at = output.rfind("eval step ");
  if (at == std::string::npos) return {};
  std::string text;
  for (size_t i = at + 10; i < output.size() && output[i] != '\n' && text.size() < 32; ++i) {
    if (output[i] == ' ' && !text.empty() && text.back() != '/') break;
    if (output[i] != ' ') text += output[i];
  }
  return text;
}

// The claims table of the runs just completed (`runs_per_entry[e]`: entry e's run ids).
void print_suite_claims(const Suite& suite, const std::vector<std::vector<int64_t>>& runs_per_entry,
                        const std::string& db) {
  if (suite.claims.empty()) return;
  const Store store = Store::open(db);
  fmt::print("claims of suite {} (mean over repetitions):\n{}", suite.name,
             suite_claims_table(suite_claims_evaluate(suite.claims, suite.entry_ids, runs_per_entry, store)));
}

// suite_load checks what results/ can (core's checks); the variants' knobs need the registry.
void suite_entries_validate(const Suite& suite, const std::string& path) {
  for (const auto& entry : suite.entries) {
    RunConfig cfg;
    run_config_apply_json(cfg, entry, path);
    for (const auto& [key, value] : entry.items()) run_config_mark_given(cfg, key);
    config_validate(cfg);
  }
}

// The tally of a suite's runs so far.
struct SuiteTally {
  size_t index = 0, failed = 0;
  std::vector<std::string> ids;
  std::vector<std::vector<int64_t>> runs_per_entry;
};

// Entry e's repetition rep (run `index` of `total`): with --dry-run its command line only;
// else its config written into config_dir, `dsgd-bench run` as a child (a progress line on a
// terminal meanwhile), and its result line (with its output when it failed).
void suite_entry_run(const SuiteOptions& o, const Suite& suite, const std::string& exe, const fs::path& config_dir,
                     size_t e, int rep, size_t total, ProgressLine& progress, SuiteTally& tally) {
  const size_t index = ++tally.index;
  const std::string tag = suite_tag(suite.name, rep);
  const std::string label = suite_entry_label(suite.entries[e], suite.defaults);
  const fs::path config = config_dir / fmt::format("entry-{}.json", e);
  std::vector<std::string> args = {exe, "run", "--config", config.string(), "--db", o.db, "--tag", tag};
  if (o.dry_run) {
    fmt::print("[{}/{}] {} rep={}: dsgd-bench run {} --db {} --tag {}\n", index, total, label, rep,
               suite.entries[e].dump(), o.db, tag);
    return;
  }
  {
    std::ofstream out(config);
    out << suite.entries[e].dump(2) << "\n";
  }
  std::fflush(stdout);
  const auto start = std::chrono::steady_clock::now();
  auto [code, output] = child_process_run(args, [&](const std::string& so_far) {
    if (!progress.enabled()) return;
    const std::string step = last_eval_step(so_far);
    progress.draw(fmt::format("  suite {}: run {}/{} {} rep={}  elapsed {}{}", suite.name, index, total, label, rep,
                              ProgressLine::duration_text(progress.elapsed_s()),
                              step.empty() ? std::string() : "  step " + step));
  });
  progress.clear();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::string id;
  const size_t at = output.rfind("run_id=");
  if (at != std::string::npos) id = output.substr(at + 7, output.find('\n', at) - at - 7);
  if (code == 0 && !id.empty()) {
    tally.ids.push_back(id);
    if (id.find_first_not_of("0123456789") == std::string::npos) tally.runs_per_entry[e].push_back(std::stoll(id));
    fmt::print("[{}/{}] {} rep={}: run_id={} ({:.1f} s)\n", index, total, label, rep, id, seconds);
  } else {
    ++tally.failed;
    fmt::print("[{}/{}] {} rep={}: {} (exit {}{}; {:.1f} s); its output:\n{}\n", index, total, label, rep,
               code == kRunDivergedExit ? "DIVERGED" : "FAILED", code, id.empty() ? "" : ", run_id=" + id, seconds,
               output);
  }
}

// The end of a suite: how many runs completed, its claims, and how to report and compare it.
void suite_summary_print(const SuiteOptions& o, const Suite& suite, const SuiteTally& tally, size_t total,
                         double seconds) {
  fmt::print("suite {}: {} of {} runs completed in {:.0f} s{}\n", suite.name, total - tally.failed, total, seconds,
             tally.failed ? fmt::format(", {} FAILED", tally.failed) : "");
  print_suite_claims(suite, tally.runs_per_entry, o.db);
  fmt::print("  report:  dsgd-bench report --db {} --tag suite={} --format html -o {}.html\n", o.db, suite.name,
             suite.name);
  fmt::print("  compare: dsgd-bench compare --base-db BASE.db --cand-db {} suite={} suite={}\n", o.db, suite.name,
             suite.name);
}

int suite_run(const SuiteOptions& o) {
  const std::string exe = child_process_self_path();
  const std::string path = suite_find(o.name, exe.empty() ? "" : fs::path(exe).parent_path().string());
  const Suite suite = suite_load(path);
  suite_entries_validate(suite, path);
  if (!o.dry_run) Store::open(o.db);  // refuse a bad --db before the first run
  const size_t total = suite.entries.size() * static_cast<size_t>(o.repeat);
  fmt::print("suite {} ({}): {} entr{} x {} repetition{} = {} runs into {}\n", suite.name, path, suite.entries.size(),
             suite.entries.size() == 1 ? "y" : "ies", o.repeat, o.repeat == 1 ? "" : "s", total, o.db);
  if (!suite.description.empty()) fmt::print("  {}\n", suite.description);
  const fs::path config_dir = fs::temp_directory_path() / fmt::format("dsgd-suite-{}", ::getpid());
  if (!o.dry_run) fs::create_directories(config_dir);
  SuiteTally tally;
  tally.runs_per_entry.resize(suite.entries.size());
  const auto suite_start = std::chrono::steady_clock::now();
  ProgressLine progress;  // draws nothing when stdout is not a terminal
  for (int rep = 1; rep <= o.repeat; ++rep) {
    for (size_t e = 0; e < suite.entries.size(); ++e)
      suite_entry_run(o, suite, exe, config_dir, e, rep, total, progress, tally);
  }
  std::error_code ec;
  fs::remove_all(config_dir, ec);
  if (o.dry_run) {
    for (const SuiteClaim& c : suite.claims)
      fmt::print("claim {}: {}\n", c.id,
                 c.untestable.empty() ? fmt::format("{} of {} vs {}", c.metric, c.lhs, c.rhs) : "not testable here");
    return 0;
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - suite_start).count();
  suite_summary_print(o, suite, tally, total, seconds);
  return tally.failed ? 1 : 0;
}

}  // namespace

void setup_suite(CLI::App& app) {
  auto opts = std::make_shared<SuiteOptions>();
  CLI::App* sub =
      app.add_subcommand("suite", "Run a standardized benchmark suite (suites/NAME.toml), tagged suite=NAME,rep=R");
  sub->add_option("name", opts->name, "suite name (smoke, standard, papers) or a suite file path")->required();
  sub->add_option("--repeat", opts->repeat, "repetitions of every entry (9 or more for a reliable compare)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  sub->add_option("--db", opts->db, "SQLite results database")->capture_default_str();
  sub->add_flag("--dry-run", opts->dry_run, "print the expanded runs without running them");
  sub->callback([opts]() { cli_exit_code() = suite_run(*opts); });
}

}  // namespace dsgd
