// Vectorisable float exp and tanh for the transformer's elementwise layers (GELU, the
// attention softmax). Cephes-style: exp(x) = 2^n · p(r) with n = round(x / ln 2), r = x − n ln 2
// (Cody–Waite split), p a degree-7 polynomial; relative error ≤ 2e-7 on [−87, 88] (inputs
// are clamped there, so exp never returns inf or a denormal). Written as plain float
// arithmetic (magic-number rounding, std::bit_cast for 2^n) so that GCC vectorises loops
// that call it; glibc's expf/tanhf are scalar calls and were the step's largest
// non-GEMM cost.
#pragma once

#include <bit>
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

}  // namespace dsgd
