// See gelu.hpp. The fast kernels use fast_tanh (vec_math.hpp) so the loops vectorise.
#include "workloads/layers/gelu.hpp"

#include <cmath>

#include "workloads/layers/layer_threads.hpp"
#include "workloads/layers/vec_math.hpp"

namespace dsgd {

namespace {
constexpr float kC = 0.7978845608028654f;  // √(2/π)
constexpr float kA = 0.044715f;
constexpr double kCd = 0.7978845608028654;
constexpr double kAd = 0.044715;
}  // namespace

void gelu_forward(const float* x, float* y, size_t n) {
  [[maybe_unused]] const int nt = layer_threads();
#ifdef _OPENMP
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1 && n >= kParallelMinFloats)
#endif
  for (size_t i = 0; i < n; ++i) {
    const float v = x[i];
    const float t = fast_tanh(kC * (v + kA * v * v * v));
    y[i] = 0.5f * v * (1.0f + t);
  }
}

void gelu_backward(const float* x, const float* dy, float* dx, size_t n) {
  [[maybe_unused]] const int nt = layer_threads();
#ifdef _OPENMP
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1 && n >= kParallelMinFloats)
#endif
  for (size_t i = 0; i < n; ++i) {
    const float v = x[i];
    const float t = fast_tanh(kC * (v + kA * v * v * v));
    const float dt = kC * (1.0f + 3.0f * kA * v * v) * (1.0f - t * t);
    dx[i] = dy[i] * (0.5f * (1.0f + t) + 0.5f * v * dt);
  }
}

void gelu_forward_naive(const float* x, float* y, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const double v = x[i];
    y[i] = static_cast<float>(0.5 * v * (1.0 + std::tanh(kCd * (v + kAd * v * v * v))));
  }
}

void gelu_backward_naive(const float* x, const float* dy, float* dx, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const double v = x[i];
    const double t = std::tanh(kCd * (v + kAd * v * v * v));
    const double dt = kCd * (1.0 + 3.0 * kAd * v * v) * (1.0 - t * t);
    dx[i] = static_cast<float>(double(dy[i]) * (0.5 * (1.0 + t) + 0.5 * v * dt));
  }
}

}  // namespace dsgd
