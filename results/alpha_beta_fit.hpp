// The alpha-beta (latency-bandwidth) model of a collective, fitted to a calibration
// sweep (`dsgd-bench calibrate`; definitions in docs/metrics.md):
//
//   t(S) = alpha + beta * x,   x = S * busbw_factor(op, n)
//
// S is the buffer size in bytes as nccl-tests counts it, busbw_factor the nccl-tests bus
// factor (2(n-1)/n all-reduce, (n-1)/n reduce-scatter / all-gather, 1 broadcast /
// send-recv; each operation's row in engine/calibration_ops.hpp), so 1/beta is the asymptotic bus bandwidth and alpha
// the whole collective's fixed cost. The fit is weighted least squares with weights 1/t^2 (it minimises the sum of
// squared *relative* residuals, so 8-byte and 256 MiB points count alike). Limits: one straight line per collective;
// protocol switches (eager / rendezvous) show up as a larger rel_error, not as extra segments.
#pragma once

#include <string_view>
#include <vector>

namespace dsgd {

struct AlphaBetaPoint {
  double bytes = 0;   // x: S * busbw_factor
  double time_s = 0;  // measured time (> 0)
};

struct AlphaBetaFit {
  double alpha_s = 0;
  double beta_s_per_byte = 0;
  double bandwidth_bytes_per_s = 0;  // 1 / beta; +inf when beta = 0
  double rel_error = 0;              // median over the points of |alpha + beta x - t| / t
  bool alpha_clamped = false;        // the unconstrained fit had alpha < 0; refitted with alpha = 0
  bool beta_clamped = false;         // the unconstrained fit had beta <= 0; refitted with beta = 0
};

// Weighted (1/t^2) least-squares fit with alpha >= 0 and beta >= 0 (a negative
// coefficient is set to 0 and the other refitted). Throws InputError when the points do
// not span at least two distinct sizes, Error for a non-positive or non-finite time or
// a negative or non-finite size.
AlphaBetaFit alpha_beta_fit(const std::vector<AlphaBetaPoint>& points);

// alpha + beta * bytes (bytes already multiplied by the bus factor).
double alpha_beta_predict(const AlphaBetaFit& fit, double bytes);

}  // namespace dsgd
