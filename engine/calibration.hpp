// The calibration protocol of `dsgd-bench calibrate` (docs/cluster.md, docs/metrics.md), callable
// by the CLI and the tuner alike; it prints nothing (the observer is told each step):
//  1. a sweep of buffer sizes over the operations of engine/calibration_ops.hpp, float32, through
//     the Communicator. The timing protocol is nccl-tests': untimed warm-up, then `reps`
//     repetitions of enough iterations for ~min_rep_time_s (>= 1); a repetition's per-iteration
//     time is the slowest rank's (max over ranks); the median over repetitions is kept with the
//     min and max (core/stats.hpp). An op marked `interleaved` is measured with the row before it,
//     repetitions alternating, at a shared iteration count (the harness/bare all-reduce pair).
//     Time is the communicator's clock (now()): the sim backend's virtual time, so calibrating
//     the simulator recovers its network model;
//  2. the alpha-beta fit t = alpha + beta * S * busbw_factor per op (weights 1/t^2;
//     results/alpha_beta_fit.hpp);
//  3. the per-layer compute profile (engine/compute_profile.hpp) of one workload and dataset for
//     each batch size, and the time of one step of each optimizer on its parameters;
//  4. the calibration row and its collectives / fits / profiles / optimizer_profiles rows, written by rank 0 at the end
//     (an interrupted calibration stores nothing).
// An op that takes no time on a backend (the bare all-reduce on sim: untimed) is left out.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cluster/communicator.hpp"
#include "engine/calibration_ops.hpp"
#include "engine/compute_profile.hpp"
#include "results/store.hpp"

namespace dsgd {

struct CalibrationSweepPlan {
  std::vector<int64_t> sizes;  // bytes, ascending
  int64_t reps = 5;
  double min_rep_time_s = 0.01;    // each repetition runs at least this long (~)
  double estimate_time_s = 0.002;  // the iteration-count estimate runs this long
  int64_t max_iters = int64_t(1) << 16;
  std::vector<std::string> ops;  // op names to sweep, in table order (empty: all)
  Device device{};               // where the buffers live: the backend row's device (host by default)
};

// Progress and results as they come (rank 0 prints; every rank is told).
class CalibrationObserver {
 public:
  virtual ~CalibrationObserver() = default;
  // A group of ops (one op, or an interleaved pair) starts.
  virtual void group_begin(const std::vector<const CalibrationOp*>& group) {}
  // One size of a group measured: one row per op of the group, in group order; `done` of `total`
  // (group, size) points of the whole sweep.
  virtual void group_row(const std::vector<const CalibrationOp*>& group, size_t count,
                         const std::vector<CollectiveRow>& rows, int64_t done, int64_t total) {}
  // An op left out (it takes no time on this backend).
  virtual void op_skipped(const CalibrationOp& op, const std::string& why) {}
  // The profile of one batch size starts (index of `total`).
  virtual void profile_batch(int64_t batch, size_t index, size_t total) {}
};

// Collective over comm (every rank calls it with the same plan). Needs comm.size() >= 2.
std::vector<CollectiveRow> calibration_sweep(const CalibrationSweepPlan& plan, Communicator& comm,
                                             CalibrationObserver& observer);

// One fit per op with at least two sizes; `notes` (same order) says when a coefficient was clamped.
struct CalibrationFit {
  FitRow row;
  size_t sizes = 0;
  std::string note;  // "alpha < 0 clamped to 0" | "no size dependence" | ""
};
std::vector<CalibrationFit> calibration_fits(const std::vector<CollectiveRow>& rows, int n);

// Harness vs bare all-reduce bus bandwidth at sizes >= 1 MiB (goal: within 5 %).
struct HarnessOverhead {
  size_t sizes = 0;  // 0: no size >= 1 MiB swept
  double median_ratio = 0, worst_ratio = 0;
};
HarnessOverhead calibration_harness_overhead(const std::vector<CollectiveRow>& rows);

// A sweep's all-reduce against an earlier sweep's (the same host and ranks): at each size both
// measured, |t_now - t_before| / min(t_now, t_before); the median over those sizes and the
// widest, with its size and both times.
struct FabricMove {
  size_t sizes = 0;  // 0: no all-reduce size in common
  double median = 0, widest = 0;
  int64_t widest_bytes = 0;
  double widest_now_s = 0, widest_before_s = 0;
};
FabricMove calibration_fabric_move(const std::vector<CollectiveRow>& now, const std::vector<CollectiveRow>& before);
// A move beyond which two calibrations of one host no longer describe one fabric. On the host
// these docs were measured on, twenty calibrations' all-reduce of 32 KiB fell in two states,
// 12.8-14.5 µs and 21.1-29.3 µs: within a state they moved up to 13 % and 39 %, between the
// states 46-129 %. The limit lies between the two.
inline constexpr double kFabricMoveLimit = 0.4;

// The calibration record of this process (host, CPU, library version, commit) with `config`.
CalibrationRecord calibration_record_make(const Communicator& comm, int workers, const nlohmann::json& config);

// A whole calibration: the sweep (n >= 2), fits and profile, stored by rank 0 in `store` (null on
// the other ranks). The profile setup is made by the caller before (so its errors are checked on
// every rank before anything is measured).
// clang-tidy 14 flags the implicit noexcept constructors: they construct or move an
// nlohmann::json, whose code has throws on paths these never take (null value, move).
// NOLINTNEXTLINE(bugprone-exception-escape)
struct CalibrationRequest {
  CalibrationSweepPlan sweep;
  RunConfig model;  // the profiled workload, dataset and model shape (engine/compute_profile.hpp)
  std::vector<int64_t> batches;
  int64_t profile_iters = 20;
  nlohmann::json config;  // stored as the calibration's config (the caller's options)
};
struct CalibrationResult {
  int64_t id = 0;  // rank 0: the stored calibration; others 0
  std::vector<CollectiveRow> collectives;
  std::vector<CalibrationFit> fits;
  std::vector<ProfileRow> profiles;
  std::vector<OptimizerProfileRow> optimizers;  // one step of each optimizer (compute_profile_measure_optimizers)
  double sweep_s = 0, total_s = 0;              // wall seconds
};
CalibrationResult calibration_run(const CalibrationRequest& request, ComputeProfileSetup& profile, Communicator& comm,
                                  Store* store, CalibrationObserver& observer);

}  // namespace dsgd
