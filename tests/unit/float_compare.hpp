// Tolerances for comparing float32 kernels with references, scaled to the magnitude compared,
// so that a test passes whatever ISA computes the floats (oneDNN's AVX-512, AVX2 or SSE4.1
// kernels, -march=native with FMA contraction or a portable build without) and still fails
// on a real bug. Two forms:
//
// 1. A float32 reduction (a dot product, a convolution output, a weight gradient) against a
//    reference accumulated in double: float_sum_tolerance(k, Σ|t_i|). A float sum of k terms
//    t_i (each product rounded, then added in any order or blocking, with or without FMA)
//    carries one rounding of relative size ≤ u = 2^-24 per operation, each of absolute size
//    ≤ u·|partial sum| ≤ u·Σ|t_i|. These errors behave like independent random signs, so the
//    total is about u·sqrt(k)·(largest partial sum) ≤ u·sqrt(k)·Σ|t_i| (the deterministic
//    bound, ~k·u·Σ|t_i|, needs every rounding to go the same way and is not reached by any
//    real kernel). The tolerance c·ε·sqrt(k)·Σ|t_i| (ε = 2u = 2^-23, c = 4) is 8× that
//    envelope, and for terms of random sign (partial sums ~ sqrt(k)·|t|, not k·|t|) another
//    ~sqrt(k) above the typical error. It stays far below what a bug changes: one missing
//    or misindexed term moves the sum by ~Σ|t_i|/k, and the tolerance is 8u·k^1.5 of that —
//    0.7 % at k = 576 (a 64-channel 3×3 output), 3 % at k = 1568 (a weight gradient over
//    2×28×28 pixels). Σ|t_i| comes from the naive reference run on |inputs| (for a bilinear
//    map such as a convolution or a matrix product that is exactly Σ|t_i| per output).
//    Measured on test_conv's oneDNN shapes (AVX-512, AVX2 and SSE4.1 kernels): the largest
//    error was 0.14× this tolerance; zeroing one input element moved the outputs it reaches
//    by a median 600× to 400 000× the tolerance (4 of ~19 000 such outputs stayed within it,
//    where the element met a near-zero partner).
//
// 2. Anything else (elementwise maps, normalisations, optimizer updates): |got − ref| ≤
//    rtol·|ref| + atol, the rtol a small multiple of ε times the number of dependent
//    operations and the atol a floor for values that cancel to ~0, each stated at its use.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <sstream>
#include <vector>

namespace dsgd::testing {

// float32's machine epsilon 2^-23 (the spacing of floats in [1, 2); u = ε/2).
inline constexpr double kFloatEps = 0x1p-23;
// c in c·ε·sqrt(k)·Σ|t_i| (see the top of this file).
inline constexpr double kSumTolFactor = 4.0;

// The tolerance for a float32 sum of k terms whose absolute values sum to abs_sum.
inline double float_sum_tolerance(size_t k, double abs_sum) {
  return kSumTolFactor * kFloatEps * std::sqrt(double(std::max<size_t>(k, 1))) * abs_sum;
}

// |v| elementwise (inputs for the naive reference that yields Σ|t_i|).
inline std::vector<float> abs_of(const std::vector<float>& v) {
  std::vector<float> a(v.size());
  for (size_t i = 0; i < v.size(); ++i) a[i] = std::fabs(v[i]);
  return a;
}

namespace detail {
// Shared loop: tol(i) is the tolerance of element i. Names the first 5 mismatches and the
// worst error / tolerance ratio.
template <class Tol>
::testing::AssertionResult all_within(const std::vector<float>& got, const std::vector<float>& ref, Tol tol) {
  if (got.size() != ref.size())
    return ::testing::AssertionFailure() << "sizes differ: " << got.size() << " vs " << ref.size();
  std::ostringstream msg;
  size_t bad = 0;
  double worst = 0;
  size_t worst_i = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double err = std::fabs(double(got[i]) - double(ref[i])), t = tol(i);
    if (err <= t) {
      if (t > 0 && err / t > worst) worst = err / t, worst_i = i;
      continue;
    }
    // Out of tolerance (or NaN).
    if (bad < 5) msg << "\n  [" << i << "] got " << got[i] << ", want " << ref[i] << ", error " << err << " > " << t;
    ++bad;
    const double ratio = t > 0 && !std::isnan(err) ? err / t : INFINITY;
    if (ratio > worst) worst = ratio, worst_i = i;
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << bad << " of " << got.size() << " values out of tolerance (worst [" << worst_i
                                       << "]: " << worst << "x the tolerance):" << msg.str();
}
}  // namespace detail

// got[i] vs ref[i] (a double-accumulated reference rounded to float), each a sum of at most k
// terms whose absolute values sum to abs_sum[i]: within float_sum_tolerance(k, abs_sum[i]).
inline ::testing::AssertionResult float_sums_close(const std::vector<float>& got, const std::vector<float>& ref,
                                                   const std::vector<float>& abs_sum, size_t k) {
  if (abs_sum.size() != ref.size()) return ::testing::AssertionFailure() << "abs_sum has the wrong size";
  return detail::all_within(got, ref, [&](size_t i) { return float_sum_tolerance(k, abs_sum[i]); });
}

// |got[i] − ref[i]| ≤ rtol·|ref[i]| + atol for every i.
inline ::testing::AssertionResult all_near_rel(const std::vector<float>& got, const std::vector<float>& ref,
                                               double rtol, double atol) {
  return detail::all_within(got, ref, [&](size_t i) { return rtol * std::fabs(double(ref[i])) + atol; });
}

// |got − ref| ≤ rtol·|ref| + atol.
inline ::testing::AssertionResult near_rel(double got, double ref, double rtol, double atol = 0) {
  const double err = std::fabs(got - ref), tol = rtol * std::fabs(ref) + atol;
  if (err <= tol) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "got " << got << ", want " << ref << ", error " << err << " > " << tol
                                       << " (rtol " << rtol << ", atol " << atol << ")";
}

}  // namespace dsgd::testing
