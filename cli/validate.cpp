// `dsgd-bench validate --config FILE`: the simulator's predictions against a real run.
// Runs the configuration three times, each a child `dsgd-bench run` of this binary:
//   1. profile:   1 worker on the real backend, no stragglers, no emulated network: the
//                 compute profile of this machine (its measured data/fwd/bwd/opt per step);
//   2. measured:  2 MPI ranks with the configuration's emulated network and stragglers;
//   3. predicted: 2 simulated workers (--backend sim --profile-from <profile run>
//                 --native-floor: emulation only adds time to a real collective, so each
//                 simulated communication lasts at least this host's calibrated native time).
// Then prints, per metric (step time, compute, comm, wait, injected delay, throughput), the
// measured value, the prediction and the relative error |predicted − measured| / measured,
// and stores them (tables validations / validation_metrics, results/validation_store.hpp).
// The profile run is independent of the measured one, so the prediction is not fitted to
// what it predicts. `dsgd-bench validate --list` shows the stored validations.
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "algorithms/config_check.hpp"
#include "cli/commands.hpp"
#include "core/errors.hpp"
#include "core/run_config.hpp"
#include "core/system_info.hpp"
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

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'')
      out += "'\\''";
    else
      out += c;
  }
  return out + "'";
}

// "0.52 0.61 0.70" from /proc/loadavg ("unknown" when unreadable).
std::string load_average() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c;
  if (!(in >> a >> b >> c)) return "unknown";
  return a + " " + b + " " + c;
}

// Runs `self run --config path` and returns the run id of its last line; its output is
// shown indented. Throws Error when the run fails.
int64_t run_child(const std::string& role, const std::string& config_path) {
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  const std::string command = fmt::format("{} run --config {} 2>&1", shell_quote(self), shell_quote(config_path));
  fmt::print("# {}: dsgd-bench run --config {}\n", role, config_path);
  std::fflush(stdout);
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) DSGD_THROW(Error, "", "validate: cannot start '{}'", command);
  std::string last, line;
  char buf[4096];
  while (std::fgets(buf, sizeof(buf), pipe)) {
    line += buf;
    if (!line.empty() && line.back() == '\n') {
      line.pop_back();
      if (line.rfind("eval step", 0) == 0 || line.rfind("dsgd-bench:", 0) == 0 || line.rfind("  hint", 0) == 0)
        fmt::print("    {}\n", line);
      if (!line.empty()) last = line;
      line.clear();
    }
  }
  const int status = pclose(pipe);
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
  int64_t id = 0;
  if (code == 0 && last.rfind("run_id=", 0) == 0) id = std::stoll(last.substr(7));
  if (id <= 0) {
    if (code == 2)
      DSGD_THROW(InputError, "fix the configuration file (the message above names the problem)",
                 "validate: the {} run refused the configuration", role);
    DSGD_THROW(Error, "see the run's message above", "validate: the {} run failed (exit code {})", role, code);
  }
  return id;
}

std::string write_config(const RunConfig& cfg, const std::string& path) {
  std::ofstream out(path);
  out << run_config_to_json(cfg).dump(2) << "\n";
  if (!out) DSGD_THROW(InputError, "pass a --db in a writable directory", "validate: cannot write '{}'", path);
  return path;
}

void print_validation(const ValidationRecord& v) {
  fmt::print("validation {}  {}  profile run {}, measured run {} (mpi), simulated run {} (sim)\n", v.id, v.created_at,
             v.profile_run_id, v.measured_run_id, v.simulated_run_id);
  fmt::print("  {:<26} {:>14} {:>14} {:>10}\n", "metric", "measured", "predicted", "rel.error");
  for (const ValidationMetric& m : v.metrics) {
    const bool per_s = m.metric.find("throughput") != std::string::npos;
    const std::string unit = per_s ? "" : " ms";
    const double scale = per_s ? 1.0 : 1e3;
    fmt::print("  {:<26} {:>11.4f}{:<3} {:>11.4f}{:<3} {:>10}\n", m.metric, m.measured * scale, unit,
               m.predicted * scale, unit, m.rel_error ? fmt::format("{:.1f}%", *m.rel_error * 100) : "-");
  }
}

int run_validate(const ValidateOptions& o) {
  if (o.list) {
    Store store = Store::open_readonly(o.db.empty() ? RunConfig{}.db : o.db);
    const auto all = validations_list(store, static_cast<int>(o.limit));
    if (all.empty()) fmt::print("no validations in {} (run dsgd-bench validate --config FILE)\n", store.path());
    for (const ValidationRecord& v : all) print_validation(v);
    return 0;
  }
  if (o.config_file.empty())
    DSGD_THROW(InputError, "pass --config FILE (the keys of dsgd-bench run), or --list", "validate: no --config");
  RunConfig cfg;
  run_config_load_file(cfg, o.config_file);
  if (!o.db.empty()) cfg.db = o.db;
  if (cfg.backend == "sim" || cfg.timing_only || cfg.profile_from != 0 || cfg.compute_scale != 1.0)
    DSGD_THROW(InputError, "describe the real run in the file; validate adds the simulated one",
               "{}: validate compares a real run with its simulation; drop backend/timing-only/profile-from/"
               "compute-scale",
               o.config_file);
  if (cfg.workers != 2 && cfg.workers != 1)
    fmt::print("# note: validate runs 2 MPI ranks against 2 simulated workers (the file says {})\n", cfg.workers);
  cfg.backend = "mpi";
  cfg.workers = 2;
  cfg.save_params.clear();
  config_validate(cfg);
  Store store = Store::open(cfg.db);  // creates and migrates before the children write
  if (!cfg.bandwidth.empty() && !store.calibration_latest(system_info_read().host))
    fmt::print(
        "# note: no calibration of this host in {}: the measured run adds the emulated link to the real "
        "fabric instead of replacing it (run `dsgd-bench calibrate` first for a fair comparison)\n",
        cfg.db);

  const std::filesystem::path dir = std::filesystem::absolute(cfg.db).parent_path();
  const std::string stem = fmt::format("dsgd-validate-{}", getpid());
  RunConfig profile = cfg;
  profile.workers = 1;
  profile.straggler.clear();
  profile.bandwidth.clear();
  profile.latency.clear();
  profile.inter_bandwidth.clear();
  profile.inter_latency.clear();
  profile.topology = "complete";
  profile.target.clear();
  profile.tag = "validate:profile";
  RunConfig measured = cfg;
  measured.tag = "validate:measured";
  std::vector<std::string> files;
  auto path = [&](const char* role) {
    files.push_back((dir / fmt::format("{}-{}.json", stem, role)).string());
    return files.back();
  };
  const std::string load_before = load_average();
  ValidationRecord v;
  try {
    v.profile_run_id =
        run_child("profile (1 worker, no stragglers or emulation)", write_config(profile, path("profile")));
    v.measured_run_id = run_child("measured (mpi, 2 ranks)", write_config(measured, path("measured")));
    RunConfig simulated = cfg;
    simulated.backend = "sim";
    simulated.profile_from = v.profile_run_id;
    simulated.native_floor = true;  // the measured collectives last at least the native fabric's time
    simulated.tag = "validate:simulated";
    v.simulated_run_id = run_child("predicted (sim, 2 workers)", write_config(simulated, path("simulated")));
  } catch (...) {
    for (const auto& f : files) std::filesystem::remove(f);
    throw;
  }
  for (const auto& f : files) std::filesystem::remove(f);

  const RunWithSummary m = store.run_get(v.measured_run_id);
  const RunWithSummary s = store.run_get(v.simulated_run_id);
  if (!m.summary || !s.summary) DSGD_THROW(Error, "", "validate: a run has no summary");
  struct Field {
    const char* name;
    double Summary::*member;
  };
  const Field fields[] = {
      {"step_time_s", &Summary::step_time_s}, {"compute_s", &Summary::compute_s},
      {"comm_s", &Summary::comm_s},           {"wait_s", &Summary::wait_s},
      {"injected_s", &Summary::injected_s},   {"throughput_samples_per_s", &Summary::throughput_samples_per_s},
  };
  for (const Field& f : fields) {
    const double a = (*m.summary).*(f.member);
    const double b = (*s.summary).*(f.member);
    v.metrics.push_back(ValidationMetric{f.name, a, b, validation_rel_error(a, b)});
  }
  v.host = system_info_read().host;
  v.config_json = run_config_to_json(cfg).dump();
  v.id = validation_store(store, v);
  v.created_at = validations_list(store, 1).front().created_at;
  fmt::print("\n");
  print_validation(v);
  fmt::print("# machine load (1, 5, 15 min) before: {}; after: {}\n", load_before, load_average());
  fmt::print("validation_id={}\n", v.id);
  return 0;
}

}  // namespace

void setup_validate(CLI::App& app) {
  auto opts = std::make_shared<ValidateOptions>();
  CLI::App* sub = app.add_subcommand(
      "validate", "Run a configuration on 2 MPI ranks and on the simulator; print and store predicted vs measured");
  sub->add_option("--config", opts->config_file, "JSON or TOML run configuration (the keys of dsgd-bench run)")
      ->check(CLI::ExistingFile);
  sub->add_option("--db", opts->db, "SQLite results database (default: the file's db, else ./dsgd.db)");
  sub->add_flag("--list", opts->list, "show the stored validations instead of running one");
  sub->add_option("--limit", opts->limit, "with --list: how many (newest first)")->capture_default_str();
  sub->footer(
      "Example:\n"
      "  dsgd-bench validate --config examples/validate_ssgd.toml\n"
      "The file describes the real run (algorithm, steps, --bandwidth, --straggler ...); the tool adds a 1-worker\n"
      "profile run and the simulated run. The last line is validation_id=<id>.\n");
  sub->callback([opts]() { cli_exit_code() = run_validate(*opts); });
}

}  // namespace dsgd
