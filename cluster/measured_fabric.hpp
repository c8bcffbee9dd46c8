// A fabric as a calibration measured it (docs/sim.md, "The host's own fabric"): for each
// collective kind, the time of every swept buffer size on the calibration's ranks, used by the
// network model instead of one α-β line where a calibration gives them.
//
// Why. One straight line t = α + β·S cannot follow a library's protocol switches: MPICH on
// shared memory moves from its eager to its rendezvous protocol between 16 and 32 KB, where
// the all-reduce's time jumps 4x, and a fit through the whole sweep misses a 31 KB message by
// 40 %. The measured curve, read piecewise, is an α-β fit per size range.
//
// Model. A curve is the sweep's points (S_k, t_k), sorted by S, made non-decreasing (t_k =
// max(t_k, t_{k−1}): a larger message never takes less; the sweep's medians are noisy by a
// few %), and read by linear interpolation between neighbouring sizes; below the smallest
// size the smallest size's time; above the largest the last segment's slope (its α-β line).
// Scaled to n ranks by the caller (network_model.cpp) with the α-β model's ratio
// model(n) / model(ranks), so the curve's shape is kept and its rank dependence is the
// formula's. Kinds without a curve (barrier) keep the α-β model.
//
// Limits. Only as good as the sweep: sizes outside it are extrapolated (the header of a
// simulated run names the measured range); one host's fabric, so groups > 1 (hier
// topologies) never use it; the sweep's sendrecv is a ping-pong between two ranks, so a
// neighbour exchange with several peers is the sum of their messages, as in the α-β model.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cluster/communicator.hpp"

namespace dsgd {

// One measured point: the calibration's op name (results CollectiveRow::op), S, its time (a
// median over repetitions) and how widely the repetitions spread around it (interquartile
// range / median, as a compute profile's spread; NaN where the source does not record it).
struct MeasuredPoint {
  std::string op;
  double bytes = 0;
  double seconds = 0;
  double spread = NAN;
};

// The sizes, times and spreads of one kind, sorted, non-decreasing, at least two points.
struct MeasuredCurve {
  std::vector<double> bytes, seconds, spread;
};

constexpr size_t kCollKinds = 7;  // CollKind's values, coll_allreduce .. coll_onesided
static_assert(static_cast<size_t>(CollKind::coll_onesided) + 1 == kCollKinds, "a CollKind without a curve slot");

struct MeasuredFabric {
  int64_t calibration_id = 0;
  int ranks = 2;                                                // the calibration's ranks: the curves' n
  std::array<std::optional<MeasuredCurve>, kCollKinds> curves;  // what the model reads
  // The same kinds timed after a stretch of compute ("allreduce_after_compute", ...: as a
  // training step issues them, with its caches streamed through), where the sweep has them.
  std::array<std::optional<MeasuredCurve>, kCollKinds> after_compute_curves;
  bool after_compute = false;  // curves holds the after-compute curves (measured_fabric_after_compute)
};

// The CollKind an op of the calibration's sweep measures: "allreduce" (the harness all-reduce
// training uses), "reduce_scatter", "allgather", "broadcast", "sendrecv" and "onesided_put"
// (a lock, put, unlock epoch: what one remote access of the simulator costs). Empty for the
// others ("allreduce_mpi", the bare library call; "onesided_get", the same epoch's other half).
std::optional<CollKind> measured_fabric_kind(std::string_view op);
// The kind of an after-compute op ("allreduce_after_compute" → all-reduce); empty for others.
std::optional<CollKind> measured_fabric_after_compute_kind(std::string_view op);

// The curves of a calibration's points. Points whose op has no kind, whose size is negative or
// whose time is not a finite positive number are skipped; a kind with fewer than two distinct
// sizes gets no curve. Throws Error when ranks < 2.
MeasuredFabric measured_fabric_build(int64_t calibration_id, int ranks, const std::vector<MeasuredPoint>& points);

// A workload whose step computes at least this long (data + forward + backward + optimizer, as
// modelled) gets the after-compute curves: on this machine the SVM's 40 µs steps, which stream
// 200 KB, meet the back-to-back curve, ResNet-8's and the GPT's 10-30 ms steps the
// after-compute one (docs/sim.md, "Validation").
inline constexpr double kAfterComputeMinStepS = 1e-3;

// Whether the sweep timed any kind after compute.
bool measured_fabric_has_after_compute(const MeasuredFabric& fabric);
// The fabric whose curves are the after-compute ones where measured (the back-to-back ones
// elsewhere), for a workload whose step computes long enough to stream its caches.
MeasuredFabric measured_fabric_after_compute(const MeasuredFabric& fabric);

// The measured time of a buffer of `bytes` of `kind` on the fabric's own ranks; empty when the
// kind has no curve.
std::optional<double> measured_fabric_time(const MeasuredFabric& fabric, CollKind kind, double bytes);

// A measured point a prediction reads that spread more than a limit over its repetitions.
struct MeasuredNoise {
  double bytes = 0;   // the point's size
  double spread = 0;  // its interquartile range / median
};

// The widest spread above `limit` among the points measured_fabric_time reads for `bytes` of
// `kind` (the segment that holds it; the first point below the sweep), or empty: no curve of
// that kind, spreads unknown, or none above the limit. A time read from such a point is the
// median of repetitions that disagree by that much: the prediction is as uncertain.
std::optional<MeasuredNoise> measured_fabric_noise(const MeasuredFabric& fabric, CollKind kind, double bytes,
                                                   double limit);

// "all-reduce, reduce-scatter, all-gather, broadcast, sendrecv, one-sided measured on 2 ranks
// at 4 B..4 MiB": the kinds with a curve and the swept range, for a run's header.
std::string measured_fabric_describe(const MeasuredFabric& fabric);

}  // namespace dsgd
