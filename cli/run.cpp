// `dsgd-bench run`: validates the configuration (flags over an optional JSON/TOML file),
// re-launches itself through mpiexec when asked for N > 1 workers outside of mpiexec,
// then trains on every rank and has rank 0 store and print the results. The last line
// printed is `run_id=<id>`.
#include <fmt/format.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>

#include "algorithms/algorithm.hpp"
#include "algorithms/config_check.hpp"
#include "algorithms/variant.hpp"
#include "cli/commands.hpp"
#include "cli/progress_line.hpp"
#include "cli/run_format.hpp"
#include "cli/run_options.hpp"
#include "cluster/backends.hpp"
#include "cluster/launcher.hpp"
#include "cluster/network_model.hpp"
#include "cluster/straggler.hpp"
#include "cluster/topology.hpp"
#include "core/errors.hpp"
#include "core/output_file.hpp"
#include "core/run_config.hpp"
#include "core/system_info.hpp"
#include "engine/collective_check.hpp"
#include "engine/fabric_file.hpp"
#include "engine/interrupt.hpp"
#include "engine/preflight.hpp"
#include "engine/sim_run.hpp"
#include "engine/trainer.hpp"
#include "results/report_rows.hpp"
#include "results/store.hpp"
#include "results/target.hpp"
#include "workloads/datasets/dataset.hpp"
#include "workloads/workload.hpp"

namespace dsgd {

namespace {

// `run`'s options: the RunConfig binding shared with dsgd-tune, plus launch-only ones.
struct RunCommandOptions : RunOptionBinding {
  bool oversubscribe = false;  // a launch option, not part of the run's configuration
  bool print_config = false;   // --print-config: print every setting at start (output only)
};

// Everything checkable before starting workers, cheapest first; the database last so a
// bad flag never creates a file.
void validate_before_launch(const RunConfig& cfg) {
  config_validate(cfg);
  if (!cfg.fabric.empty()) fabric_file_read(cfg.fabric);  // a bad file is refused before anything starts
  const Backend& backend = backend_get(cfg.backend);
  backend_require_available(backend);
  // A device backend needs a workload that computes on its device; none does yet (docs/gpu.md).
  if (!backend.device.is_host())
    DSGD_THROW(
        InputError,
        "run the GPU step with bench_gpu_step or scripts/gpu-check.sh (docs/gpu.md), or train with --backend mpi",
        "--backend {}: training on the GPU through `dsgd-bench run` is not implemented yet (the workloads "
        "compute in host memory)",
        backend.name);
  preflight_check_names(cfg);
  Stragglers::parse(cfg.straggler, static_cast<int>(cfg.workers), cfg.seed);
  const int workers = static_cast<int>(cfg.workers);
  const Topology topology = variant_get(cfg.algo).reads_topology ? topology_make(cfg.topology, workers, cfg.seed)
                                                                 : topology_groups(cfg.topology, workers);
  network_model_from_flags(cfg.bandwidth, cfg.latency, cfg.inter_bandwidth, cfg.inter_latency, topology.groups,
                           cfg.link_efficiency, cfg.mtu);
  if (!cfg.hostfile.empty() && !std::filesystem::is_regular_file(cfg.hostfile))
    DSGD_THROW(InputError, "pass an existing MPI hostfile", "--hostfile: no file '{}'", cfg.hostfile);
  if (!cfg.save_params.empty()) {
    const auto parent = std::filesystem::absolute(cfg.save_params).parent_path();
    if (!std::filesystem::is_directory(parent))
      DSGD_THROW(InputError, "create the directory first", "--save-params: directory '{}' does not exist",
                 parent.string());
  }
  Store::open(cfg.db);
}

// What rank 0 prints while a run goes (the same for the mpi and sim backends): the effective
// configuration at start (the sim's clock, profile and network too), one line per
// evaluation, a live progress line between them on a terminal, the summary at the end. A
// failed write (stdout on a full disk) does not stop the run: stdout_print keeps the error,
// and report_lost_output says so once the run is stored.
class RunPrinter {
 public:
  RunPrinter(const RunConfig& cfg, bool full_config)
      : cfg_(cfg),
        full_config_(full_config),
        progress_(static_cast<double>(cfg.batch) * static_cast<double>(cfg.workers)) {}

  TrainerCallbacks callbacks() {
    TrainerCallbacks cb;
    cb.on_start = [this](const RunRecord& record) {
      total_steps_ = record.steps;
      stdout_print(format_config(cfg_, record, full_config_));
      const auto config = nlohmann::json::parse(record.config_json);
      stdout_print(format_paging_warning(config.value("dataset-pages", nlohmann::json{})));
      stdout_print(format_copy_aliasing_warning(config.value("copy-aliasing", nlohmann::json{})));
      stdout_print(format_eval_set(config.value("eval-set", nlohmann::json{})));
      if (backend_get(cfg_.backend).has(cap_virtual_clock)) {
        const auto details = config.value("backend-details", nlohmann::json{});
        const double memory = details.value("memory-estimate-bytes", 0.0);
        stdout_print(fmt::format("  {:<13} virtual clock; profile {}; network {}{}\n", cfg_.backend,
                                 details.value("profile", "?"), details.value("network", "?"),
                                 memory > 0 ? fmt::format("; about {:.3g} MB", memory / 1e6) : ""));
        // What the prediction cannot be trusted for: a noisy profile, a network taken as ideal.
        for (const std::string& w : report_prediction_warnings(config))
          stdout_print(fmt::format("  {:<13} {}\n", "warning", w));
        if (details.value("network-ideal", false))
          stdout_print(
              fmt::format("  {:<13} collectives take 0 s: no --bandwidth and no calibrated fabric of this "
                          "host (dsgd-bench calibrate --workers 2 measures it)\n",
                          "warning"));
      }
      stdout_print("", true);
    };
    cb.on_eval = [this](const EvalRow& row) {
      progress_.clear();
      stdout_print(format_eval_line(row, total_steps_) + "\n", true);
    };
    if (progress_.enabled())
      cb.on_progress = [this](const TrainProgress& p) { progress_.update(p.steps_done, p.steps_total, p.last_loss); };
    return cb;
  }

  void finished(const Store& store, const TrainResult& result) {
    progress_.clear();
    if (!result.stopped.empty()) stdout_print(fmt::format("stopped: {}\n", result.stopped));
    stdout_print(fmt::format("\n{}run_id={}\n", format_run_summary(store.run_get(result.run_id)), result.run_id), true);
  }

 private:
  const RunConfig& cfg_;
  bool full_config_ = false;
  ProgressLine progress_;
  int64_t total_steps_ = 0;
};

// Output lost to a full disk (or a closed pipe) while the run went on: the run itself is
// stored as it ended (`stored` names it, e.g. "run 4 (completed)"); says that only the
// printout is lost. Returns the exit code: the run's own when it is not 0, else 1.
int report_lost_output(int err, const std::string& db, const std::string& stored, int exit_code) {
  fmt::print(stderr, "dsgd-bench: error: writing to standard output failed: {}\n", std::strerror(err));
  fmt::print(stderr, "  hint: only the printed output was lost: {} stored in {} (dsgd-bench show ID --db {})\n",
             stored.empty() ? "no run was" : stored, db, db);
  return exit_code != 0 ? exit_code : 1;
}

// The exit code of a run rank 0 printed: report_lost_output's when its stdout failed.
int run_printed_exit(const TrainResult& result, const std::string& db, int exit_code) {
  const int err = stdout_error_take();
  if (err == 0) return exit_code;
  return report_lost_output(err, db, fmt::format("run {} ({})", result.run_id, run_status_text(result.status)),
                            exit_code);
}

// A run that threw: rank 0 marks it failed in the database (when it was stored), and every
// rank reports its error (cli_report_rank_error). Returns the exit code. An error after a signal
// is the signal's: the watcher records the run interrupted and exits (engine/interrupt.hpp).
int run_failed(const std::exception& e, Communicator& comm, std::optional<Store>& store, const std::string& db,
               bool abort_job) {
  interrupt_yield_to_watcher();
  const int64_t run_id = trainer_active_run_id();
  if (store && run_id > 0) {
    try {
      store->run_finish(run_id, RunStatus::run_failed, e.what());
    } catch (...) {
    }
  }
  const std::string stored = store && run_id > 0 ? fmt::format("run {} is stored as 'failed' in {}", run_id, db) : "";
  return cli_report_rank_error(e, comm, abort_job, stored);
}

// 0 for a completed run; kRunDivergedExit for a diverged one, which rank 0 explains (every
// rank knows: the trainer's divergence check is agreed collectively).
int run_exit_code(const TrainResult& result, bool root, const std::string& db) {
  if (result.status != RunStatus::run_diverged) return 0;
  if (root) {
    fmt::print(stderr,
               "dsgd-bench: run {} {}; it is stored as 'diverged' in {} and is never counted as reaching a target "
               "(lower --lr or add --lr-warmup)\n",
               result.run_id, result.error, db);
  }
  return kRunDivergedExit;
}

void print_warnings(const RunConfig& cfg, const Communicator& comm, const Store& store) {
  const SystemInfo sys = system_info_read();
  if (!cfg.bandwidth.empty()) {
    const double emulated = network_parse_bandwidth(cfg.bandwidth);
    const std::optional<AllreduceFit> fit = store.allreduce_fit_latest(sys.host);
    if (!fit)
      fmt::print(stderr,
                 "dsgd-bench: note: no calibration of this host in {}: the real fabric's time is not subtracted "
                 "from the emulated one (run `dsgd-bench calibrate` first)\n",
                 cfg.db);
    else if (emulated > fit->bandwidth_bytes_per_s)
      fmt::print(stderr,
                 "dsgd-bench: warning: emulated bandwidth {:.3g} GB/s exceeds the calibrated fabric's {:.3g} GB/s: "
                 "the emulation cannot make collectives faster than the real ones\n",
                 emulated / 1e9, fit->bandwidth_bytes_per_s / 1e9);
  }
  const int local = comm.ranks_on_this_host();
  const long cores = sys.cores;
  // Ranks beyond the cores of a local launch were already warned about by the launcher.
  const bool launcher_warned = std::getenv("DSGD_LAUNCH_ID") && cfg.hostfile.empty() && local > cores;
  if (local * cfg.threads > cores && !launcher_warned)
    fmt::print(stderr,
               "dsgd-bench: warning: {} ranks x {} BLAS threads on {} cores: ranks exceed cores, timings are not "
               "trustworthy (MPICH busy-polls; expect 5-20 ms per collective)\n",
               local, cfg.threads, cores);
  if (sys.build_type != "Release" && sys.build_type != "RelWithDebInfo")
    fmt::print(stderr, "dsgd-bench: warning: this is a {} build; timings are not representative\n", sys.build_type);
  if (!sys.cpu_governor.empty() && sys.cpu_governor != "performance")
    fmt::print(stderr, "dsgd-bench: warning: CPU frequency governor is '{}' (not 'performance'); timings may vary\n",
               sys.cpu_governor);
}

int run_on_ranks(const RunConfig& cfg, bool full_config, int argc, char** argv) {
  std::unique_ptr<Communicator> comm = backend_create_world(backend_get(cfg.backend), &argc, &argv);
  const bool root = comm->rank() == 0;
  if (root) launcher_adopt_terminal();  // its output and progress line on the launcher's terminal

  std::optional<Store> store;
  try {
    std::exception_ptr local;
    try {
      if (comm->size() != cfg.workers)
        DSGD_THROW(InputError, "make --workers match mpiexec -n (or run without mpiexec)",
                   "--workers {} but this job has {} MPI ranks", cfg.workers, comm->size());
      // Checked already by the launcher, or by a plain run's validate_before_launch; not
      // when the user's own mpiexec started the ranks.
      const bool checked = !launcher_under_mpiexec() || std::getenv("DSGD_LAUNCH_ID") != nullptr;
      if (root) store = Store::open(cfg.db, StoreOpenOptions{true, !checked});
    } catch (...) {
      local = std::current_exception();
    }
    collective_check(*comm, local);
    interrupt_start_watcher(root ? cfg.db : std::string());
    if (root) print_warnings(cfg, *comm, *store);

    RunPrinter printer(cfg, full_config);
    const TrainerCallbacks callbacks = root ? printer.callbacks() : TrainerCallbacks{};
    TrainResult result = trainer_run(cfg, *comm, store ? &*store : nullptr, callbacks);
    if (root) printer.finished(*store, result);
    const int code = run_exit_code(result, root, cfg.db);
    return root ? run_printed_exit(result, cfg.db, code) : code;
  } catch (const PeerFailed&) {
    return 1;
  } catch (const std::exception& e) {
    return run_failed(e, *comm, store, cfg.db, trainer_past_setup());  // only rank 0 has a store
  }
}

// An in-process backend (sim): every worker in this process (engine/sim_run.hpp); no mpiexec.
int run_simulated(const RunConfig& cfg, bool full_config) {
  std::unique_ptr<Communicator> self = communicator_create_self();  // for the error reporter
  std::optional<Store> store;
  try {
    store = Store::open(cfg.db, StoreOpenOptions{true, false});  // validate_before_launch checked it
    interrupt_start_watcher(cfg.db);
    const SystemInfo sys = system_info_read();
    if (sys.build_type != "Release" && sys.build_type != "RelWithDebInfo" && !cfg.timing_only)
      fmt::print(stderr, "dsgd-bench: warning: this is a {} build; the simulator runs slowly\n", sys.build_type);
    RunPrinter printer(cfg, full_config);
    const TrainerCallbacks callbacks = printer.callbacks();
    // No profile of this batch on this host: the engine measures it and stores it; say so.
    SimProfileMissing missing;
    missing.measure = true;
    missing.by = "dsgd-bench run --backend sim";
    missing.before = [&](const std::vector<int64_t>&) {
      stdout_print(fmt::format("no compute profile of {} on {} with batch {} for this host: measuring it ({} "
                               "iterations) ...",
                               workload_profile_key(cfg), cfg.dataset, cfg.batch, kComputeProfileIters),
                   true);
    };
    missing.after = [](const ComputeProfileFill& fill) {
      stdout_print(fmt::format(" {:.2g} s, stored as calibration {}\n", fill.wall_s, fill.calibration_id), true);
    };
    const TrainResult result = sim_run(cfg, &*store, callbacks, missing);
    printer.finished(*store, result);
    return run_printed_exit(result, cfg.db, run_exit_code(result, true, cfg.db));
  } catch (const std::exception& e) {
    return run_failed(e, *self, store, cfg.db, false);
  }
}

// After a launch that failed: a run its ranks left `running` (killed by a signal, the OOM
// killer) is marked `killed` with what ended it; a run rank 0 recorded as interrupted by
// the launcher's SIGINT names the signal the launcher really got.
void launch_record_end(const std::string& db, const LaunchOutcome& outcome) {
  if (outcome.exit_code == 0 && outcome.forwarded_signal == 0) return;
  try {
    Store store = Store::open(db, StoreOpenOptions{false, false});
    const std::string what = launcher_describe_end(outcome);
    for (int64_t id : store.runs_of_launch(outcome.launch_id, RunStatus::run_running)) {
      store.run_finish(id, RunStatus::run_killed, what);
      fmt::print(stderr, "dsgd-bench: run {} marked 'killed' in {}: {}\n", id, db, what);
    }
    if (outcome.forwarded_signal)
      for (int64_t id : store.runs_of_launch(outcome.launch_id, RunStatus::run_interrupted))
        store.run_finish(id, RunStatus::run_interrupted, what);
  } catch (const std::exception& e) {
    fmt::print(stderr, "dsgd-bench: warning: could not record how the launch ended in {}: {}\n", db, e.what());
  }
}

// After a launch whose output could not be written (the launcher relays the ranks' output):
// the stored runs of the launch, for report_lost_output.
std::string launch_stored_runs(const std::string& db, const LaunchOutcome& outcome) {
  std::string stored;
  try {
    Store store = Store::open(db, StoreOpenOptions{false, false});
    for (RunStatus status : {RunStatus::run_completed, RunStatus::run_diverged, RunStatus::run_failed,
                             RunStatus::run_interrupted, RunStatus::run_killed, RunStatus::run_stopped})
      for (int64_t id : store.runs_of_launch(outcome.launch_id, status))
        stored += fmt::format("{}run {} ({})", stored.empty() ? "" : ", ", id, run_status_text(status));
  } catch (const std::exception&) {
  }
  return stored;
}

}  // namespace

void setup_run(CLI::App& app, int argc, char** argv) {
  auto opts = std::make_shared<RunCommandOptions>();
  CLI::App* sub = app.add_subcommand(
      "run", "Train a workload under an SGD variant on N workers; store timings and convergence in SQLite");
  sub->add_option("--config", opts->config_file,
                  "JSON or TOML file with the same keys as the flags (e.g. \"batch\": 64); flags override it")
      ->check(CLI::ExistingFile);
  run_options_bind(sub, *opts);
  sub->add_flag("--print-config", opts->print_config,
                "print every setting at start, not only those that apply to this run and differ from the defaults");
  sub->add_flag("--oversubscribe", opts->oversubscribe,
                "start more than 4 MPI ranks per core on this machine (refused otherwise; above 1 per core warns)");
  sub->footer(
      "Examples:\n"
      "  dsgd-bench run --workers 2 --algo ssgd --epochs 1\n"
      "  dsgd-bench run --workers 2 --algo localsgd --period 8 --dataset synthetic:n=20000,d=100000,density=0.001\n"
      "  mpiexec -f hosts -n 8 dsgd-bench run --workers 8 --config suite.toml\n"
      "  dsgd-bench run --backend sim --workers 64 --algo localsgd --bandwidth 1Gbps --profile-from 12\n");
  sub->callback([opts, argc, argv]() {
    const RunConfig cfg = run_options_resolve(*opts);
    const Backend* backend = backend_find(cfg.backend);  // unknown: validate_before_launch says so
    if (backend && backend->launch == BackendLaunch::launch_in_process) {
      validate_before_launch(cfg);
      cli_exit_code() = run_simulated(cfg, opts->print_config);
      return;
    }
    if (!launcher_under_mpiexec()) {
      // Too many local ranks are refused before anything (the database) is touched.
      const std::string warning =
          cfg.workers > 1 && cfg.hostfile.empty()
              ? launcher_check_local_ranks(static_cast<int>(cfg.workers), system_info_read().cores, opts->oversubscribe)
              : std::string();
      validate_before_launch(cfg);
      if (cfg.workers > 1) {
        if (!warning.empty()) fmt::print(stderr, "dsgd-bench: warning: {}\n", warning);
        const LaunchOutcome outcome = launcher_run_mpiexec(static_cast<int>(cfg.workers), cfg.hostfile, argc, argv);
        launch_record_end(cfg.db, outcome);
        cli_exit_code() = outcome.output_errno
                              ? report_lost_output(outcome.output_errno, cfg.db, launch_stored_runs(cfg.db, outcome),
                                                   outcome.exit_code)
                              : outcome.exit_code;
        return;
      }
    } else {
      config_validate(cfg);
    }
    cli_exit_code() = run_on_ranks(cfg, opts->print_config, argc, argv);
  });
}

}  // namespace dsgd
