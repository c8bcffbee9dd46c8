// `dsgd-bench calibrate`: binds the options, validates them, launches the ranks and prints what the
// calibration protocol (engine/calibration.hpp: the sweep of engine/calibration_ops.hpp through the
// Communicator, the alpha-beta fits, the per-layer compute profile and optimizer steps, stored in
// the tables calibrations / collectives / fits / profiles (schema v3) and optimizer_profiles
// (v10)) reports: one fixed-width table per op (size, count, time, algbw, busbw; docs/metrics.md;
// the harness/bare all-reduce pair side by side), the fits, the harness overhead and the profile,
// with one live progress line on a terminal.
// The ranks' communicator comes from the backend table (--backend, cluster/backends.hpp: a
// multi-process row, mpi by default), so the same sweep measures any backend that implements the
// operations. Outside mpiexec with --workers N > 1 it relaunches itself through mpiexec, as `run` does. Rank 0
// prints and stores; the last line printed is `calibration_id=<id>`.
// Limits: sizes up to 2 GiB; without MPI only the profile runs, on 1 rank; under mpiexec the
// ranks' stdout is a pipe, so the progress line shows only with --workers 1.
#include <fmt/format.h>

#include <charconv>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "cli/commands.hpp"
#include "cli/progress_line.hpp"
#include "cluster/backends.hpp"
#include "cluster/communicator.hpp"
#include "cluster/launcher.hpp"
#include "core/errors.hpp"
#include "core/run_config.hpp"
#include "core/system_info.hpp"
#include "engine/calibration.hpp"
#include "engine/collective_check.hpp"
#include "engine/compute_profile.hpp"
#include "results/store.hpp"
#include "workloads/datasets/dataset.hpp"
#include "workloads/workload.hpp"

extern "C" void openblas_set_num_threads(int);

namespace dsgd {

namespace {

constexpr int64_t kMaxSizeBytes = int64_t(2) << 30;
constexpr int kProfileWarmup = kComputeProfileWarmup;
constexpr uint64_t kProfileSeed = kComputeProfileSeed;  // dataset synthesis and batch order of the profile

struct CalibrateOptions {
  std::string backend = "mpi";
  int64_t workers = 2;
  std::string hostfile;
  std::string db = "./dsgd.db";
  std::string min_size = "4";
  std::string max_size = "256MiB";
  int64_t reps = 5;
  bool quick = false;
  std::string workload = "svm";
  std::string dataset = "fashion-mnist";
  std::vector<int64_t> batches = {16, 64, 256};
  int64_t profile_iters = 20;
  int64_t threads = 1;
  // Set by setup: which options were given (--quick changes only the defaults).
  CLI::Option* workers_option = nullptr;
  CLI::Option* max_size_option = nullptr;
  CLI::Option* reps_option = nullptr;
  CLI::Option* profile_iters_option = nullptr;
};

// The effective plan, after --quick and validation.
struct CalibratePlan {
  int64_t min_bytes = 4, max_bytes = 0;
  int64_t size_factor = 2;
  int64_t profile_iters = 20;
  CalibrationSweepPlan sweep;  // sizes (bytes) and repetitions
};

// ---- sizes ---------------------------------------------------------------------------------

// "256MiB", "1MiB", "64KiB", "4", "4B", "1GB" (decimal units: kB, MB, GB).
int64_t size_parse(const std::string& option, const std::string& text) {
  const std::string hint = fmt::format("pass {} as bytes with an optional unit: 4, 64KiB, 1MiB, 256MiB, 1GB", option);
  int64_t value = 0;
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  auto [unit_begin, ec] = std::from_chars(begin, end, value);
  if (ec != std::errc() || unit_begin == begin || value < 0) {
    DSGD_THROW(InputError, hint, "{} '{}' is not a size", option, text);
  }
  const std::string_view unit(unit_begin, static_cast<size_t>(end - unit_begin));
  struct Unit {
    std::string_view name;
    int64_t bytes;
  };
  static constexpr Unit units[] = {{"", 1},      {"B", 1},     {"KiB", 1 << 10}, {"MiB", 1 << 20},  {"GiB", 1 << 30},
                                   {"kB", 1000}, {"KB", 1000}, {"MB", 1000000},  {"GB", 1000000000}};
  for (const Unit& u : units) {
    if (unit == u.name) {
      if (value > kMaxSizeBytes / u.bytes) {
        DSGD_THROW(InputError, "sizes up to 2GiB are supported", "{} '{}' is larger than 2GiB", option, text);
      }
      return value * u.bytes;
    }
  }
  DSGD_THROW(InputError, hint, "{} '{}': unknown unit '{}'", option, text, unit);
}

std::string size_text(int64_t bytes) {
  if (bytes >= (1 << 30) && bytes % (1 << 30) == 0) return fmt::format("{}GiB", bytes >> 30);
  if (bytes >= (1 << 20) && bytes % (1 << 20) == 0) return fmt::format("{}MiB", bytes >> 20);
  if (bytes >= (1 << 10) && bytes % (1 << 10) == 0) return fmt::format("{}KiB", bytes >> 10);
  return fmt::format("{}B", bytes);
}

// Everything checkable before launching workers; the database last, so a bad flag
// never creates a file.
CalibratePlan plan_make(const CalibrateOptions& o) {
  CalibratePlan plan;
  plan.min_bytes = size_parse("--min-size", o.min_size);
  const bool max_given = o.max_size_option && o.max_size_option->count() > 0;
  plan.max_bytes = o.quick && !max_given ? int64_t(1) << 20 : size_parse("--max-size", o.max_size);
  plan.size_factor = o.quick ? 4 : 2;
  const bool reps_given = o.reps_option && o.reps_option->count() > 0;
  plan.sweep.reps = o.quick && !reps_given ? 2 : o.reps;
  const bool iters_given = o.profile_iters_option && o.profile_iters_option->count() > 0;
  plan.profile_iters = o.quick && !iters_given ? 5 : o.profile_iters;
  if (plan.min_bytes < 4 || plan.min_bytes % 4 != 0) {
    DSGD_THROW(InputError, "pass --min-size 4 or another multiple of 4 (float32 elements)",
               "--min-size {} is not a positive multiple of 4 bytes", o.min_size);
  }
  if (plan.max_bytes < plan.min_bytes) {
    DSGD_THROW(InputError, "pass --max-size at or above --min-size", "--max-size {} is below --min-size {}",
               size_text(plan.max_bytes), size_text(plan.min_bytes));
  }
  if (plan.sweep.reps < 1 || plan.sweep.reps > 1000) {
    DSGD_THROW(InputError, "pass e.g. --reps 5", "--reps must be in 1..1000 (got {})", plan.sweep.reps);
  }
  if (plan.profile_iters < 1 || plan.profile_iters > 100000) {
    DSGD_THROW(InputError, "pass e.g. --profile-iters 20", "--profile-iters must be in 1..100000 (got {})",
               plan.profile_iters);
  }
  for (int64_t bytes = plan.min_bytes; bytes <= plan.max_bytes; bytes *= plan.size_factor) {
    plan.sweep.sizes.push_back(bytes);
  }
  if (o.workers < 1 || o.workers > 4096) {
    DSGD_THROW(InputError, "pass --workers 2 or more", "--workers must be in 1..4096 (got {})", o.workers);
  }
  if (o.threads < 1 || o.threads > 256) {
    DSGD_THROW(InputError, "pass e.g. --threads 1", "--threads must be in 1..256 (got {})", o.threads);
  }
  if (o.batches.empty()) DSGD_THROW(InputError, "pass e.g. --batches 16,64,256", "--batches is empty");
  for (int64_t batch : o.batches) {
    if (batch < 1 || batch > (int64_t(1) << 24)) {
      DSGD_THROW(InputError, "pass positive batch sizes, e.g. --batches 16,64,256",
                 "--batches: {} is not a batch size in 1..16777216", batch);
    }
  }
  return plan;
}

// The backend row to calibrate: a multi-process one available here.
const Backend& calibrate_backend(const CalibrateOptions& o) {
  const Backend& b = backend_get(o.backend);
  if (b.launch != BackendLaunch::launch_mpiexec)
    DSGD_THROW(InputError, "calibrate a real fabric (--backend mpi); a simulated run takes its network from the flags",
               "--backend {}: its workers share this process and its network is the model given to it, not a fabric "
               "to measure",
               b.name);
  backend_require_available(b);
  return b;
}

void validate_before_launch(const CalibrateOptions& o) {
  calibrate_backend(o);
  plan_make(o);
  workload_check_name(o.workload);
  dataset_validate_spec(o.dataset);
  if (!o.hostfile.empty() && !std::filesystem::is_regular_file(o.hostfile)) {
    DSGD_THROW(InputError, "pass an existing MPI hostfile", "--hostfile: no file '{}'", o.hostfile);
  }
  Store::open(o.db);
}

// ---- printing what the calibration reports --------------------------------------------------

// Rank 0's tables (one per op group, as rows come) and the progress line; other ranks print nothing.
class CalibratePrinter final : public CalibrationObserver {
 public:
  explicit CalibratePrinter(bool root) : root_(root) {}
  void group_begin(const std::vector<const CalibrationOp*>& group) override {
    if (!root_) return;
    progress_.clear();
    fmt::print("\n# {}: {}\n", group.front()->name, group.front()->description);
    if (group.size() == 2) {
      fmt::print("#{:>11} {:>11} {:>7} | {:>10} {:>8} {:>8} | {:>10} {:>8} {:>8} | {:>6}\n", "size(B)", "count",
                 "iters", "time(us)", "algbw", "busbw", "bare(us)", "algbw", "busbw", "ratio");
      fmt::print("#{:>11} {:>11} {:>7} | {:>10} {:>8} {:>8} | {:>10} {:>8} {:>8} | {:>6}\n", "", "(elements)", "",
                 "harness", "(GB/s)", "(GB/s)", "", "(GB/s)", "(GB/s)", "busbw");
    } else {
      fmt::print("#{:>11} {:>11} {:>7} {:>10} {:>10} {:>10} {:>8} {:>8}\n", "size(B)", "count", "iters", "time(us)",
                 "min(us)", "max(us)", "algbw", "busbw");
      fmt::print("#{:>11} {:>11} {:>7} {:>10} {:>10} {:>10} {:>8} {:>8}\n", "", "(elements)", "", "median", "", "",
                 "(GB/s)", "(GB/s)");
    }
    std::fflush(stdout);
  }
  void group_row(const std::vector<const CalibrationOp*>& group, size_t count, const std::vector<CollectiveRow>& rows,
                 int64_t done, int64_t total) override {
    if (!root_) return;
    progress_.clear();
    const CollectiveRow& r = rows[0];
    if (rows.size() == 2) {
      const CollectiveRow& bare = rows[1];
      fmt::print("{:>12} {:>11} {:>7} | {:>10.2f} {:>8.3f} {:>8.3f} | {:>10.2f} {:>8.3f} {:>8.3f} | {:>6.3f}\n",
                 r.bytes, count, r.iters, r.time_s * 1e6, r.algbw_gbps, r.busbw_gbps, bare.time_s * 1e6,
                 bare.algbw_gbps, bare.busbw_gbps, r.busbw_gbps / bare.busbw_gbps);
    } else {
      fmt::print("{:>12} {:>11} {:>7} {:>10.2f} {:>10.2f} {:>10.2f} {:>8.3f} {:>8.3f}\n", r.bytes, count, r.iters,
                 r.time_s * 1e6, r.time_min_s * 1e6, r.time_max_s * 1e6, r.algbw_gbps, r.busbw_gbps);
    }
    std::fflush(stdout);
    progress_.draw(fmt::format("  calibrate: {} {}  point {}/{}  elapsed {}", group.front()->name, size_text(r.bytes),
                               done, total, ProgressLine::duration_text(progress_.elapsed_s())),
                   true);
  }
  void op_skipped(const CalibrationOp& op, const std::string& why) override {
    if (!root_) return;
    progress_.clear();
    fmt::print("# {}: not measured: {}\n", op.name, why);
  }
  void profile_batch(int64_t batch, size_t index, size_t total) override {
    if (!root_) return;
    progress_.draw(fmt::format("  calibrate: compute profile, batch {} ({}/{})  elapsed {}", batch, index + 1, total,
                               ProgressLine::duration_text(progress_.elapsed_s())),
                   true);
  }
  void done() {
    if (root_) progress_.clear();
  }

 private:
  bool root_;
  ProgressLine progress_;
};

void fits_print(const std::vector<CalibrationFit>& fits) {
  fmt::print("\n# alpha-beta fit per op: t = alpha + beta * S * busbw_factor, weighted least squares (1/t^2)\n");
  fmt::print("#{:>15} {:>11} {:>16} {:>14} {:>6}  {}\n", "op", "alpha(us)", "bandwidth(GB/s)", "median_rel_err",
             "sizes", "note");
  for (const CalibrationFit& f : fits) {
    fmt::print("{:>16} {:>11.2f} {:>16.3f} {:>13.1f}% {:>6}  {}\n", f.row.op, f.row.alpha_s * 1e6,
               f.row.bandwidth_bytes_per_s / 1e9, f.row.rel_error * 100, f.sizes, f.note);
  }
}

// Harness vs bare all-reduce bus bandwidth at sizes >= 1 MiB (issue: within 5 %).
void harness_overhead_print(const std::vector<CollectiveRow>& rows) {
  const HarnessOverhead o = calibration_harness_overhead(rows);
  if (o.sizes == 0) {
    fmt::print("# harness vs bare MPI_Allreduce: no size >= 1 MiB swept\n");
    return;
  }
  fmt::print(
      "# harness vs bare MPI_Allreduce busbw at >= 1 MiB ({} sizes): median ratio {:.3f}, worst {:.3f} "
      "(goal >= 0.95){}\n",
      o.sizes, o.median_ratio, o.worst_ratio, o.worst_ratio >= 0.95 ? "" : "  ** below the goal **");
}

// ---- per-layer compute profile -----------------------------------------------------------------

void profile_print(const std::vector<ProfileRow>& rows, const CalibratePlan& plan, int ranks) {
  fmt::print(
      "\n# per-layer compute profile: median of {} iterations (after {} warm-up), slowest of {} ranks; "
      "forward split over layers by parameter count\n",
      plan.profile_iters, kProfileWarmup, ranks);
  fmt::print("#{:>7} {:>6} {:<16} {:>12} {:>12}\n", "batch", "layer", "name", "fwd(us)", "bwd(us)");
  for (const ProfileRow& r : rows) {
    fmt::print("{:>8} {:>6} {:<16} {:>12.2f} {:>12.2f}\n", r.batch, r.layer, r.layer_name, r.fwd_s * 1e6,
               r.bwd_s * 1e6);
  }
}

void optimizers_print(const std::vector<OptimizerProfileRow>& rows) {
  fmt::print("\n# optimizer step on the model's parameters: median, slowest rank\n");
  fmt::print("#{:>15} {:>12} {:>12}\n", "optimizer", "params", "opt(us)");
  for (const OptimizerProfileRow& r : rows)
    fmt::print("{:>16} {:>12} {:>12.2f}\n", r.optimizer, r.params, r.opt_s * 1e6);
}

// ---- the command on every rank --------------------------------------------------------------

nlohmann::json config_json(const CalibrateOptions& o, const CalibratePlan& plan, int ranks) {
  std::vector<std::string> op_names;
  for (const CalibrationOp& op : calibration_ops())
    if (calibration_op_runs_on(op, ranks)) op_names.push_back(op.name);
  return {
      {"backend", o.backend},
      {"workers", ranks},
      {"min_size", plan.min_bytes},
      {"max_size", plan.max_bytes},
      {"size_factor", plan.size_factor},
      {"sizes", plan.sweep.sizes.size()},
      {"reps", plan.sweep.reps},
      {"quick", o.quick},
      {"dtype", "float32"},
      {"min_rep_time_s", plan.sweep.min_rep_time_s},
      {"max_iters", plan.sweep.max_iters},
      {"rank_aggregation", "max over ranks of the per-iteration time of a repetition"},
      {"statistic", "median over repetitions (min and max kept)"},
      {"ops", op_names},
      {"fit", "t = alpha + beta * bytes * busbw_factor, weights 1/t^2"},
      {"workload", o.workload},
      {"dataset", o.dataset},
      {"batches", o.batches},
      {"profile_iters", plan.profile_iters},
      {"profile_warmup", kProfileWarmup},
      {"profile_seed", kProfileSeed},
      {"threads", o.threads},
  };
}

void print_warnings(const CalibrateOptions& o, const Communicator& comm) {
  const SystemInfo sys = system_info_read();
  const int local = comm.ranks_on_this_host();
  if (local * o.threads > sys.cores) {
    fmt::print(stderr,
               "dsgd-bench: warning: {} ranks x {} BLAS threads on {} cores: ranks exceed cores, the calibration "
               "is not trustworthy (MPICH busy-polls)\n",
               local, o.threads, sys.cores);
  }
  if (sys.build_type != "Release" && sys.build_type != "RelWithDebInfo") {
    fmt::print(stderr, "dsgd-bench: warning: this is a {} build; timings are not representative\n", sys.build_type);
  }
  if (!sys.cpu_governor.empty() && sys.cpu_governor != "performance") {
    fmt::print(stderr, "dsgd-bench: warning: CPU frequency governor is '{}' (not 'performance'); timings may vary\n",
               sys.cpu_governor);
  }
}

int calibrate_on_ranks(const CalibrateOptions& o, int argc, char** argv) {
  std::unique_ptr<Communicator> comm = backend_create_world(calibrate_backend(o), &argc, &argv);
  const bool root = comm->rank() == 0;
  const int n = comm->size();
  bool past_setup = false;
  try {
    CalibratePlan plan;
    std::optional<Store> store;
    ComputeProfileSetup profile;
    std::exception_ptr local;
    try {
      plan = plan_make(o);
      const bool workers_given = o.workers_option && o.workers_option->count() > 0;
      if (workers_given && o.workers != n) {
        DSGD_THROW(InputError, "make --workers match mpiexec -n (or run without mpiexec)",
                   "--workers {} but this job has {} MPI ranks", o.workers, n);
      }
      openblas_set_num_threads(static_cast<int>(o.threads));
      if (root) store = Store::open(o.db);
      profile = compute_profile_setup(o.workload, o.dataset, o.batches);
    } catch (...) {
      local = std::current_exception();
    }
    collective_check(*comm, local);
    past_setup = true;

    const SystemInfo sys = system_info_read();
    if (root) {
      print_warnings(o, *comm);
      fmt::print("# dsgd-bench calibrate: {} ranks ({}), host {}, {}\n", n, comm->library_version(), sys.host,
                 sys.cpu_model);
      fmt::print(
          "# sizes {} .. {} (x{}, {} sizes), float32; {} repetitions of >= {} ms after warm-up; time = "
          "slowest rank per iteration, median over repetitions; GB = 1e9 B\n",
          size_text(plan.sweep.sizes.front()), size_text(plan.sweep.sizes.back()), plan.size_factor,
          plan.sweep.sizes.size(), plan.sweep.reps, plan.sweep.min_rep_time_s * 1e3);
      fmt::print(
          "# busbw = algbw x 2(n-1)/n all-reduce, x (n-1)/n reduce-scatter / all-gather, x 1 broadcast / "
          "send-recv (docs/metrics.md)\n");
      std::fflush(stdout);
    }
    if (n < 2 && root) fmt::print("# 1 rank: no collective to measure (pass --workers 2 or more); profiling only\n");
    CalibrationRequest request;
    request.sweep = plan.sweep;
    request.workload = o.workload;
    request.dataset = o.dataset;
    request.batches = o.batches;
    request.profile_iters = plan.profile_iters;
    request.config = config_json(o, plan, n);
    CalibratePrinter printer(root);
    const CalibrationResult result = calibration_run(request, profile, *comm, root ? &*store : nullptr, printer);
    printer.done();
    if (root) {
      if (n >= 2) {
        fmt::print("\n");
        fits_print(result.fits);
        harness_overhead_print(result.collectives);
      }
      profile_print(result.profiles, plan, n);
      optimizers_print(result.optimizers);
      fmt::print("\n# sweep {:.1f} s, total {:.1f} s; stored in {}\n", result.sweep_s, result.total_s, o.db);
      fmt::print("calibration_id={}\n", result.id);
      std::fflush(stdout);
    }
    return 0;
  } catch (const PeerFailed&) {
    return 1;
  } catch (const std::exception& e) {
    return cli_report_rank_error(e, *comm, past_setup);
  }
}

}  // namespace

void setup_calibrate(CLI::App& app, int argc, char** argv) {
  auto opts = std::make_shared<CalibrateOptions>();
  CLI::App* sub = app.add_subcommand(
      "calibrate",
      "Measure collectives (size sweep, alpha-beta fit) and per-layer compute on N workers; store them in SQLite");
  sub->add_option("--backend", opts->backend,
                  "backend whose collectives to measure: a multi-process row of `dsgd-bench list backends`")
      ->capture_default_str();
  opts->workers_option = sub->add_option("--workers", opts->workers,
                                         "number of MPI ranks; outside mpiexec, N>1 re-launches through mpiexec -n N")
                             ->capture_default_str();
  sub->add_option("--hostfile", opts->hostfile, "MPI hostfile for multi-machine calibration (mpiexec -f)");
  sub->add_option("--db", opts->db, "SQLite results database")->capture_default_str();
  sub->add_option("--min-size", opts->min_size, "smallest buffer (bytes; units B, KiB, MiB, GiB, kB, MB, GB)")
      ->capture_default_str();
  opts->max_size_option =
      sub->add_option("--max-size", opts->max_size, "largest buffer (--quick: 1MiB)")->capture_default_str();
  opts->reps_option = sub->add_option("--reps", opts->reps, "repetitions per size, each of >= 10 ms (--quick: 2)")
                          ->capture_default_str();
  sub->add_flag("--quick", opts->quick, "sizes x4 up to 1MiB, 2 repetitions, 5 profile iterations: a few seconds");
  sub->add_option("--workload", opts->workload, "workload to profile per layer (dsgd-bench list workloads)")
      ->capture_default_str();
  sub->add_option("--dataset", opts->dataset, "dataset spec of the profile (dsgd-bench list datasets)")
      ->capture_default_str();
  sub->add_option("--batches", opts->batches, "per-worker batch sizes to profile, comma-separated")
      ->delimiter(',')
      ->capture_default_str();
  opts->profile_iters_option =
      sub->add_option("--profile-iters", opts->profile_iters, "timed iterations per batch size (--quick: 5)")
          ->capture_default_str();
  sub->add_option("--threads", opts->threads, "BLAS threads per worker during the profile")->capture_default_str();
  sub->footer(
      "Prints one table per collective (nccl-tests style), the alpha-beta fits and the profile; the last line is\n"
      "calibration_id=<id>. Definitions: docs/metrics.md. Examples:\n"
      "  dsgd-bench calibrate --workers 2 --quick\n"
      "  dsgd-bench calibrate --workers 4 --hostfile hosts --max-size 1GiB --batches 32,128\n");
  sub->callback([opts, argc, argv]() {
    if (!launcher_under_mpiexec()) {
      validate_before_launch(*opts);
      if (opts->workers > 1) {
        cli_exit_code() = launcher_run_mpiexec(static_cast<int>(opts->workers), opts->hostfile, argc, argv).exit_code;
        return;
      }
    }
    cli_exit_code() = calibrate_on_ranks(*opts, argc, argv);
  });
}

}  // namespace dsgd
