// `dsgd-bench validate --config FILE`: binds the options and prints what the validation protocol
// (engine/validation.hpp: a profile run of N ranks without communication, N MPI ranks and N
// simulated workers of one configuration, then per-metric predicted vs measured, stored) reports, with one live
// progress line on a terminal; `dsgd-bench validate --list` shows the stored validations.
#include <fmt/format.h>

#include <array>
#include <cstdio>

#include "cli/child_run_printer.hpp"
#include "cli/commands.hpp"
#include "core/errors.hpp"
#include "core/run_config.hpp"
#include "core/system_info.hpp"
#include "engine/validation.hpp"
#include "results/report_rows.hpp"
#include "results/store.hpp"
#include "results/validation_store.hpp"

namespace dsgd {

namespace {

struct ValidateOptions {
  std::string config_file;
  std::string db;
  bool list = false;
  int64_t limit = 20;
};

// "0.52 0.61 0.70" ("unknown" when unreadable).
std::string load_average() {
  const std::array<double, 3> load = system_load_average();
  if (load[0] < 0) return "unknown";
  return fmt::format("{:.2f} {:.2f} {:.2f}", load[0], load[1], load[2]);
}

void print_validation(const Store& store, const ValidationRecord& v) {
  fmt::print("validation {}  {}  profile run {}, measured run {} (mpi), simulated run {} (sim)\n", v.id, v.created_at,
             v.profile_run_id, v.measured_run_id, v.simulated_run_id);
  fmt::print("  {:<26} {:>14} {:>14} {:>10}\n", "metric", "measured", "predicted", "rel.error");
  for (const ValidationMetric& m : v.metrics) {
    if (m.metric == kValidationOwnComputeStep || m.metric == kValidationRankSpread ||
        m.metric == kValidationStepStandardError || m.metric == kValidationSeedSpread)
      continue;  // in their notes
    const bool per_s = m.metric.find("throughput") != std::string::npos;
    const std::string unit = per_s ? "" : " ms";
    const double scale = per_s ? 1.0 : 1e3;
    fmt::print("  {:<26} {:>11.4f}{:<3} {:>11.4f}{:<3} {:>10}\n", m.metric, m.measured * scale, unit,
               m.predicted * scale, unit, m.rel_error ? fmt::format("{:.1f}%", *m.rel_error * 100) : "-");
  }
  for (const std::string& note : validation_notes(v)) fmt::print("  note: {}\n", note);
  // What the simulated run itself said its prediction cannot be trusted for (a run deleted
  // since: nothing).
  std::string config;
  try {
    config = store.run_get(v.simulated_run_id).run.config_json;
  } catch (const InputError&) {
  }
  for (const std::string& w : report_prediction_warnings(nlohmann::json::parse(config, nullptr, false)))
    fmt::print("  note: the simulated run warned: {}\n", w);
}

int run_validate(const ValidateOptions& o) {
  if (o.list) {
    Store store = Store::open_readonly(o.db.empty() ? RunConfig{}.db : o.db);
    const auto all = validations_list(store, static_cast<int>(o.limit));
    if (all.empty()) fmt::print("no validations in {} (run dsgd-bench validate --config FILE)\n", store.path());
    for (const ValidationRecord& v : all) print_validation(store, v);
    return 0;
  }
  if (o.config_file.empty())
    DSGD_THROW(InputError, "pass --config FILE (the keys of dsgd-bench run), or --list", "validate: no --config");
  RunConfig file_cfg;
  run_config_load_file(file_cfg, o.config_file);
  if (!o.db.empty()) file_cfg.db = o.db;
  ChildRunPrinter printer("validate", true);
  const RunConfig cfg = validation_config(file_cfg, o.config_file, printer);
  Store store = Store::open(cfg.db);  // creates and migrates before the children write
  const std::string load_before = load_average();
  const ValidationRecord v = validation_run(cfg, store, printer);
  printer.done();
  fmt::print("\n");
  print_validation(store, v);
  fmt::print("# machine load (1, 5, 15 min) before: {}; after: {}\n", load_before, load_average());
  fmt::print("validation_id={}\n", v.id);
  return 0;
}

}  // namespace

void setup_validate(CLI::App& app) {
  auto opts = std::make_shared<ValidateOptions>();
  CLI::App* sub = app.add_subcommand(
      "validate", "Run a configuration on MPI ranks and on the simulator; print and store predicted vs measured");
  sub->add_option("--config", opts->config_file, "JSON or TOML run configuration (the keys of dsgd-bench run)")
      ->check(CLI::ExistingFile);
  sub->add_option("--db", opts->db, "SQLite results database (default: the file's db, else ./dsgd.db)");
  sub->add_flag("--list", opts->list, "show the stored validations instead of running one");
  sub->add_option("--limit", opts->limit, "with --list: how many (newest first)")->capture_default_str();
  sub->footer(
      "Example:\n"
      "  dsgd-bench validate --config examples/validate_ssgd.toml\n"
      "The file describes the real run (workers, algorithm, steps, --bandwidth, --straggler ...; 2 workers when it\n"
      "names fewer, at most one per core); the tool adds a profile run (the same ranks computing without\n"
      "communication), the simulated run, and the simulated run again from the measured run's own compute\n"
      "(each simulated worker computing at each step what its measured rank did).\n"
      "The last line is validation_id=<id>.\n");
  sub->callback([opts]() { cli_exit_code() = run_validate(*opts); });
}

}  // namespace dsgd
