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

void global_avg_pool_blocked_forward(const PoolShape& s, const float* x, float* y) {
  const float inv = 1.0f / static_cast<float>(s.hw);
  for (size_t n = 0; n < s.n; ++n)
    for (size_t b = 0; b < s.c / 8; ++b) {
      const float* xb = x + (n * (s.c / 8) + b) * s.hw * 8;
      float acc[8] = {};
      for (size_t i = 0; i < s.hw; ++i)
        for (size_t l = 0; l < 8; ++l) acc[l] += xb[i * 8 + l];
      for (size_t l = 0; l < 8; ++l) y[n * s.c + b * 8 + l] = acc[l] * inv;
    }
}

void global_avg_pool_blocked_backward(const PoolShape& s, const float* dy, float* dx) {
  const float inv = 1.0f / static_cast<float>(s.hw);
  for (size_t n = 0; n < s.n; ++n)
    for (size_t b = 0; b < s.c / 8; ++b) {
      float g[8];
      for (size_t l = 0; l < 8; ++l) g[l] = dy[n * s.c + b * 8 + l] * inv;
      float* db = dx + (n * (s.c / 8) + b) * s.hw * 8;
      for (size_t i = 0; i < s.hw; ++i)
        for (size_t l = 0; l < 8; ++l) db[i * 8 + l] = g[l];
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
