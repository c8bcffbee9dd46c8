// `dsgd-bench run`: validates the configuration (flags over an optional JSON/TOML file),
// re-launches itself through mpiexec when asked for N > 1 workers outside of mpiexec,
// then trains on every rank and has rank 0 store and print the results. The last line
// printed is `run_id=<id>`.
#include <fmt/format.h>

#include <filesystem>
#include <thread>
#include <type_traits>

#include "algorithms/algorithm.hpp"
#include "cli/commands.hpp"
#include "cli/progress_line.hpp"
#include "cli/run_format.hpp"
#include "cluster/launcher.hpp"
#include "cluster/network_model.hpp"
#include "cluster/straggler.hpp"
#include "cluster/topology.hpp"
#include "core/errors.hpp"
#include "core/run_config.hpp"
#include "core/system_info.hpp"
#include "engine/collective_check.hpp"
#include "engine/interrupt.hpp"
#include "engine/sim_run.hpp"
#include "engine/trainer.hpp"
#include "results/store.hpp"
#include "results/target.hpp"
#include "workloads/datasets/dataset.hpp"
#include "workloads/workload.hpp"

namespace dsgd {

namespace {

struct RunOptions {
  RunConfig flags;  // values given on the command line
  std::string config_file;
  std::vector<std::pair<const RunConfigField*, CLI::Option*>> bound;
};

// File first, then every flag that was given explicitly.
RunConfig resolve_config(const RunOptions& o) {
  RunConfig cfg;
  if (!o.config_file.empty()) run_config_load_file(cfg, o.config_file);
  for (const auto& [field, option] : o.bound) {
    if (option->count() == 0) continue;
    run_config_copy_field(cfg, o.flags, *field);
    run_config_mark_given(cfg, field->key);
    const std::string key = field->key;
    if ((key == "steps" && cfg.steps <= 0) || (key == "epochs" && !(cfg.epochs > 0)))
      DSGD_THROW(InputError, fmt::format("pass a positive --{}", key), "--{} must be positive (got {})", key,
                 key == "steps" ? fmt::format("{}", cfg.steps) : fmt::format("{}", cfg.epochs));
  }
  return cfg;
}

// Everything checkable before starting workers, cheapest first; the database last so a
// bad flag never creates a file.
void validate_before_launch(const RunConfig& cfg) {
  run_config_validate(cfg);
  workload_check_name(cfg.workload);
  if (!algorithm_exists(cfg.algo)) algorithm_create(cfg.algo, cfg);
  dataset_validate_spec(cfg.dataset);
  target_parse(cfg.target);
  Stragglers::parse(cfg.straggler, static_cast<int>(cfg.workers), cfg.seed);
  const Topology topology = topology_make(cfg.topology, static_cast<int>(cfg.workers), cfg.seed);
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
// evaluation, a live progress line between them on a terminal, the summary at the end.
class RunPrinter {
 public:
  explicit RunPrinter(const RunConfig& cfg)
      : cfg_(cfg), progress_(static_cast<double>(cfg.batch) * static_cast<double>(cfg.workers)) {}

  TrainerCallbacks callbacks() {
    TrainerCallbacks cb;
    cb.on_start = [this](const RunRecord& record) {
      total_steps_ = record.steps;
      fmt::print("{}", format_config(cfg_, record));
      if (cfg_.backend == "sim") {
        const auto details = nlohmann::json::parse(record.config_json).value("backend-details", nlohmann::json{});
        fmt::print("  {:<13} virtual clock; profile {}; network {}; about {:.3g} MB\n", "sim",
                   details.value("profile", "?"), details.value("network", "?"),
                   details.value("memory-estimate-bytes", 0.0) / 1e6);
      }
      std::fflush(stdout);
    };
    cb.on_eval = [this](const EvalRow& row) {
      progress_.clear();
      fmt::print("{}\n", format_eval_line(row, total_steps_));
      std::fflush(stdout);
    };
    if (progress_.enabled())
      cb.on_progress = [this](const TrainProgress& p) { progress_.update(p.steps_done, p.steps_total, p.last_loss); };
    return cb;
  }

  void finished(const Store& store, int64_t run_id) {
    progress_.clear();
    fmt::print("\n{}", format_run_summary(store.run_get(run_id)));
    fmt::print("run_id={}\n", run_id);
    std::fflush(stdout);
  }

 private:
  const RunConfig& cfg_;
  ProgressLine progress_;
  int64_t total_steps_ = 0;
};

// A run that threw: rank 0 marks it failed in the database (when it was stored), and every
// rank reports its error (cli_report_rank_error). Returns the exit code.
int run_failed(const std::exception& e, Communicator& comm, std::optional<Store>& store, const std::string& db,
               bool abort_job) {
  const int64_t run_id = trainer_active_run_id();
  if (store && run_id > 0) {
    try {
      store->run_finish(run_id, "failed", e.what());
    } catch (...) {
    }
  }
  const std::string stored = store && run_id > 0 ? fmt::format("run {} is stored as 'failed' in {}", run_id, db) : "";
  return cli_report_rank_error(e, comm, abort_job, stored);
}

// 0 for a completed run; kRunDivergedExit for a diverged one, which rank 0 explains (every
// rank knows: the trainer's divergence check is agreed collectively).
int run_exit_code(const TrainResult& result, bool root, const std::string& db) {
  if (result.status != "diverged") return 0;
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
  if (local * cfg.threads > cores)
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

int run_on_ranks(const RunConfig& cfg, int argc, char** argv) {
  std::unique_ptr<Communicator> comm = communicator_create_world(&argc, &argv);
  const bool root = comm->rank() == 0;

  std::optional<Store> store;
  try {
    std::exception_ptr local;
    try {
      if (comm->size() != cfg.workers)
        DSGD_THROW(InputError, "make --workers match mpiexec -n (or run without mpiexec)",
                   "--workers {} but this job has {} MPI ranks", cfg.workers, comm->size());
      if (root) store = Store::open(cfg.db);
    } catch (...) {
      local = std::current_exception();
    }
    collective_check(*comm, local);
    interrupt_start_watcher(root ? cfg.db : std::string());
    if (root) print_warnings(cfg, *comm, *store);

    RunPrinter printer(cfg);
    const TrainerCallbacks callbacks = root ? printer.callbacks() : TrainerCallbacks{};
    TrainResult result = trainer_run(cfg, *comm, store ? &*store : nullptr, callbacks);
    if (root) printer.finished(*store, result.run_id);
    return run_exit_code(result, root, cfg.db);
  } catch (const PeerFailed&) {
    return 1;
  } catch (const std::exception& e) {
    return run_failed(e, *comm, store, cfg.db, trainer_past_setup());  // only rank 0 has a store
  }
}

// --backend sim: every worker in this process (engine/sim_run.hpp); no mpiexec.
int run_simulated(const RunConfig& cfg) {
  std::unique_ptr<Communicator> self = communicator_create_self();  // for the error reporter
  std::optional<Store> store;
  try {
    store = Store::open(cfg.db);
    interrupt_start_watcher(cfg.db);
    const SystemInfo sys = system_info_read();
    if (sys.build_type != "Release" && sys.build_type != "RelWithDebInfo" && !cfg.timing_only)
      fmt::print(stderr, "dsgd-bench: warning: this is a {} build; the simulator runs slowly\n", sys.build_type);
    RunPrinter printer(cfg);
    const TrainerCallbacks callbacks = printer.callbacks();
    const TrainResult result = sim_run(cfg, &*store, callbacks);
    printer.finished(*store, result.run_id);
    return run_exit_code(result, true, cfg.db);
  } catch (const std::exception& e) {
    return run_failed(e, *self, store, cfg.db, false);
  }
}

}  // namespace

void setup_run(CLI::App& app, int argc, char** argv) {
  auto opts = std::make_shared<RunOptions>();
  CLI::App* sub = app.add_subcommand(
      "run", "Train a workload under an SGD variant on N workers; store timings and convergence in SQLite");
  sub->add_option("--config", opts->config_file,
                  "JSON or TOML file with the same keys as the flags (e.g. \"batch\": 64); flags override it")
      ->check(CLI::ExistingFile);
  for (const auto& field : run_config_fields()) {
    CLI::Option* option = nullptr;
    std::visit(
        [&](auto member) {
          option = sub->add_option(fmt::format("--{}", field.key), opts->flags.*member, field.help)
                       ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
          // A boolean may be given bare (--overlap means --overlap true) or with a value.
          if constexpr (std::is_same_v<std::remove_reference_t<decltype(opts->flags.*member)>, bool>)
            option->expected(0)->expected(0, 1);  // flag-like: bare means true
        },
        field.member);
    RunConfig defaults;
    std::visit([&](auto member) { option->default_str(fmt::format("{}", defaults.*member)); }, field.member);
    opts->bound.emplace_back(&field, option);
  }
  sub->footer(
      "Examples:\n"
      "  dsgd-bench run --workers 2 --algo ssgd --epochs 1\n"
      "  dsgd-bench run --workers 2 --algo localsgd --period 8 --dataset synthetic:n=20000,d=100000,density=0.001\n"
      "  mpiexec -f hosts -n 8 dsgd-bench run --workers 8 --config suite.toml\n"
      "  dsgd-bench run --backend sim --workers 64 --algo localsgd --bandwidth 1Gbps --profile-from 12\n");
  sub->callback([opts, argc, argv]() {
    const RunConfig cfg = resolve_config(*opts);
    if (cfg.backend == "sim") {
      validate_before_launch(cfg);
      cli_exit_code() = run_simulated(cfg);
      return;
    }
    if (!launcher_under_mpiexec()) {
      validate_before_launch(cfg);
      if (cfg.workers > 1) {
        cli_exit_code() = launcher_run_mpiexec(static_cast<int>(cfg.workers), cfg.hostfile, argc, argv);
        return;
      }
    } else {
      run_config_validate(cfg);
    }
    cli_exit_code() = run_on_ranks(cfg, argc, argv);
  });
}

}  // namespace dsgd
