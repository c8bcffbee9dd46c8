// See pooling.hpp.
#include "workloads/layers/pooling.hpp"

namespace dsgd {

void global_avg_pool_forward(const PoolShape& s, const float* x, float* y) {
  const float inv = 1.0f / static_cast<float>(s.hw);
  for (size_t c = 0; c < s.c; ++c)
    for (size_t n = 0; n < s.n; ++n) {
      const float* xr = x + (c * s.n + n) * s.hw;
      float acc = 0.0f;
      for (size_t i = 0; i < s.hw; ++i) acc += xr[i];
      y[n * s.c + c] = acc * inv;
    }
}

void global_avg_pool_backward(const PoolShape& s, const float* dy, float* dx) {
  const float inv = 1.0f / static_cast<float>(s.hw);
  for (size_t c = 0; c < s.c; ++c)
    for (size_t n = 0; n < s.n; ++n) {
      const float g = dy[n * s.c + c] * inv;
      float* dr = dx + (c * s.n + n) * s.hw;
      for (size_t i = 0; i < s.hw; ++i) dr[i] = g;
    }
}

void global_avg_pool_forward_naive(const PoolShape& s, const float* x, float* y) {
  for (size_t n = 0; n < s.n; ++n)
    for (size_t c = 0; c < s.c; ++c) {
      double acc = 0;
      for (size_t i = 0; i < s.hw; ++i) acc += x[(c * s.n + n) * s.hw + i];
      y[n * s.c + c] = static_cast<float>(acc / double(s.hw));
    }
}

}  // namespace dsgd
