// `dsgd-bench calibrate`: binds the options and prints what the calibration reports (the
// protocol: engine/calibration.hpp, the sweep of engine/calibration_ops.hpp through the
// Communicator, the alpha-beta fits, the per-layer compute profile and optimizer steps, stored in
// the tables calibrations / collectives / fits / profiles (schema v3) and optimizer_profiles
// (v10); the options' checks and the ranks' setup: engine/calibration_plan.hpp): one
// fixed-width table per op (size, count, time, algbw, busbw; docs/metrics.md; the harness/bare
// all-reduce pair side by side), the fits, the harness overhead and the profile, with one live
// progress line on a terminal.
// The ranks' communicator comes from the backend table (--backend, cluster/backends.hpp: a
// multi-process row, mpi by default), so the same sweep measures any backend that implements the
// operations. Outside mpiexec with --workers N > 1 it relaunches itself through mpiexec, as `run` does. Rank 0
// prints and stores (on the launcher's terminal: cluster/launcher.hpp); the last line printed is
// `calibration_id=<id>`.
// Limits: sizes up to 2 GiB; without MPI only the profile runs, on 1 rank.
#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <vector>

#include "cli/commands.hpp"
#include "cli/progress_line.hpp"
#include "cli/run_options.hpp"
#include "cluster/backends.hpp"
#include "cluster/communicator.hpp"
#include "cluster/launcher.hpp"
#include "core/errors.hpp"
#include "core/system_info.hpp"
#include "engine/calibration.hpp"
#include "engine/calibration_plan.hpp"
#include "engine/collective_check.hpp"
#include "engine/compute_profile.hpp"
#include "results/store.hpp"

namespace dsgd {

namespace {

struct CalibrateCliOptions {
  CalibrationOptions options;
  // Set by setup: which options were given (--quick changes only the defaults).
  CLI::Option* workers_option = nullptr;
  CLI::Option* max_size_option = nullptr;
  CLI::Option* reps_option = nullptr;
  CLI::Option* profile_iters_option = nullptr;
  // The options with what was given recorded.
  CalibrationOptions given() const {
    CalibrationOptions o = options;
    auto was_given = [](const CLI::Option* option) { return option && option->count() > 0; };
    o.workers_given = was_given(workers_option);
    o.max_size_given = was_given(max_size_option);
    o.reps_given = was_given(reps_option);
    o.profile_iters_given = was_given(profile_iters_option);
    return o;
  }
};

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
    progress_.draw(
        fmt::format("  calibrate: {} {}  point {}/{}  elapsed {}", group.front()->name, calibration_size_text(r.bytes),
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

// Harness vs bare all-reduce bus bandwidth at sizes >= 1 MiB (the goal: within 5 %).
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

void profile_print(const std::vector<ProfileRow>& rows, const CalibrationPlan& plan, int ranks) {
  fmt::print(
      "\n# per-layer compute profile: median of at least {} iterations and {:.1f} s (after at least {} and {:.2f} s "
      "of warm-up), slowest of {} ranks; forward split over layers by parameter count\n",
      plan.profile_iters, kComputeProfileMinTimeS, kComputeProfileWarmup, kComputeProfileWarmupS, ranks);
  fmt::print("#{:>7} {:>6} {:<16} {:>12} {:>12} {:>8}\n", "batch", "layer", "name", "fwd(us)", "bwd(us)", "spread");
  for (const ProfileRow& r : rows) {
    fmt::print("{:>8} {:>6} {:<16} {:>12.2f} {:>12.2f} {:>7.0f}%\n", r.batch, r.layer, r.layer_name, r.fwd_s * 1e6,
               r.bwd_s * 1e6, r.spread * 100);
  }
  fmt::print("# spread: interquartile range / median of the batch's per-iteration forward + backward\n");
  for (const std::string& w : compute_profile_warnings(rows)) fmt::print(stderr, "dsgd-bench: warning: {}\n", w);
}

void optimizers_print(const std::vector<OptimizerProfileRow>& rows) {
  fmt::print(
      "\n# optimizer step on the model's parameters, and one model pass (copy; y += a*x): median, slowest rank\n");
  fmt::print("#{:>15} {:>12} {:>12}\n", "optimizer", "params", "opt(us)");
  for (const OptimizerProfileRow& r : rows)
    fmt::print("{:>16} {:>12} {:>12.2f}\n", r.optimizer, r.params, r.opt_s * 1e6);
}

void header_print(const CalibrationSetup& setup, const CalibrationOptions& o, const Communicator& comm) {
  for (const std::string& w : calibration_warnings(o, comm)) fmt::print(stderr, "dsgd-bench: warning: {}\n", w);
  const SystemInfo sys = system_info_read();
  const CalibrationPlan& plan = setup.plan;
  fmt::print("# dsgd-bench calibrate: {} ranks ({}), host {}, {}\n", comm.size(), comm.library_version(), sys.host,
             sys.cpu_model);
  fmt::print(
      "# sizes {} .. {} (x{}, {} sizes{}), float32; {} repetitions of >= {} ms after warm-up; time = "
      "slowest rank per iteration, median over repetitions; GB = 1e9 B\n",
      calibration_size_text(plan.sweep.sizes.front()), calibration_size_text(plan.sweep.sizes.back()), plan.size_factor,
      plan.sweep.sizes.size(),
      plan.model_bytes > 0 ? fmt::format("; the {} model's {} B among them", o.model.workload, plan.model_bytes) : "",
      plan.sweep.reps, plan.sweep.min_rep_time_s * 1e3);
  fmt::print(
      "# busbw = algbw x 2(n-1)/n all-reduce, x (n-1)/n reduce-scatter / all-gather, x 1 broadcast / "
      "send-recv (docs/metrics.md)\n");
  if (comm.size() < 2) fmt::print("# 1 rank: no collective to measure (pass --workers 2 or more); profiling only\n");
  std::fflush(stdout);
}

// The all-reduce against the host's previous calibration on as many ranks: a fabric that moves
// between calibrations (which every simulated run on this one says again) shows here first.
void fabric_move_print(const Store& store, int64_t id) {
  const std::vector<AllreduceFit> fits = store.allreduce_fits(system_info_read().host, 2);
  if (fits.size() < 2 || fits[0].calibration_id != id || fits[1].workers != fits[0].workers) return;
  const int64_t previous = fits[1].calibration_id;
  const FabricMove m = calibration_fabric_move(store.collectives_get(id), store.collectives_get(previous));
  if (m.sizes == 0) return;
  fmt::print(
      "# all-reduce against calibration {} of this host ({} ranks, {} sizes in common): median {:.0f} % apart, the "
      "widest {:.0f} % at {} B ({:.3g} us now, {:.3g} us then)\n",
      previous, fits[0].workers, m.sizes, 100 * m.median, 100 * m.widest, m.widest_bytes, 1e6 * m.widest_now_s,
      1e6 * m.widest_before_s);
  if (m.median > kFabricMoveLimit)
    fmt::print(
        stderr,
        "dsgd-bench: warning: this host's all-reduce moved {:.0f} % (median over {} sizes) since calibration "
        "{}; unless the host or its network changed since, its fabric does not hold still: calibrate again "
        "right before the runs you predict (a simulated run on it warns when its model's size moved that much)\n",
        100 * m.median, m.sizes, previous);
}

void result_print(const CalibrationResult& result, const CalibrationPlan& plan, int ranks, const std::string& db,
                  const Store* store) {
  if (ranks >= 2) {
    fmt::print("\n");
    fits_print(result.fits);
    harness_overhead_print(result.collectives);
    if (store) fabric_move_print(*store, result.id);
  }
  profile_print(result.profiles, plan, ranks);
  optimizers_print(result.optimizers);
  fmt::print("\n# sweep {:.1f} s, total {:.1f} s; stored in {}\n", result.sweep_s, result.total_s, db);
  fmt::print("calibration_id={}\n", result.id);
  std::fflush(stdout);
}

int calibrate_on_ranks(const CalibrationOptions& o, int argc, char** argv) {
  std::unique_ptr<Communicator> comm = backend_create_world(calibration_backend(o), &argc, &argv);
  const bool root = comm->rank() == 0;
  if (root) launcher_adopt_terminal();
  bool past_setup = false;
  try {
    CalibrationSetup setup = calibration_setup(o, *comm);
    past_setup = true;
    if (root) header_print(setup, o, *comm);
    CalibratePrinter printer(root);
    const CalibrationResult result =
        calibration_run(setup.request, setup.profile, *comm, setup.store ? &*setup.store : nullptr, printer);
    printer.done();
    if (root) result_print(result, setup.plan, comm->size(), o.db, setup.store ? &*setup.store : nullptr);
    return 0;
  } catch (const PeerFailed&) {
    return 1;
  } catch (const std::exception& e) {
    return cli_report_rank_error(e, *comm, past_setup);
  }
}

}  // namespace

void setup_calibrate(CLI::App& app, int argc, char** argv) {
  auto opts = std::make_shared<CalibrateCliOptions>();
  CalibrationOptions& o = opts->options;
  CLI::App* sub = app.add_subcommand(
      "calibrate",
      "Measure collectives (size sweep, alpha-beta fit) and per-layer compute on N workers; store them in SQLite");
  sub->add_option("--backend", o.backend,
                  "backend whose collectives to measure: a multi-process row of `dsgd-bench list backends`")
      ->capture_default_str();
  opts->workers_option = sub->add_option("--workers", o.workers,
                                         "number of MPI ranks; outside mpiexec, N>1 re-launches through mpiexec -n N")
                             ->capture_default_str();
  sub->add_option("--hostfile", o.hostfile, "MPI hostfile for multi-machine calibration (mpiexec -f)");
  sub->add_option("--db", o.db, "SQLite results database")->capture_default_str();
  sub->add_option("--min-size", o.min_size, "smallest buffer (bytes; units B, KiB, MiB, GiB, kB, MB, GB)")
      ->capture_default_str();
  opts->max_size_option =
      sub->add_option("--max-size", o.max_size, "largest buffer (--quick: 1MiB)")->capture_default_str();
  opts->reps_option =
      sub->add_option("--reps", o.reps, "repetitions per size, each of >= 10 ms (--quick: 2)")->capture_default_str();
  sub->add_flag("--quick", o.quick, "sizes up to 1MiB, 2 repetitions, 5 profile iterations: a few seconds");
  sub->add_option("--workload", o.model.workload, "workload to profile per layer (dsgd-bench list workloads)")
      ->capture_default_str();
  sub->add_option("--dataset", o.model.dataset, "dataset spec of the profile (dsgd-bench list datasets)")
      ->capture_default_str();
  // The model's shape, as `run` takes it: each shape has its own profile (workload_profile_key).
  run_options_bind_keys(sub, o.model, workload_shape_keys());
  sub->add_option("--batches", o.batches, "per-worker batch sizes to profile, comma-separated")
      ->delimiter(',')
      ->capture_default_str();
  opts->profile_iters_option =
      sub->add_option("--profile-iters", o.profile_iters, "timed iterations per batch size (--quick: 5)")
          ->capture_default_str();
  sub->add_option("--threads", o.threads, "BLAS threads per worker during the profile")->capture_default_str();
  sub->footer(
      "Prints one table per collective (nccl-tests style), the alpha-beta fits and the profile; the last line is\n"
      "calibration_id=<id>. Definitions: docs/metrics.md. Examples:\n"
      "  dsgd-bench calibrate --workers 2 --quick\n"
      "  dsgd-bench calibrate --workers 4 --hostfile hosts --max-size 1GiB --batches 32,128\n");
  sub->callback([opts, argc, argv]() {
    const CalibrationOptions given = opts->given();
    if (!launcher_under_mpiexec()) {
      calibration_options_validate(given);
      if (given.workers > 1) {
        cli_exit_code() = launcher_run_mpiexec(static_cast<int>(given.workers), given.hostfile, argc, argv).exit_code;
        return;
      }
    }
    cli_exit_code() = calibrate_on_ranks(given, argc, argv);
  });
}

}  // namespace dsgd
