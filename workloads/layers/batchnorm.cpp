// See batchnorm.hpp. Per channel, one pass for both moments (8 float lanes, shifted by the
// channel's first value, partial sums flushed to double every 1024 values) and one pass for
// the affine map (+ ReLU); the backward: one pass for the ReLU mask (g into dx), one for Σg,
// Σg·(x−μ), one for dx.
// Channels are split over layer_threads() threads.
#include "workloads/layers/batchnorm.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "workloads/layers/layer_threads.hpp"

namespace dsgd {

namespace {

constexpr size_t kLanes = 8;     // independent float accumulators (one AVX register)
constexpr size_t kFlush = 1024;  // values per float partial sum before it goes to double

// Σ (x − k) and Σ (x − k)² over m values, float lanes flushed to double every kFlush.
void shifted_sums(const float* x, size_t m, float k, double& s1, double& s2) {
  s1 = s2 = 0;
  for (size_t i0 = 0; i0 < m; i0 += kFlush) {
    const size_t i1 = std::min(m, i0 + kFlush);
    float a[kLanes] = {}, b[kLanes] = {};
    size_t i = i0;
    for (; i + kLanes <= i1; i += kLanes)
      for (size_t j = 0; j < kLanes; ++j) {
        const float d = x[i + j] - k;
        a[j] += d;
        b[j] += d * d;
      }
    for (; i < i1; ++i) {
      const float d = x[i] - k;
      a[0] += d;
      b[0] += d * d;
    }
    for (size_t j = 0; j < kLanes; ++j) {
      s1 += a[j];
      s2 += b[j];
    }
  }
}

// The pre-ReLU value of the affine map, for the forward and for the backward's recomputed ReLU
// mask. An explicit fused multiply-add: correctly rounded by definition, so both see bitwise the
// same value wherever they are compiled (a plain x·scale + shift may be contracted to an FMA in
// one loop and not in another, and flip the sign of values near 0). One instruction with FMA
// hardware (-march=native on x86-64 since Haswell/Zen).
inline float affine_value(float x, float scale, float shift) {
  return std::fma(x, scale, shift);
}

// g = keep(i) ? dy : 0, written to g (may alias dy). A loop of its own: the loop vectoriser
// turns the select into a blend, while the 8-lane sums below stay scalar when the select is
// inside them (GCC 12 does not vectorise a select within an unrolled lane block).
template <class Keep>
void mask_into(const float* dy, float* g, size_t m, Keep keep) {
  for (size_t i = 0; i < m; ++i) {
    const float d = dy[i];
    g[i] = keep(i) ? d : 0.0f;
  }
}

// Σ g and Σ g·(x − μ), float lanes flushed to double every kFlush (as shifted_sums).
void grad_sums(const float* g, const float* x, size_t m, float mu, double& sg, double& sgx) {
  sg = sgx = 0;
  for (size_t i0 = 0; i0 < m; i0 += kFlush) {
    const size_t i1 = std::min(m, i0 + kFlush);
    float a[kLanes] = {}, b[kLanes] = {};
    size_t i = i0;
    for (; i + kLanes <= i1; i += kLanes)
      for (size_t j = 0; j < kLanes; ++j) {
        a[j] += g[i + j];
        b[j] += g[i + j] * (x[i + j] - mu);
      }
    for (; i < i1; ++i) {
      a[0] += g[i];
      b[0] += g[i] * (x[i] - mu);
    }
    for (size_t j = 0; j < kLanes; ++j) {
      sg += a[j];
      sgx += b[j];
    }
  }
}

// dx = k1·g − k2·(x − μ) − k3 (g may alias dx).
void grad_dx(const float* g, const float* x, float* dx, size_t m, float mu, float k1, float k2, float k3) {
  for (size_t i = 0; i < m; ++i) dx[i] = k1 * g[i] - k2 * (x[i] - mu) - k3;
}

// y = x·scale + shift, then max(·, 0) when relu.
void affine(const float* x, float* y, size_t m, float scale, float shift, bool relu) {
  if (relu) {
    for (size_t i = 0; i < m; ++i) {
      const float v = affine_value(x[i], scale, shift);
      y[i] = v > 0.0f ? v : 0.0f;
    }
  } else {
    for (size_t i = 0; i < m; ++i) y[i] = affine_value(x[i], scale, shift);
  }
}

}  // namespace

void batchnorm_forward_train(const BatchNormShape& s, const BatchNormOptions& o, const float* x, const float* gamma,
                             const float* beta, float* y, float* mean, float* invstd, float* running_mean,
                             float* running_var, bool relu, float* affine_out) {
  const size_t m = s.m;
  [[maybe_unused]] const int t = layer_threads();
#ifdef _OPENMP
#pragma omp parallel for num_threads(t) schedule(static) if (t > 1 && s.c * m >= kParallelMinFloats)
#endif
  for (size_t c = 0; c < s.c; ++c) {
    const float* xc = x + c * m;
    // One pass for both moments, shifted by the channel's first value so that Σ(x−k)² − M·(mean
    // of x−k)² does not cancel catastrophically (the shift is within the data's range).
    const float k = m > 0 ? xc[0] : 0.0f;
    double s1 = 0, s2 = 0;
    shifted_sums(xc, m, k, s1, s2);
    const double md = double(m);
    const double dmu = s1 / md;
    const double mu = double(k) + dmu;
    const double sq = std::max(0.0, s2 - md * dmu * dmu);  // Σ (x − μ)²
    const double var = sq / md;
    const double is = 1.0 / std::sqrt(var + o.eps);
    mean[c] = static_cast<float>(mu);
    invstd[c] = static_cast<float>(is);
    const float scale = static_cast<float>(gamma[c] * is), shift = static_cast<float>(beta[c] - gamma[c] * is * mu);
    affine(xc, y + c * m, m, scale, shift, relu);
    if (affine_out) {
      affine_out[c] = scale;
      affine_out[s.c + c] = shift;
    }
    if (running_mean && running_var) {
      const double unbiased = m > 1 ? sq / double(m - 1) : var;
      running_mean[c] = static_cast<float>((1.0 - o.momentum) * running_mean[c] + o.momentum * mu);
      running_var[c] = static_cast<float>((1.0 - o.momentum) * running_var[c] + o.momentum * unbiased);
    }
  }
}

void batchnorm_forward_eval(const BatchNormShape& s, const BatchNormOptions& o, const float* x, const float* gamma,
                            const float* beta, const float* running_mean, const float* running_var, float* y,
                            bool relu) {
  [[maybe_unused]] const int t = layer_threads();
#ifdef _OPENMP
#pragma omp parallel for num_threads(t) schedule(static) if (t > 1 && s.c * s.m >= kParallelMinFloats)
#endif
  for (size_t c = 0; c < s.c; ++c) {
    const double is = 1.0 / std::sqrt(double(running_var[c]) + o.eps);
    affine(x + c * s.m, y + c * s.m, s.m, static_cast<float>(gamma[c] * is),
           static_cast<float>(beta[c] - gamma[c] * is * running_mean[c]), relu);
  }
}

void batchnorm_backward(const BatchNormShape& s, const float* x, const float* gamma, const float* mean,
                        const float* invstd, const float* dy, float* dx, float* dgamma, float* dbeta,
                        const float* relu_y, const float* relu_affine) {
  const size_t m = s.m;
  [[maybe_unused]] const int t = layer_threads();
#ifdef _OPENMP
#pragma omp parallel for num_threads(t) schedule(static) if (t > 1 && s.c * m >= kParallelMinFloats)
#endif
  for (size_t c = 0; c < s.c; ++c) {
    const float* xc = x + c * m;
    const float* dyc = dy + c * m;
    const float* mc = relu_y ? relu_y + c * m : nullptr;
    float* dxc = dx + c * m;
    const float mu = mean[c], is = invstd[c];
    double sum_dy = 0, sum_dyx = 0;
    const float sc = relu_affine ? relu_affine[c] : 0.0f, sh = relu_affine ? relu_affine[s.c + c] : 0.0f;
    // g: dy through the ReLU mask, kept in dx (dx may alias dy; dy is not read after this).
    const float* g = dyc;
    if (mc) {
      mask_into(dyc, dxc, m, [mc](size_t i) { return mc[i] > 0.0f; });
      g = dxc;
    } else if (relu_affine) {
      mask_into(dyc, dxc, m, [xc, sc, sh](size_t i) { return affine_value(xc[i], sc, sh) > 0.0f; });
      g = dxc;
    }
    grad_sums(g, xc, m, mu, sum_dy, sum_dyx);
    const double dg = sum_dyx * is;  // Σ g·x̂
    dgamma[c] = static_cast<float>(dg);
    dbeta[c] = static_cast<float>(sum_dy);
    // dx = γ·is/M · (M g − Σg − x̂ Σg·x̂) = k1 g − k2 (x − μ) − k3
    const double md = double(m);
    const float k1 = static_cast<float>(gamma[c] * is);
    const float k2 = static_cast<float>(gamma[c] * is * is * dg / md);
    const float k3 = static_cast<float>(gamma[c] * is * sum_dy / md);
    grad_dx(g, xc, dxc, m, mu, k1, k2, k3);
  }
}

void batchnorm_forward_train_naive(const BatchNormShape& s, const BatchNormOptions& o, const float* x,
                                   const float* gamma, const float* beta, float* y, float* mean, float* invstd,
                                   float* running_mean, float* running_var) {
  for (size_t c = 0; c < s.c; ++c) {
    const float* xc = x + c * s.m;
    double mu = 0;
    for (size_t i = 0; i < s.m; ++i) mu += xc[i];
    mu /= double(s.m);
    double var = 0;
    for (size_t i = 0; i < s.m; ++i) var += (xc[i] - mu) * (xc[i] - mu);
    const double unbiased = s.m > 1 ? var / double(s.m - 1) : var / double(s.m);
    var /= double(s.m);
    const double is = 1.0 / std::sqrt(var + o.eps);
    for (size_t i = 0; i < s.m; ++i) y[c * s.m + i] = static_cast<float>(gamma[c] * (xc[i] - mu) * is + beta[c]);
    mean[c] = static_cast<float>(mu);
    invstd[c] = static_cast<float>(is);
    if (running_mean && running_var) {
      running_mean[c] = static_cast<float>((1.0 - o.momentum) * running_mean[c] + o.momentum * mu);
      running_var[c] = static_cast<float>((1.0 - o.momentum) * running_var[c] + o.momentum * unbiased);
    }
  }
}

// Straight from the chain rule through μ and σ² (not the simplified form used above).
void batchnorm_backward_naive(const BatchNormShape& s, const float* x, const float* gamma, const float* dy, float* dx,
                              float* dgamma, float* dbeta, float eps) {
  const double m = double(s.m);
  for (size_t c = 0; c < s.c; ++c) {
    const float* xc = x + c * s.m;
    const float* dyc = dy + c * s.m;
    double mu = 0;
    for (size_t i = 0; i < s.m; ++i) mu += xc[i];
    mu /= m;
    double var = 0;
    for (size_t i = 0; i < s.m; ++i) var += (xc[i] - mu) * (xc[i] - mu);
    var /= m;
    const double is = 1.0 / std::sqrt(var + eps);
    double dg = 0, db = 0, dvar = 0, dmu = 0;
    for (size_t i = 0; i < s.m; ++i) {
      dg += dyc[i] * (xc[i] - mu) * is;
      db += dyc[i];
      const double dxhat = dyc[i] * gamma[c];
      dvar += dxhat * (xc[i] - mu) * -0.5 * is * is * is;
      dmu += -dxhat * is;
    }
    // dμ also gets dvar · Σ −2(x−μ)/M, which is 0.
    for (size_t i = 0; i < s.m; ++i) {
      const double dxhat = dyc[i] * gamma[c];
      dx[c * s.m + i] = static_cast<float>(dxhat * is + dvar * 2.0 * (xc[i] - mu) / m + dmu / m);
    }
    dgamma[c] = static_cast<float>(dg);
    dbeta[c] = static_cast<float>(db);
  }
}

}  // namespace dsgd
