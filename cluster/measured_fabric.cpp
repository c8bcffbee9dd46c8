// A calibration's measured collective curves (measured_fabric.hpp): building them from the
// sweep's points, reading them by interpolation, and describing them.
#include "cluster/measured_fabric.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "core/errors.hpp"

namespace dsgd {

namespace {

struct OpKind {
  std::string_view op;
  CollKind kind;
};
constexpr std::array<OpKind, 6> kOpKinds = {{
    {"allreduce", CollKind::coll_allreduce},
    {"reduce_scatter", CollKind::coll_reduce_scatter},
    {"allgather", CollKind::coll_allgather},
    {"broadcast", CollKind::coll_broadcast},
    {"sendrecv", CollKind::coll_sendrecv},
    {"onesided_put", CollKind::coll_onesided},
}};

// One swept point of a kind: its size, time and spread (NaN: unknown).
struct CurvePoint {
  double bytes, seconds, spread;
  bool operator<(const CurvePoint& o) const { return bytes != o.bytes ? bytes < o.bytes : seconds < o.seconds; }
};

// Sorted by size; one point per size (the smallest time when a size repeats); non-decreasing.
std::optional<MeasuredCurve> curve_make(std::vector<CurvePoint> points) {
  std::sort(points.begin(), points.end());
  MeasuredCurve c;
  for (const CurvePoint& p : points) {
    if (!c.bytes.empty() && c.bytes.back() == p.bytes) continue;  // sorted: the first is the smallest
    c.bytes.push_back(p.bytes);
    c.seconds.push_back(c.seconds.empty() ? p.seconds : std::max(p.seconds, c.seconds.back()));
    c.spread.push_back(p.spread);
  }
  if (c.bytes.size() < 2) return std::nullopt;
  return c;
}

// Where a read of `bytes` falls on c: 0 at or below its first size (the first point's time),
// else i, the segment [i − 1, i] that holds it (past the end, the last segment, extended).
size_t curve_segment(const MeasuredCurve& c, double bytes) {
  if (bytes <= c.bytes.front()) return 0;
  return std::min<size_t>(
      static_cast<size_t>(std::upper_bound(c.bytes.begin(), c.bytes.end(), bytes) - c.bytes.begin()),
      c.bytes.size() - 1);
}

std::string bytes_text(double b) {
  if (b >= 1024.0 * 1024.0) return fmt::format("{:g} MiB", b / (1024.0 * 1024.0));
  if (b >= 1024.0) return fmt::format("{:g} KiB", b / 1024.0);
  return fmt::format("{:g} B", b);
}

}  // namespace

std::optional<CollKind> measured_fabric_kind(std::string_view op) {
  for (const OpKind& k : kOpKinds)
    if (k.op == op) return k.kind;
  return std::nullopt;
}

std::optional<CollKind> measured_fabric_after_compute_kind(std::string_view op) {
  constexpr std::string_view suffix = "_after_compute";
  if (op.size() <= suffix.size() || op.substr(op.size() - suffix.size()) != suffix) return std::nullopt;
  return measured_fabric_kind(op.substr(0, op.size() - suffix.size()));
}

MeasuredFabric measured_fabric_build(int64_t calibration_id, int ranks, const std::vector<MeasuredPoint>& points) {
  if (ranks < 2)
    DSGD_THROW(Error, "measure the fabric on 2 or more ranks (dsgd-bench calibrate --workers 2)",
               "measured fabric of calibration {}: {} rank(s)", calibration_id, ranks);
  std::array<std::vector<CurvePoint>, kCollKinds> by_kind, after_by_kind;
  for (const MeasuredPoint& p : points) {
    if (!(p.bytes >= 0) || !std::isfinite(p.bytes) || !(p.seconds > 0) || !std::isfinite(p.seconds)) continue;
    if (const std::optional<CollKind> kind = measured_fabric_kind(p.op))
      by_kind[static_cast<size_t>(*kind)].push_back({p.bytes, p.seconds, p.spread});
    else if (const std::optional<CollKind> after = measured_fabric_after_compute_kind(p.op))
      after_by_kind[static_cast<size_t>(*after)].push_back({p.bytes, p.seconds, p.spread});
  }
  MeasuredFabric fabric;
  fabric.calibration_id = calibration_id;
  fabric.ranks = ranks;
  for (size_t k = 0; k < kCollKinds; ++k) {
    fabric.curves[k] = curve_make(std::move(by_kind[k]));
    fabric.after_compute_curves[k] = curve_make(std::move(after_by_kind[k]));
  }
  return fabric;
}

bool measured_fabric_has_after_compute(const MeasuredFabric& fabric) {
  return std::any_of(fabric.after_compute_curves.begin(), fabric.after_compute_curves.end(),
                     [](const std::optional<MeasuredCurve>& c) { return c.has_value(); });
}

MeasuredFabric measured_fabric_after_compute(const MeasuredFabric& fabric) {
  MeasuredFabric f = fabric;
  for (size_t k = 0; k < kCollKinds; ++k)
    if (f.after_compute_curves[k]) f.curves[k] = f.after_compute_curves[k];
  f.after_compute = measured_fabric_has_after_compute(fabric);
  return f;
}

std::optional<double> measured_fabric_time(const MeasuredFabric& fabric, CollKind kind, double bytes) {
  const size_t k = static_cast<size_t>(kind);
  if (k >= kCollKinds || !fabric.curves[k]) return std::nullopt;
  const MeasuredCurve& c = *fabric.curves[k];
  const size_t i = curve_segment(c, bytes);
  if (i == 0) return c.seconds.front();
  const double slope = (c.seconds[i] - c.seconds[i - 1]) / (c.bytes[i] - c.bytes[i - 1]);
  return c.seconds[i - 1] + slope * (bytes - c.bytes[i - 1]);
}

std::optional<MeasuredNoise> measured_fabric_noise(const MeasuredFabric& fabric, CollKind kind, double bytes,
                                                   double limit) {
  const size_t k = static_cast<size_t>(kind);
  if (k >= kCollKinds || !fabric.curves[k]) return std::nullopt;
  const MeasuredCurve& c = *fabric.curves[k];
  // The points measured_fabric_time reads at bytes.
  const size_t hi = curve_segment(c, bytes);
  const size_t lo = hi == 0 ? 0 : hi - 1;
  std::optional<MeasuredNoise> noisy;
  for (size_t i = lo; i <= hi; ++i)
    if (c.spread[i] > limit && (!noisy || c.spread[i] > noisy->spread)) noisy = MeasuredNoise{c.bytes[i], c.spread[i]};
  return noisy;
}

std::string measured_fabric_describe(const MeasuredFabric& fabric) {
  std::string kinds;
  double lo = INFINITY, hi = 0;
  for (size_t k = 0; k < kCollKinds; ++k) {
    if (!fabric.curves[k]) continue;
    if (!kinds.empty()) kinds += ", ";
    kinds += coll_kind_name(static_cast<CollKind>(k));
    lo = std::min(lo, fabric.curves[k]->bytes.front());
    hi = std::max(hi, fabric.curves[k]->bytes.back());
  }
  if (kinds.empty()) return "no measured curve";
  std::string after;
  if (fabric.after_compute) {
    for (size_t k = 0; k < kCollKinds; ++k) {
      if (!fabric.after_compute_curves[k]) continue;
      after += after.empty() ? "; " : ", ";
      after += coll_kind_name(static_cast<CollKind>(k));
    }
    after += " as timed after compute";
  }
  return fmt::format("{} measured on {} ranks at {}..{}{}", kinds, fabric.ranks, bytes_text(lo), bytes_text(hi), after);
}

}  // namespace dsgd
