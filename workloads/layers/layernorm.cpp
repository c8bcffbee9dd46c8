// See layernorm.hpp. The fast pass is two sweeps per row in float with the row statistics
// accumulated in float over d ≤ a few thousand (relative error ~1e-6 for O(1) inputs), in
// vec_math's fixed lane order so that the reductions vectorise;
// the naive reference recomputes everything in double.
#include "workloads/layers/layernorm.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "workloads/layers/layer_threads.hpp"
#include "workloads/layers/vec_math.hpp"

namespace dsgd {

namespace {

// Σ (x[k] − m)², k < d, in vec_math's lane order (so the loop vectorises).
float centered_square_sum(const float* x, float m, size_t d) {
  const size_t body = d - d % kLanes;
  float acc[kLanes] = {};
  for (size_t k = 0; k < body; k += kLanes)
    for (size_t l = 0; l < kLanes; ++l) {
      const float c = x[k + l] - m;
      acc[l] += c * c;
    }
  float s = detail::lanes_total(acc);
  for (size_t k = body; k < d; ++k) s += (x[k] - m) * (x[k] - m);
  return s;
}

// sum_g = Σ g[k], sum_gx = Σ g[k]·x̂[k] with g = dy·γ, x̂ = (x − m)·r, in the same lane order.
void grad_sums(const float* x, const float* dy, const float* gamma, float m, float r, size_t d, float& sum_g,
               float& sum_gx) {
  const size_t body = d - d % kLanes;
  float ag[kLanes] = {}, agx[kLanes] = {};
  for (size_t k = 0; k < body; k += kLanes)
    for (size_t l = 0; l < kLanes; ++l) {
      const float g = dy[k + l] * gamma[k + l];
      ag[l] += g;
      agx[l] += g * ((x[k + l] - m) * r);
    }
  sum_g = detail::lanes_total(ag);
  sum_gx = detail::lanes_total(agx);
  for (size_t k = body; k < d; ++k) {
    const float g = dy[k] * gamma[k];
    sum_g += g;
    sum_gx += g * ((x[k] - m) * r);
  }
}

}  // namespace

void layernorm_forward(const LayerNormShape& s, const float* x, const float* gamma, const float* beta, float* y,
                       float* mean, float* rstd) {
  const size_t d = s.d;
  const float inv_d = 1.0f / static_cast<float>(d);
  [[maybe_unused]] const int nt = layer_threads();
#ifdef _OPENMP
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1 && s.n * d >= kParallelMinStreamFloats)
#endif
  for (size_t i = 0; i < s.n; ++i) {
    const float* xr = x + i * d;
    float* yr = y + i * d;
    const float m = row_sum(xr, d) * inv_d;
    const float r = 1.0f / std::sqrt(centered_square_sum(xr, m, d) * inv_d + kLayerNormEps);
    for (size_t k = 0; k < d; ++k) yr[k] = (xr[k] - m) * r * gamma[k] + beta[k];
    mean[i] = m;
    rstd[i] = r;
  }
}

void layernorm_backward(const LayerNormShape& s, const float* x, const float* gamma, const float* mean,
                        const float* rstd, const float* dy, float* dx, float* dgamma, float* dbeta,
                        bool accumulate_dx) {
  const size_t d = s.d;
  const float inv_d = 1.0f / static_cast<float>(d);
  // Rows in parallel for dx; then dγ, dβ by column ranges, each summed over the rows in order
  // (the same order at any thread count).
  [[maybe_unused]] const int nt = layer_threads();
#ifdef _OPENMP
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1 && s.n * d >= kParallelMinStreamFloats)
#endif
  for (size_t i = 0; i < s.n; ++i) {
    const float* xr = x + i * d;
    const float* dyr = dy + i * d;
    float* dxr = dx + i * d;
    const float m = mean[i], r = rstd[i];
    // dx = r · (g − mean(g) − x̂ · mean(g · x̂)), g = dy · γ, x̂ = (x − m) · r.
    float sum_g = 0, sum_gx = 0;
    grad_sums(xr, dyr, gamma, m, r, d, sum_g, sum_gx);
    const float mg = sum_g * inv_d, mgx = sum_gx * inv_d;
    if (accumulate_dx) {
      for (size_t k = 0; k < d; ++k) dxr[k] += r * (dyr[k] * gamma[k] - mg - (xr[k] - m) * r * mgx);
    } else {
      for (size_t k = 0; k < d; ++k) dxr[k] = r * (dyr[k] * gamma[k] - mg - (xr[k] - m) * r * mgx);
    }
  }
  constexpr size_t kCols = 64;  // columns per work item
  const long col_blocks = static_cast<long>((d + kCols - 1) / kCols);
#ifdef _OPENMP
#pragma omp parallel for num_threads(nt) \
    schedule(static) if (nt > 1 && col_blocks > 1 && s.n * d >= kParallelMinStreamFloats)
#endif
  for (long cb = 0; cb < col_blocks; ++cb) {
    const size_t k0 = static_cast<size_t>(cb) * kCols, k1 = std::min(d, k0 + kCols);
    for (size_t k = k0; k < k1; ++k) dgamma[k] = dbeta[k] = 0.0f;
    for (size_t i = 0; i < s.n; ++i) {
      const float* xr = x + i * d;
      const float* dyr = dy + i * d;
      const float m = mean[i], r = rstd[i];
      for (size_t k = k0; k < k1; ++k) {
        dgamma[k] += dyr[k] * ((xr[k] - m) * r);
        dbeta[k] += dyr[k];
      }
    }
  }
}

void layernorm_forward_naive(const LayerNormShape& s, const float* x, const float* gamma, const float* beta, float* y,
                             float* mean, float* rstd) {
  for (size_t i = 0; i < s.n; ++i) {
    double m = 0, v = 0;
    for (size_t k = 0; k < s.d; ++k) m += x[i * s.d + k];
    m /= double(s.d);
    for (size_t k = 0; k < s.d; ++k) v += (x[i * s.d + k] - m) * (x[i * s.d + k] - m);
    v /= double(s.d);
    const double r = 1.0 / std::sqrt(v + double(kLayerNormEps));
    for (size_t k = 0; k < s.d; ++k) y[i * s.d + k] = static_cast<float>((x[i * s.d + k] - m) * r * gamma[k] + beta[k]);
    mean[i] = static_cast<float>(m);
    rstd[i] = static_cast<float>(r);
  }
}

void layernorm_backward_naive(const LayerNormShape& s, const float* x, const float* gamma, const float* dy, float* dx,
                              float* dgamma, float* dbeta, bool accumulate_dx) {
  const size_t d = s.d;
  std::vector<double> dg(d, 0.0), db(d, 0.0), xh(d), g(d);
  for (size_t i = 0; i < s.n; ++i) {
    double m = 0, v = 0;
    for (size_t k = 0; k < d; ++k) m += x[i * d + k];
    m /= double(d);
    for (size_t k = 0; k < d; ++k) v += (x[i * d + k] - m) * (x[i * d + k] - m);
    v /= double(d);
    const double r = 1.0 / std::sqrt(v + double(kLayerNormEps));
    double mg = 0, mgx = 0;
    for (size_t k = 0; k < d; ++k) {
      xh[k] = (x[i * d + k] - m) * r;
      g[k] = double(dy[i * d + k]) * gamma[k];
      mg += g[k];
      mgx += g[k] * xh[k];
      dg[k] += double(dy[i * d + k]) * xh[k];
      db[k] += dy[i * d + k];
    }
    mg /= double(d);
    mgx /= double(d);
    for (size_t k = 0; k < d; ++k) {
      const double v_dx = r * (g[k] - mg - xh[k] * mgx);
      dx[i * d + k] = static_cast<float>(accumulate_dx ? dx[i * d + k] + v_dx : v_dx);
    }
  }
  for (size_t k = 0; k < d; ++k) {
    dgamma[k] = static_cast<float>(dg[k]);
    dbeta[k] = static_cast<float>(db[k]);
  }
}

}  // namespace dsgd
