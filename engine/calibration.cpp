// See calibration.hpp.
#include "engine/calibration.hpp"

#include <algorithm>
#include <cmath>

#include "core/clock.hpp"
#include "core/errors.hpp"
#include "core/stats.hpp"
#include "core/system_info.hpp"
#include "results/alpha_beta_fit.hpp"

namespace dsgd {

namespace {

using Group = std::vector<const CalibrationOp*>;

// The ops of the plan that run on n ranks, grouped: an interleaved op joins the group before it.
std::vector<Group> sweep_groups(const CalibrationSweepPlan& plan, int n, Device device) {
  std::vector<Group> groups;
  for (const CalibrationOp& op : calibration_ops()) {
    const bool wanted =
        plan.ops.empty() || std::find(plan.ops.begin(), plan.ops.end(), std::string(op.name)) != plan.ops.end();
    if (!wanted || !calibration_op_runs_on(op, n) || !calibration_op_runs_on_device(op, device)) continue;
    if (op.interleaved && !groups.empty())
      groups.back().push_back(&op);
    else
      groups.push_back({&op});
  }
  return groups;
}

// Seconds per iteration of `iters` back-to-back iterations, the slowest rank's (every rank calls
// it with the same arguments), times the op's time scale. An after-compute op's iterations are
// each timed alone, after the compute and a barrier.
double sweep_time(const CalibrationOp& op, CalibrationBuffers& buf, size_t count, int64_t iters, Communicator& comm) {
  if (op.recorded) {
    buf.log.clear();
    comm.attach_log(&buf.log);
  }
  double total = 0;
  if (op.after_compute) {
    for (int64_t i = 0; i < iters; ++i) {
      calibration_after_compute_prepare(comm, buf, count);
      comm.untimed_barrier();
      const double start = comm.now();
      op.run(comm, buf, count);
      total += comm.now() - start;
    }
  } else {
    comm.untimed_barrier();
    const double start = comm.now();
    for (int64_t i = 0; i < iters; ++i) op.run(comm, buf, count);
    comm.flush_device_timing();  // a device backend (nccl) only enqueued: wait for its work first
    total = comm.now() - start;
  }
  double per_iter = total / static_cast<double>(iters);
  if (op.recorded) comm.attach_log(nullptr);
  comm.untimed_allreduce_max(&per_iter, 1);
  return per_iter * op.time_scale;
}

// Warm-up and iteration count: one untimed iteration (first touch, connection setup); if it
// took no time at all, 0 (the op is not timed on this backend); if it alone lasted
// 2 x min_rep_time_s, one iteration per repetition (even a warm-up twice as slow as steady state
// leaves repetitions of >= min_rep_time_s; this keeps the 256 MiB end of the sweep short).
// Otherwise runs 1, 8, 64, ... iterations until a batch lasts estimate_time_s, runs that batch
// once more and keeps the faster of the two (one preempted batch must not shrink the
// repetitions), then picks enough iterations for min_rep_time_s (>= 1). The same on every rank
// (the times are the ranks' maximum).
int64_t sweep_iterations(const CalibrationOp& op, const CalibrationSweepPlan& plan, CalibrationBuffers& buf,
                         size_t count, Communicator& comm) {
  const double warmup = sweep_time(op, buf, count, 1, comm);
  if (warmup <= 0) return 0;
  if (warmup >= 2 * plan.min_rep_time_s || op.after_compute) return 1;
  int64_t batch = 1;
  double per_iter = 0;
  for (;;) {
    per_iter = sweep_time(op, buf, count, batch, comm);
    if (per_iter * static_cast<double>(batch) >= plan.estimate_time_s || batch >= plan.max_iters) break;
    batch = std::min(batch * 8, plan.max_iters);
  }
  per_iter = std::min(per_iter, sweep_time(op, buf, count, batch, comm));
  const double wanted = std::ceil(plan.min_rep_time_s / std::max(per_iter, 1e-9));
  return std::clamp<int64_t>(static_cast<int64_t>(wanted), 1, plan.max_iters);
}

CollectiveRow collective_row(const CalibrationOp& op, int64_t bytes, int64_t iters, const std::vector<double>& samples,
                             int n) {
  CollectiveRow row;
  row.op = op.name;
  row.bytes = bytes;
  row.iters = iters;
  row.time_s = stats_median(samples);
  row.time_min_s = *std::min_element(samples.begin(), samples.end());
  row.time_max_s = *std::max_element(samples.begin(), samples.end());
  row.spread = stats_relative_iqr(samples);
  row.algbw_gbps = static_cast<double>(bytes) / row.time_s / 1e9;
  row.busbw_gbps = row.algbw_gbps * op.busbw_factor(n);
  return row;
}

struct SweepState {
  const CalibrationSweepPlan& plan;
  CalibrationBuffers& buf;
  Communicator& comm;
  CalibrationObserver& observer;
  int64_t done = 0, total = 0;
};

// One size of one group: repetitions interleaved over the group's ops so slow drifts of the
// machine hit them alike; a pair shares one iteration count. Ops that take no time leave the group.
void sweep_point(Group& group, int64_t size, SweepState& s, std::vector<CollectiveRow>& out) {
  const int n = s.comm.size();
  const size_t count = calibration_op_count(*group.front(), size, n);
  ++s.done;
  if (count == 0) return;  // a block collective needs one element per rank
  const int64_t bytes = static_cast<int64_t>(count * sizeof(float));
  std::vector<int64_t> iters;
  for (size_t g = 0; g < group.size();) {
    const int64_t it = sweep_iterations(*group[g], s.plan, s.buf, count, s.comm);
    if (it > 0) {
      iters.push_back(it);
      ++g;
      continue;
    }
    s.observer.op_skipped(*group[g], "it takes no time on this backend (not modelled)");
    group.erase(group.begin() + static_cast<std::ptrdiff_t>(g));
  }
  if (group.empty()) return;
  const bool shared = group.size() > 1;
  const int64_t shared_iters = *std::max_element(iters.begin(), iters.end());
  std::vector<std::vector<double>> samples(group.size());
  // An after-compute op (never interleaved) times one iteration per repetition: at least 5.
  const int64_t reps = group.front()->after_compute ? std::max<int64_t>(s.plan.reps, 5) : s.plan.reps;
  for (int64_t rep = 0; rep < reps; ++rep) {
    for (size_t g = 0; g < group.size(); ++g)
      samples[g].push_back(sweep_time(*group[g], s.buf, count, shared ? shared_iters : iters[g], s.comm));
  }
  std::vector<CollectiveRow> rows;
  for (size_t g = 0; g < group.size(); ++g)
    rows.push_back(collective_row(*group[g], bytes, shared ? shared_iters : iters[g], samples[g], n));
  s.observer.group_row(group, count, rows, s.done, s.total);
  out.insert(out.end(), rows.begin(), rows.end());
}

}  // namespace

std::vector<CollectiveRow> calibration_sweep(const CalibrationSweepPlan& plan, Communicator& comm,
                                             CalibrationObserver& observer) {
  const int n = comm.size();
  if (n < 2) DSGD_THROW(Error, "", "calibration_sweep needs 2 or more ranks (got {})", n);
  if (plan.sizes.empty()) return {};
  const size_t max_count = static_cast<size_t>(plan.sizes.back()) / sizeof(float);
  CalibrationBuffers buf;
  // The plan's device (a test device), else where the communicator's buffers live (nccl: its GPU).
  buf.device = plan.device.is_host() ? comm.memory_device() : plan.device;
  buf.a.assign(buf.device, max_count);  // zeros: sums stay finite
  buf.b.assign(buf.device, max_count);
  buf.log.reserve(static_cast<size_t>(2 * plan.max_iters));  // a ping-pong records two events per iteration
  std::vector<Group> groups = sweep_groups(plan, n, buf.device);
  const bool window = std::any_of(groups.begin(), groups.end(), [](const Group& g) {
    return std::any_of(g.begin(), g.end(), [](const CalibrationOp* op) { return op->needs_window; });
  });
  if (window) comm.window_create(max_count);
  SweepState state{plan, buf, comm, observer, 0, static_cast<int64_t>(groups.size() * plan.sizes.size())};
  std::vector<CollectiveRow> rows;
  for (Group& group : groups) {
    observer.group_begin(group);
    for (int64_t size : plan.sizes) sweep_point(group, size, state, rows);
  }
  if (window) comm.window_free();
  return rows;
}

std::vector<CalibrationFit> calibration_fits(const std::vector<CollectiveRow>& rows, int n) {
  std::vector<CalibrationFit> fits;
  for (const CalibrationOp& op : calibration_ops()) {
    std::vector<AlphaBetaPoint> points;
    for (const CollectiveRow& r : rows)
      if (r.op == op.name) points.push_back({static_cast<double>(r.bytes) * op.busbw_factor(n), r.time_s});
    if (points.size() < 2) continue;
    const AlphaBetaFit fit = alpha_beta_fit(points);
    CalibrationFit f;
    f.row = FitRow{op.name, fit.alpha_s, fit.beta_s_per_byte, fit.bandwidth_bytes_per_s, fit.rel_error};
    f.sizes = points.size();
    f.note = fit.alpha_clamped ? "alpha < 0 clamped to 0" : fit.beta_clamped ? "no size dependence" : "";
    fits.push_back(std::move(f));
  }
  return fits;
}

HarnessOverhead calibration_harness_overhead(const std::vector<CollectiveRow>& rows) {
  std::vector<double> ratios;
  for (const CollectiveRow& harness : rows) {
    if (harness.op != "allreduce" || harness.bytes < (int64_t(1) << 20)) continue;
    for (const CollectiveRow& bare : rows)
      if (bare.op == "allreduce_mpi" && bare.bytes == harness.bytes)
        ratios.push_back(harness.busbw_gbps / bare.busbw_gbps);
  }
  HarnessOverhead o;
  o.sizes = ratios.size();
  if (ratios.empty()) return o;
  o.median_ratio = stats_median(ratios);
  o.worst_ratio = *std::min_element(ratios.begin(), ratios.end());
  return o;
}

FabricMove calibration_fabric_move(const std::vector<CollectiveRow>& now, const std::vector<CollectiveRow>& before) {
  FabricMove m;
  std::vector<double> moved;
  for (const CollectiveRow& a : now) {
    if (a.op != "allreduce" || !(a.time_s > 0)) continue;
    for (const CollectiveRow& b : before) {
      if (b.op != "allreduce" || b.bytes != a.bytes || !(b.time_s > 0)) continue;
      const double d = stats_relative_gap(a.time_s, b.time_s);
      moved.push_back(d);
      if (d > m.widest) m = FabricMove{0, 0, d, a.bytes, a.time_s, b.time_s};
    }
  }
  m.sizes = moved.size();
  if (!moved.empty()) m.median = stats_median(moved);
  return m;
}

CalibrationRecord calibration_record_make(const Communicator& comm, int workers, const nlohmann::json& config) {
  const SystemInfo sys = system_info_read();
  CalibrationRecord record;
  record.workers = workers;
  record.host = sys.host;
  record.cpu_model = sys.cpu_model;
  record.mpi_version = comm.library_version();
  record.git_commit = sys.git_commit;
  record.tool_version = sys.tool_version;
  record.config_json = config.dump();
  return record;
}

CalibrationResult calibration_run(const CalibrationRequest& request, ComputeProfileSetup& profile, Communicator& comm,
                                  Store* store, CalibrationObserver& observer) {
  CalibrationResult result;
  const double started = clock_now_s();
  const int n = comm.size();
  if (n >= 2) {
    result.collectives = calibration_sweep(request.sweep, comm, observer);
    result.fits = calibration_fits(result.collectives, n);
  }
  result.sweep_s = clock_now_s() - started;
  for (size_t i = 0; i < request.batches.size(); ++i) {
    observer.profile_batch(request.batches[i], i, request.batches.size());
    const std::vector<ProfileRow> rows =
        compute_profile_measure(profile, request.model, {request.batches[i]}, request.profile_iters, comm);
    result.profiles.insert(result.profiles.end(), rows.begin(), rows.end());
  }
  result.optimizers = compute_profile_measure_optimizers(profile, request.model, request.profile_iters, comm);
  if (comm.rank() == 0 && store) {
    std::vector<FitRow> fits;
    for (const CalibrationFit& f : result.fits) fits.push_back(f.row);
    result.id = store->calibration_begin(calibration_record_make(comm, n, request.config));
    store->collectives_append(result.id, result.collectives);
    store->fits_append(result.id, fits);
    store->profiles_append(result.id, result.profiles);
    optimizer_profiles_append(*store, result.id, result.optimizers);
  }
  result.total_s = clock_now_s() - started;
  return result;
}

}  // namespace dsgd
