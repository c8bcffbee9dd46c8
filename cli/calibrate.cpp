// `dsgd-bench calibrate`: measures this cluster for the cost model (docs/cluster.md, docs/metrics.md) and
// stores it (schema v3 tables calibrations / collectives / fits / profiles):
//  1. a sweep of collective sizes, from --min-size to --max-size by x2 (x4 with --quick),
//     float32 buffers, for: allreduce through the harness's recorded path
//     (Communicator::allreduce_sum with an event log attached, exactly as training calls
//     it) beside a bare MPI_Allreduce (op allreduce_mpi, repetitions interleaved), and bare
//     MPI for reduce_scatter (MPI_Reduce_scatter_block), allgather (MPI_Allgather),
//     broadcast (MPI_Bcast from rank 0) and sendrecv (MPI_Send/MPI_Recv ping-pong between
//     ranks 0 and 1; time = half the round trip). The timing protocol is nccl-tests':
//     untimed warm-up, then --reps repetitions of enough iterations for ~10 ms (>= 1); a
//     repetition's per-iteration time is the slowest rank's (MPI max); the median over
//     repetitions is kept with the min and max. Printed as one fixed-width table per op
//     (size, count, time, algbw, busbw; docs/metrics.md);
//  2. the alpha-beta fit t = alpha + beta * S * busbw_factor per op (weights 1/t^2;
//     results/alpha_beta_fit.hpp);
//  3. a per-layer compute profile of --workload on --dataset for each of --batches:
//     backward per layer from the layer hook's timestamps; forward is one whole-model
//     call, so its time is split over the layers in proportion to their parameter counts.
//     All ranks profile at once (as they compute in training); the stored value is the
//     slowest rank's median over the iterations.
// Outside mpiexec with --workers N > 1 it relaunches itself through mpiexec, as `run`
// does. Rank 0 prints and stores; the calibration is written at the end (an interrupted
// calibration stores nothing). The last line printed is `calibration_id=<id>`.
// Limits: one fit line per op (protocol switches show as rel_error); sizes up to 2 GiB;
// the bare-MPI ops need an MPI build (without MPI only the profile runs, on 1 rank).
#ifdef DSGD_HAVE_MPI
#include <mpi.h>
#endif
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "cli/commands.hpp"
#include "cluster/communicator.hpp"
#include "cluster/launcher.hpp"
#include "core/clock.hpp"
#include "core/errors.hpp"
#include "core/rng.hpp"
#include "core/run_config.hpp"
#include "core/stats.hpp"
#include "core/system_info.hpp"
#include "engine/collective_check.hpp"
#include "engine/compute_profile.hpp"
#include "results/alpha_beta_fit.hpp"
#include "results/store.hpp"
#include "workloads/datasets/dataset.hpp"
#include "workloads/workload.hpp"

extern "C" void openblas_set_num_threads(int);

namespace dsgd {

namespace {

constexpr double kMinRepTimeS = 0.01;     // each repetition runs at least this long (~)
constexpr int64_t kMaxIters = 1 << 16;    // iterations per repetition, at most
constexpr double kEstimateTimeS = 0.002;  // the iteration-count estimate runs this long
constexpr int64_t kMaxSizeBytes = int64_t(2) << 30;
constexpr int kProfileWarmup = kComputeProfileWarmup;
constexpr uint64_t kProfileSeed = kComputeProfileSeed;  // dataset synthesis and batch order of the profile

struct CalibrateOptions {
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
  int64_t reps = 5;
  int64_t profile_iters = 20;
  std::vector<int64_t> sizes;  // bytes
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
  plan.reps = o.quick && !reps_given ? 2 : o.reps;
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
  if (plan.reps < 1 || plan.reps > 1000) {
    DSGD_THROW(InputError, "pass e.g. --reps 5", "--reps must be in 1..1000 (got {})", plan.reps);
  }
  if (plan.profile_iters < 1 || plan.profile_iters > 100000) {
    DSGD_THROW(InputError, "pass e.g. --profile-iters 20", "--profile-iters must be in 1..100000 (got {})",
               plan.profile_iters);
  }
  for (int64_t bytes = plan.min_bytes; bytes <= plan.max_bytes; bytes *= plan.size_factor) {
    plan.sizes.push_back(bytes);
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

void validate_before_launch(const CalibrateOptions& o) {
  plan_make(o);
  workload_check_name(o.workload);
  dataset_validate_spec(o.dataset);
  if (!o.hostfile.empty() && !std::filesystem::is_regular_file(o.hostfile)) {
    DSGD_THROW(InputError, "pass an existing MPI hostfile", "--hostfile: no file '{}'", o.hostfile);
  }
  Store::open(o.db);
}

// ---- the collective sweep ----------------------------------------------------------------

enum class SweepOp {
  sweep_allreduce,
  sweep_allreduce_mpi,
  sweep_reduce_scatter,
  sweep_allgather,
  sweep_broadcast,
  sweep_sendrecv
};

const char* sweep_op_name(SweepOp op) {
  switch (op) {
    case SweepOp::sweep_allreduce: return "allreduce";
    case SweepOp::sweep_allreduce_mpi: return "allreduce_mpi";
    case SweepOp::sweep_reduce_scatter: return "reduce_scatter";
    case SweepOp::sweep_allgather: return "allgather";
    case SweepOp::sweep_broadcast: return "broadcast";
    case SweepOp::sweep_sendrecv: return "sendrecv";
  }
  return "unknown";
}

// What each table says it measured.
const char* sweep_op_description(SweepOp op) {
  switch (op) {
    case SweepOp::sweep_allreduce:
      return "harness Communicator::allreduce_sum (recorded, as in training) | bare MPI_Allreduce; in place, sum";
    case SweepOp::sweep_allreduce_mpi: return "bare MPI_Allreduce, in place, sum";
    case SweepOp::sweep_reduce_scatter: return "MPI_Reduce_scatter_block, sum; size = the whole send buffer";
    case SweepOp::sweep_allgather: return "MPI_Allgather; size = the whole receive buffer";
    case SweepOp::sweep_broadcast: return "MPI_Bcast from rank 0";
    case SweepOp::sweep_sendrecv: return "MPI_Send/MPI_Recv ping-pong, ranks 0 and 1; time = half the round trip";
  }
  return "";
}

#ifdef DSGD_HAVE_MPI
void mpi_check(int rc, const char* call) {
  if (rc == MPI_SUCCESS) return;
  char message[MPI_MAX_ERROR_STRING] = {0};
  int len = 0;
  MPI_Error_string(rc, message, &len);
  int rank = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  DSGD_THROW(Error, "check the MPI installation and that all ranks run the same command",
             "{} failed on rank {} ({}): {}", call, rank, system_info_read().host, message);
}
#define DSGD_CALIBRATE_MPI_CHECK(call) mpi_check((call), #call)
#endif

// Buffers allocated once for the largest size (convention: allocate once).
struct SweepBuffers {
  std::vector<float> a, b;
  CollEventLog log;  // the harness all-reduce records into it, as in training
};

// Elements actually used for `bytes` (a multiple of n for the block collectives), 0 when
// the op cannot run at that size.
size_t sweep_count(SweepOp op, int64_t bytes, int n) {
  const size_t count = static_cast<size_t>(bytes) / sizeof(float);
  if (op == SweepOp::sweep_reduce_scatter || op == SweepOp::sweep_allgather) {
    return count / static_cast<size_t>(n) * static_cast<size_t>(n);
  }
  return count;
}

// One iteration of op on count elements (the whole buffer S = count * 4 bytes).
void sweep_run_once(SweepOp op, SweepBuffers& buf, size_t count, Communicator& comm) {
  if (op == SweepOp::sweep_allreduce) {
    comm.allreduce_sum(buf.a.data(), count);
    return;
  }
#ifdef DSGD_HAVE_MPI
  const int n = comm.size();
  const int elements = static_cast<int>(count);
  const int block = static_cast<int>(count / static_cast<size_t>(n));
  switch (op) {
    case SweepOp::sweep_allreduce_mpi:
      DSGD_CALIBRATE_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, buf.a.data(), elements, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD));
      return;
    case SweepOp::sweep_reduce_scatter:
      DSGD_CALIBRATE_MPI_CHECK(
          MPI_Reduce_scatter_block(buf.a.data(), buf.b.data(), block, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD));
      return;
    case SweepOp::sweep_allgather:
      DSGD_CALIBRATE_MPI_CHECK(
          MPI_Allgather(buf.a.data(), block, MPI_FLOAT, buf.b.data(), block, MPI_FLOAT, MPI_COMM_WORLD));
      return;
    case SweepOp::sweep_broadcast:
      DSGD_CALIBRATE_MPI_CHECK(MPI_Bcast(buf.a.data(), elements, MPI_FLOAT, 0, MPI_COMM_WORLD));
      return;
    case SweepOp::sweep_sendrecv: {
      constexpr int tag = 7101;
      if (comm.rank() == 0) {
        DSGD_CALIBRATE_MPI_CHECK(MPI_Send(buf.a.data(), elements, MPI_FLOAT, 1, tag, MPI_COMM_WORLD));
        DSGD_CALIBRATE_MPI_CHECK(
            MPI_Recv(buf.b.data(), elements, MPI_FLOAT, 1, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
      } else if (comm.rank() == 1) {
        DSGD_CALIBRATE_MPI_CHECK(
            MPI_Recv(buf.b.data(), elements, MPI_FLOAT, 0, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        DSGD_CALIBRATE_MPI_CHECK(MPI_Send(buf.a.data(), elements, MPI_FLOAT, 0, tag, MPI_COMM_WORLD));
      }
      return;
    }
    case SweepOp::sweep_allreduce: return;
  }
#else
  DSGD_THROW(Error, "rebuild with MPI (DSGD_WITH_MPI=ON)", "{} needs MPI", sweep_op_name(op));
#endif
}

// Seconds per iteration of `iters` back-to-back iterations, the slowest rank's (a
// collective: every rank calls it with the same arguments).
double sweep_time(SweepOp op, SweepBuffers& buf, size_t count, int64_t iters, Communicator& comm) {
  const bool harness = op == SweepOp::sweep_allreduce;
  if (harness) {
    buf.log.clear();
    comm.attach_log(&buf.log);
  }
  comm.untimed_barrier();
  const double start = clock_now_s();
  for (int64_t i = 0; i < iters; ++i) sweep_run_once(op, buf, count, comm);
  double per_iter = (clock_now_s() - start) / static_cast<double>(iters);
  if (harness) comm.attach_log(nullptr);
  comm.untimed_allreduce_max(&per_iter, 1);
  // A ping-pong iteration is a round trip: the one-way time is half of it.
  return op == SweepOp::sweep_sendrecv ? per_iter / 2 : per_iter;
}

// Warm-up and iteration count: one untimed iteration (first touch, connection setup);
// if it alone lasted 2 x kMinRepTimeS, one iteration per repetition (even a warm-up twice
// as slow as steady state leaves repetitions of >= kMinRepTimeS; this keeps the 256 MiB
// end of the sweep short). Otherwise runs 1, 8, 64, ... iterations until a batch lasts
// kEstimateTimeS, runs that batch once more and keeps the faster of the two (one
// preempted batch must not shrink the repetitions), then picks enough iterations for
// kMinRepTimeS (>= 1). The same on every rank (the times are the ranks' maximum).
int64_t sweep_iterations(SweepOp op, SweepBuffers& buf, size_t count, Communicator& comm) {
  const double warmup = sweep_time(op, buf, count, 1, comm);
  if (warmup >= 2 * kMinRepTimeS) return 1;
  int64_t batch = 1;
  double per_iter = 0;
  for (;;) {
    per_iter = sweep_time(op, buf, count, batch, comm);
    if (per_iter * static_cast<double>(batch) >= kEstimateTimeS || batch >= kMaxIters) break;
    batch = std::min(batch * 8, kMaxIters);
  }
  per_iter = std::min(per_iter, sweep_time(op, buf, count, batch, comm));
  const double wanted = std::ceil(kMinRepTimeS / std::max(per_iter, 1e-9));
  return std::clamp<int64_t>(static_cast<int64_t>(wanted), 1, kMaxIters);
}

CollectiveRow collective_row(SweepOp op, int64_t bytes, int64_t iters, const std::vector<double>& samples, int n) {
  CollectiveRow row;
  row.op = sweep_op_name(op);
  row.bytes = bytes;
  row.iters = iters;
  row.time_s = stats_median(samples);
  row.time_min_s = *std::min_element(samples.begin(), samples.end());
  row.time_max_s = *std::max_element(samples.begin(), samples.end());
  row.algbw_gbps = static_cast<double>(bytes) / row.time_s / 1e9;
  row.busbw_gbps = row.algbw_gbps * collective_busbw_factor(row.op, n);
  return row;
}

// One group of ops measured together: their repetitions are interleaved at each size so
// slow drifts of the machine hit them alike (the harness/bare all-reduce pair).
std::vector<CollectiveRow> sweep_group(const std::vector<SweepOp>& group, const CalibratePlan& plan, SweepBuffers& buf,
                                       Communicator& comm) {
  const int n = comm.size();
  const bool root = comm.rank() == 0;
  const bool pair = group.size() == 2;
  if (root) {
    fmt::print("\n# {}: {}\n", sweep_op_name(group.front()), sweep_op_description(group.front()));
    if (pair) {
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
  std::vector<CollectiveRow> rows;
  for (int64_t size : plan.sizes) {
    const size_t count = sweep_count(group.front(), size, n);
    if (count == 0) continue;  // a block collective needs one element per rank
    const int64_t bytes = static_cast<int64_t>(count * sizeof(float));
    std::vector<int64_t> iters;
    iters.reserve(group.size());
    for (SweepOp op : group) iters.push_back(sweep_iterations(op, buf, count, comm));
    const int64_t shared_iters = *std::max_element(iters.begin(), iters.end());
    std::vector<std::vector<double>> samples(group.size());
    for (int64_t rep = 0; rep < plan.reps; ++rep) {
      for (size_t g = 0; g < group.size(); ++g) {
        samples[g].push_back(sweep_time(group[g], buf, count, pair ? shared_iters : iters[g], comm));
      }
    }
    std::vector<CollectiveRow> measured;
    for (size_t g = 0; g < group.size(); ++g) {
      measured.push_back(collective_row(group[g], bytes, pair ? shared_iters : iters[g], samples[g], n));
    }
    if (root) {
      const CollectiveRow& r = measured[0];
      if (pair) {
        const CollectiveRow& bare = measured[1];
        fmt::print("{:>12} {:>11} {:>7} | {:>10.2f} {:>8.3f} {:>8.3f} | {:>10.2f} {:>8.3f} {:>8.3f} | {:>6.3f}\n",
                   r.bytes, count, r.iters, r.time_s * 1e6, r.algbw_gbps, r.busbw_gbps, bare.time_s * 1e6,
                   bare.algbw_gbps, bare.busbw_gbps, r.busbw_gbps / bare.busbw_gbps);
      } else {
        fmt::print("{:>12} {:>11} {:>7} {:>10.2f} {:>10.2f} {:>10.2f} {:>8.3f} {:>8.3f}\n", r.bytes, count, r.iters,
                   r.time_s * 1e6, r.time_min_s * 1e6, r.time_max_s * 1e6, r.algbw_gbps, r.busbw_gbps);
      }
      std::fflush(stdout);
    }
    rows.insert(rows.end(), measured.begin(), measured.end());
  }
  return rows;
}

std::vector<CollectiveRow> sweep_all(const CalibratePlan& plan, Communicator& comm) {
  const int64_t max_bytes = plan.sizes.back();
  SweepBuffers buf;
  buf.a.assign(static_cast<size_t>(max_bytes) / sizeof(float), 0.0f);  // zeros: sums stay finite
  buf.b.assign(buf.a.size(), 0.0f);
  buf.log.reserve(static_cast<size_t>(kMaxIters));
  const std::vector<std::vector<SweepOp>> groups = {
      {SweepOp::sweep_allreduce, SweepOp::sweep_allreduce_mpi},
      {SweepOp::sweep_reduce_scatter},
      {SweepOp::sweep_allgather},
      {SweepOp::sweep_broadcast},
      {SweepOp::sweep_sendrecv},
  };
  std::vector<CollectiveRow> rows;
  for (const auto& group : groups) {
    std::vector<CollectiveRow> measured = sweep_group(group, plan, buf, comm);
    rows.insert(rows.end(), measured.begin(), measured.end());
  }
  return rows;
}

// ---- alpha-beta fits ------------------------------------------------------------------------

std::vector<FitRow> fits_make(const std::vector<CollectiveRow>& rows, int n, bool print) {
  std::vector<std::string> ops;
  for (const CollectiveRow& r : rows) {
    if (std::find(ops.begin(), ops.end(), r.op) == ops.end()) ops.push_back(r.op);
  }
  if (print) {
    fmt::print("\n# alpha-beta fit per op: t = alpha + beta * S * busbw_factor, weighted least squares (1/t^2)\n");
    fmt::print("#{:>15} {:>11} {:>16} {:>14} {:>6}  {}\n", "op", "alpha(us)", "bandwidth(GB/s)", "median_rel_err",
               "sizes", "note");
  }
  std::vector<FitRow> fits;
  for (const std::string& op : ops) {
    std::vector<AlphaBetaPoint> points;
    for (const CollectiveRow& r : rows) {
      if (r.op == op) points.push_back({static_cast<double>(r.bytes) * collective_busbw_factor(op, n), r.time_s});
    }
    if (points.size() < 2) {
      if (print) fmt::print("{:>16} (one size only: no fit)\n", op);
      continue;
    }
    const AlphaBetaFit fit = alpha_beta_fit(points);
    fits.push_back(FitRow{op, fit.alpha_s, fit.beta_s_per_byte, fit.bandwidth_bytes_per_s, fit.rel_error});
    if (print) {
      const char* note = fit.alpha_clamped ? "alpha < 0 clamped to 0" : fit.beta_clamped ? "no size dependence" : "";
      fmt::print("{:>16} {:>11.2f} {:>16.3f} {:>13.1f}% {:>6}  {}\n", op, fit.alpha_s * 1e6,
                 fit.bandwidth_bytes_per_s / 1e9, fit.rel_error * 100, points.size(), note);
    }
  }
  return fits;
}

// Harness vs bare all-reduce bus bandwidth at sizes >= 1 MiB (issue: within 5 %).
void harness_overhead_print(const std::vector<CollectiveRow>& rows) {
  std::vector<double> ratios;
  for (const CollectiveRow& harness : rows) {
    if (harness.op != "allreduce" || harness.bytes < (int64_t(1) << 20)) continue;
    for (const CollectiveRow& bare : rows) {
      if (bare.op == "allreduce_mpi" && bare.bytes == harness.bytes)
        ratios.push_back(harness.busbw_gbps / bare.busbw_gbps);
    }
  }
  if (ratios.empty()) {
    fmt::print("# harness vs bare MPI_Allreduce: no size >= 1 MiB swept\n");
    return;
  }
  const double worst = *std::min_element(ratios.begin(), ratios.end());
  fmt::print(
      "# harness vs bare MPI_Allreduce busbw at >= 1 MiB ({} sizes): median ratio {:.3f}, worst {:.3f} "
      "(goal >= 0.95){}\n",
      ratios.size(), stats_median(ratios), worst, worst >= 0.95 ? "" : "  ** below the goal **");
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

// ---- the command on every rank --------------------------------------------------------------

nlohmann::json config_json(const CalibrateOptions& o, const CalibratePlan& plan, int ranks) {
  return {
      {"workers", ranks},
      {"min_size", plan.min_bytes},
      {"max_size", plan.max_bytes},
      {"size_factor", plan.size_factor},
      {"sizes", plan.sizes.size()},
      {"reps", plan.reps},
      {"quick", o.quick},
      {"dtype", "float32"},
      {"min_rep_time_s", kMinRepTimeS},
      {"max_iters", kMaxIters},
      {"rank_aggregation", "max over ranks of the per-iteration time of a repetition"},
      {"statistic", "median over repetitions (min and max kept)"},
      {"ops", {"allreduce", "allreduce_mpi", "reduce_scatter", "allgather", "broadcast", "sendrecv"}},
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
  std::unique_ptr<Communicator> comm = communicator_create_world(&argc, &argv);
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
          size_text(plan.sizes.front()), size_text(plan.sizes.back()), plan.size_factor, plan.sizes.size(), plan.reps,
          kMinRepTimeS * 1e3);
      fmt::print(
          "# busbw = algbw x 2(n-1)/n all-reduce, x (n-1)/n reduce-scatter / all-gather, x 1 broadcast / "
          "send-recv (docs/metrics.md)\n");
      std::fflush(stdout);
    }
    const double started = clock_now_s();

    std::vector<CollectiveRow> collectives;
    std::vector<FitRow> fits;
    if (n < 2) {
      if (root) fmt::print("# 1 rank: no collective to measure (pass --workers 2 or more); profiling only\n");
    } else {
      collectives = sweep_all(plan, *comm);
      if (root) fmt::print("\n");
      fits = fits_make(collectives, n, root);
      if (root) harness_overhead_print(collectives);
    }
    const double sweep_s = clock_now_s() - started;
    std::vector<ProfileRow> profiles =
        compute_profile_measure(profile, o.workload, o.dataset, o.batches, plan.profile_iters, *comm);
    if (root) {
      profile_print(profiles, plan, n);
      CalibrationRecord record;
      record.workers = n;
      record.host = sys.host;
      record.cpu_model = sys.cpu_model;
      record.mpi_version = comm->library_version();
      record.git_commit = sys.git_commit;
      record.tool_version = sys.tool_version;
      record.config_json = config_json(o, plan, n).dump();
      const int64_t id = store->calibration_begin(record);
      store->collectives_append(id, collectives);
      store->fits_append(id, fits);
      store->profiles_append(id, profiles);
      fmt::print("\n# sweep {:.1f} s, total {:.1f} s; stored in {}\n", sweep_s, clock_now_s() - started, o.db);
      fmt::print("calibration_id={}\n", id);
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
