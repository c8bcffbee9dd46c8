// Vectorisable float exp and tanh for the transformer's elementwise layers (GELU, the
// attention softmax, the loss), and row reductions in a fixed lane order. Cephes-style:
// exp(x) = 2^n · p(r) with n = round(x / ln 2), r = x − n ln 2
// (Cody–Waite split), p a degree-7 polynomial; relative error ≤ 2e-7 on [−87, 88] (inputs
// are clamped there, so exp never returns inf or a denormal). Written as plain float
// arithmetic (magic-number rounding, std::bit_cast for 2^n) so that GCC vectorises loops
// that call it; glibc's expf/tanhf are scalar calls and were the step's largest
// non-GEMM cost.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

namespace dsgd {

inline float fast_exp(float x) {
  x = x < -87.0f ? -87.0f : (x > 88.0f ? 88.0f : x);
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kRound = 12582912.0f;  // 1.5 · 2^23: adding and subtracting it rounds to nearest
  const float n = (x * kLog2e + kRound) - kRound;
  const float r = (x - n * 0.693359375f) - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  const int32_t bits = (static_cast<int32_t>(n) + 127) << 23;
  return p * std::bit_cast<float>(bits);
}

// tanh(u) = 1 − 2 / (e^{2u} + 1); absolute error ≤ 3e-7.
inline float fast_tanh(float u) {
  return 1.0f - 2.0f / (fast_exp(2.0f * u) + 1.0f);
}

// Row reductions (sum, dot, max, Σ exp) over kLanes partial results: lane l takes elements
// l, l + kLanes, l + 2·kLanes, ..., the lanes are then added pairwise and the tail (n mod kLanes
// elements) last. A single running float sum is an in-order reduction that GCC must leave
// scalar; these vectorise. The order is fixed by n alone, so results do not depend on threads.
inline constexpr size_t kLanes = 16;

namespace detail {
inline float lanes_total(float* acc) {
  for (size_t w = kLanes / 2; w > 0; w /= 2)
    for (size_t l = 0; l < w; ++l) acc[l] += acc[l + w];
  return acc[0];
}
}  // namespace detail

// Σ x[j], j < n.
inline float row_sum(const float* x, size_t n) {
  const size_t body = n - n % kLanes;
  float acc[kLanes] = {};
  for (size_t j = 0; j < body; j += kLanes)
    for (size_t l = 0; l < kLanes; ++l) acc[l] += x[j + l];
  float s = detail::lanes_total(acc);
  for (size_t j = body; j < n; ++j) s += x[j];
  return s;
}

// Σ a[j]·b[j], j < n.
inline float row_dot(const float* a, const float* b, size_t n) {
  const size_t body = n - n % kLanes;
  float acc[kLanes] = {};
  for (size_t j = 0; j < body; j += kLanes)
    for (size_t l = 0; l < kLanes; ++l) acc[l] += a[j + l] * b[j + l];
  float s = detail::lanes_total(acc);
  for (size_t j = body; j < n; ++j) s += a[j] * b[j];
  return s;
}

// max x[j], j < n (n ≥ 1; exact whatever the order).
inline float row_max(const float* x, size_t n) {
  const size_t body = n - n % kLanes;
  float acc[kLanes];
  for (size_t l = 0; l < kLanes; ++l) acc[l] = x[0];
  for (size_t j = 0; j < body; j += kLanes)
    for (size_t l = 0; l < kLanes; ++l) acc[l] = x[j + l] > acc[l] ? x[j + l] : acc[l];
  float m = x[0];
  for (size_t l = 0; l < kLanes; ++l) m = acc[l] > m ? acc[l] : m;
  for (size_t j = body; j < n; ++j) m = x[j] > m ? x[j] : m;
  return m;
}

// out[j] = fast_exp(x[j] − shift) for j < n (out may be x); returns Σ out[j].
inline float row_exp_sum(const float* x, float shift, float* out, size_t n) {
  const size_t body = n - n % kLanes;
  float acc[kLanes] = {};
  for (size_t j = 0; j < body; j += kLanes)
    for (size_t l = 0; l < kLanes; ++l) {
      const float e = fast_exp(x[j + l] - shift);
      out[j + l] = e;
      acc[l] += e;
    }
  float s = detail::lanes_total(acc);
  for (size_t j = body; j < n; ++j) {
    out[j] = fast_exp(x[j] - shift);
    s += out[j];
  }
  return s;
}

// Σ fast_exp(x[j] − shift), j < n.
inline float row_exp_sum(const float* x, float shift, size_t n) {
  const size_t body = n - n % kLanes;
  float acc[kLanes] = {};
  for (size_t j = 0; j < body; j += kLanes)
    for (size_t l = 0; l < kLanes; ++l) acc[l] += fast_exp(x[j + l] - shift);
  float s = detail::lanes_total(acc);
  for (size_t j = body; j < n; ++j) s += fast_exp(x[j] - shift);
  return s;
}

}  // namespace dsgd
