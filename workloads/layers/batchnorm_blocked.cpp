// See batchnorm_blocked.hpp. Written on GCC vector extensions (8 floats: one AVX register),
// with the affine map as an explicit FMA (intrinsic with FMA hardware, else std::fma per
// lane: the same correctly rounded value) so that the forward's ReLU and the backward's
// recomputed mask agree bit for bit.
#include "workloads/layers/batchnorm_blocked.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#ifdef __FMA__
#include <immintrin.h>
#endif

#include "workloads/layers/blocked_layout.hpp"
#include "workloads/layers/layer_threads.hpp"

namespace dsgd {

namespace {

// GCC warns (-Wpsabi) that returning v8 without AVX changes the ABI, in the portable build.
// These helpers have internal linkage and are inlined: no call crosses a translation unit.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

typedef float v8 __attribute__((vector_size(32)));
constexpr size_t kFlush = 1024;  // pixels per float partial sum before it goes to double

inline v8 load(const float* p) {
  v8 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void store(float* p, v8 v) {
  std::memcpy(p, &v, sizeof v);
}
// Per-channel scratch of the calling thread (grown once, so steps do not allocate).
float* channel_scratch(size_t floats) {
  thread_local std::vector<float> v;
  if (v.size() < floats) v.resize(floats);
  return v.data();
}

inline v8 splat(float a) {
  return v8{a, a, a, a, a, a, a, a};
}

// x·scale + shift, correctly rounded (one FMA).
inline v8 affine_value(v8 x, v8 scale, v8 shift) {
#ifdef __FMA__
  return _mm256_fmadd_ps(x, scale, shift);
#else
  v8 r;
  for (int j = 0; j < 8; ++j) r[j] = std::fma(x[j], scale[j], shift[j]);
  return r;
#endif
}
inline v8 relu(v8 v) {
  return v > 0.0f ? v : splat(0.0f);
}

// f(block b) over the channel blocks, split over threads.
template <class F>
void for_each_block(const BlockedBatchNormShape& s, F f) {
  const long blocks = static_cast<long>(s.c / kChannelBlock);
  [[maybe_unused]] const int t = layer_threads();
#ifdef _OPENMP
#pragma omp parallel for num_threads(t) schedule(static) if (t > 1 && s.c * s.n * s.hw >= kParallelMinFloats)
#endif
  for (long b = 0; b < blocks; ++b) f(static_cast<size_t>(b));
}

// The vectors of block b of image i.
inline const float* block_ptr(const BlockedBatchNormShape& s, const float* x, size_t i, size_t b) {
  return x + (i * (s.c / kChannelBlock) + b) * s.hw * kChannelBlock;
}

// Per lane of block b: Σ f1(p) and Σ f2(p) over every pixel of every image, two float
// chains (even and odd pixels) flushed to double every kFlush pixels.
template <class F>
void block_sums(const BlockedBatchNormShape& s, size_t b, F f, double s1[8], double s2[8]) {
  for (int j = 0; j < 8; ++j) s1[j] = s2[j] = 0;
  for (size_t i = 0; i < s.n; ++i)
    for (size_t p0 = 0; p0 < s.hw; p0 += kFlush) {
      const size_t p1 = std::min(s.hw, p0 + kFlush);
      v8 a0 = splat(0), a1 = splat(0), q0 = splat(0), q1 = splat(0);
      size_t p = p0;
      for (; p + 2 <= p1; p += 2) {
        v8 u, w;
        f(i, b, p, u, w);
        a0 += u;
        q0 += w;
        f(i, b, p + 1, u, w);
        a1 += u;
        q1 += w;
      }
      if (p < p1) {
        v8 u, w;
        f(i, b, p, u, w);
        a0 += u;
        q0 += w;
      }
      for (int j = 0; j < 8; ++j) {
        s1[j] += double(a0[j]) + double(a1[j]);
        s2[j] += double(q0[j]) + double(q1[j]);
      }
    }
}

}  // namespace

void batchnorm_blocked_forward_train(const BlockedBatchNormShape& s, const BatchNormOptions& o, const float* x,
                                     const float* gamma, const float* beta, float* y, float* mean, float* invstd,
                                     float* running_mean, float* running_var, bool relu_on, float* affine_out) {
  const size_t m = s.n * s.hw;
  float* scale_shift = affine_out ? affine_out : channel_scratch(2 * s.c);
  for_each_block(s, [&](size_t b) {
    // Shifted by the block's first pixel so that Σ(x−k)² − M·(mean of x−k)² does not cancel.
    const v8 k = m > 0 ? load(block_ptr(s, x, 0, b)) : splat(0);
    double s1[8], s2[8];
    block_sums(
        s, b,
        [&](size_t i, size_t bb, size_t p, v8& u, v8& w) {
          const v8 d = load(block_ptr(s, x, i, bb) + p * 8) - k;
          u = d;
          w = d * d;
        },
        s1, s2);
    for (size_t j = 0; j < 8; ++j) {
      const size_t c = b * 8 + j;
      const double md = double(m);
      const double dmu = s1[j] / md;
      const double mu = double(k[j]) + dmu;
      const double sq = std::max(0.0, s2[j] - md * dmu * dmu);  // Σ (x − μ)²
      const double var = sq / md;
      const double is = 1.0 / std::sqrt(var + o.eps);
      mean[c] = static_cast<float>(mu);
      invstd[c] = static_cast<float>(is);
      scale_shift[c] = static_cast<float>(gamma[c] * is);
      scale_shift[s.c + c] = static_cast<float>(beta[c] - gamma[c] * is * mu);
      if (running_mean && running_var) {
        const double unbiased = m > 1 ? sq / double(m - 1) : var;
        running_mean[c] = static_cast<float>((1.0 - o.momentum) * running_mean[c] + o.momentum * mu);
        running_var[c] = static_cast<float>((1.0 - o.momentum) * running_var[c] + o.momentum * unbiased);
      }
    }
  });
  if (!y) return;
  for_each_image_block(s.n, s.c / kChannelBlock, s.c * s.n * s.hw, [&](size_t i, size_t b) {
    const v8 sc = load(scale_shift + b * 8);
    const v8 sh = load(scale_shift + s.c + b * 8);
    const float* xb = block_ptr(s, x, i, b);
    float* yb = y + (xb - x);
    if (relu_on) {
      for (size_t p = 0; p < s.hw; ++p) store(yb + p * 8, relu(affine_value(load(xb + p * 8), sc, sh)));
    } else {
      for (size_t p = 0; p < s.hw; ++p) store(yb + p * 8, affine_value(load(xb + p * 8), sc, sh));
    }
  });
}

void batchnorm_blocked_affine_add_relu(const BlockedBatchNormShape& s, const float* x, const float* affine,
                                       const float* r, float* y) {
  for_each_image_block(s.n, s.c / kChannelBlock, s.c * s.n * s.hw, [&](size_t i, size_t b) {
    const v8 sc = load(affine + b * 8);
    const v8 sh = load(affine + s.c + b * 8);
    const size_t off = static_cast<size_t>(block_ptr(s, x, i, b) - x);
    for (size_t p = 0; p < s.hw; ++p) {
      const size_t k = off + p * 8;
      store(y + k, relu(affine_value(load(x + k), sc, sh) + load(r + k)));
    }
  });
}

void batchnorm_eval_affine(size_t c, const BatchNormOptions& o, const float* gamma, const float* beta,
                           const float* running_mean, const float* running_var, float* affine_out) {
  for (size_t k = 0; k < c; ++k) {
    const double is = 1.0 / std::sqrt(double(running_var[k]) + o.eps);
    affine_out[k] = static_cast<float>(gamma[k] * is);
    affine_out[c + k] = static_cast<float>(beta[k] - gamma[k] * is * running_mean[k]);
  }
}

void batchnorm_blocked_forward_eval(const BlockedBatchNormShape& s, const BatchNormOptions& o, const float* x,
                                    const float* gamma, const float* beta, const float* running_mean,
                                    const float* running_var, float* y, bool relu_on) {
  float* scale_shift = channel_scratch(2 * s.c);
  batchnorm_eval_affine(s.c, o, gamma, beta, running_mean, running_var, scale_shift);
  for_each_image_block(s.n, s.c / kChannelBlock, s.c * s.n * s.hw, [&](size_t i, size_t b) {
    const v8 sc = load(scale_shift + b * 8);
    const v8 sh = load(scale_shift + s.c + b * 8);
    const float* xb = block_ptr(s, x, i, b);
    float* yb = y + (xb - x);
    for (size_t p = 0; p < s.hw; ++p) {
      const v8 v = affine_value(load(xb + p * 8), sc, sh);
      store(yb + p * 8, relu_on ? relu(v) : v);
    }
  });
}

void batchnorm_blocked_backward(const BlockedBatchNormShape& s, const float* x, const float* gamma, const float* mean,
                                const float* invstd, const float* dy, float* dx, float* dgamma, float* dbeta,
                                const float* relu_affine, const float* relu_y) {
  const size_t m = s.n * s.hw;
  const bool masked = relu_affine != nullptr;
  // g = dy, or dy where the ReLU passed (its input recomputed from x, or its output read).
  auto g_at = [&](const float* xb, const float* dyb, size_t p, v8 sc, v8 sh) {
    const v8 d = load(dyb + p * 8);
    if (relu_y) return load(relu_y + (xb - x) + p * 8) > 0.0f ? d : splat(0.0f);
    if (!masked) return d;
    return affine_value(load(xb + p * 8), sc, sh) > 0.0f ? d : splat(0.0f);
  };
  float* k = channel_scratch(3 * s.c);  // per channel k1, k2, k3
  for_each_block(s, [&](size_t b) {
    const v8 sc = masked ? load(relu_affine + b * 8) : splat(0);
    const v8 sh = masked ? load(relu_affine + s.c + b * 8) : splat(0);
    const v8 mu = load(mean + b * 8);
    double sg[8], sgx[8];
    block_sums(
        s, b,
        [&](size_t i, size_t bb, size_t p, v8& u, v8& w) {
          const float* xb = block_ptr(s, x, i, bb);
          const v8 g = g_at(xb, block_ptr(s, dy, i, bb), p, sc, sh);
          u = g;
          w = g * (load(xb + p * 8) - mu);
        },
        sg, sgx);
    for (size_t j = 0; j < 8; ++j) {
      const size_t c = b * 8 + j;
      const double is = invstd[c];
      const double dg = sgx[j] * is;  // Σ g·x̂
      dgamma[c] = static_cast<float>(dg);
      dbeta[c] = static_cast<float>(sg[j]);
      // dx = γ·is/M · (M g − Σg − x̂ Σg·x̂) = k1 g − k2 (x − μ) − k3
      const double md = double(m);
      k[c] = static_cast<float>(gamma[c] * is);
      k[s.c + c] = static_cast<float>(gamma[c] * is * is * dg / md);
      k[2 * s.c + c] = static_cast<float>(gamma[c] * is * sg[j] / md);
    }
  });
  for_each_image_block(s.n, s.c / kChannelBlock, s.c * s.n * s.hw, [&](size_t i, size_t b) {
    const v8 sc = masked ? load(relu_affine + b * 8) : splat(0);
    const v8 sh = masked ? load(relu_affine + s.c + b * 8) : splat(0);
    const v8 mu = load(mean + b * 8);
    const v8 k1 = load(k + b * 8), k2 = load(k + s.c + b * 8), k3 = load(k + 2 * s.c + b * 8);
    const float* xb = block_ptr(s, x, i, b);
    const float* dyb = block_ptr(s, dy, i, b);
    float* dxb = dx + (xb - x);
    for (size_t p = 0; p < s.hw; ++p) {
      const v8 g = g_at(xb, dyb, p, sc, sh);
      store(dxb + p * 8, k1 * g - k2 * (load(xb + p * 8) - mu) - k3);
    }
  });
}

}  // namespace dsgd
