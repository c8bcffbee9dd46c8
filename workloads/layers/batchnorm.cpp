// See batchnorm.hpp. Statistics in double per channel (two passes: mean, then centred
// squares), the elementwise passes in float.
#include "workloads/layers/batchnorm.hpp"

#include <cmath>
#include <vector>

namespace dsgd {

void batchnorm_forward_train(const BatchNormShape& s, const BatchNormOptions& o, const float* x, const float* gamma,
                             const float* beta, float* y, float* mean, float* invstd, float* running_mean,
                             float* running_var) {
  const size_t m = s.m;
  for (size_t c = 0; c < s.c; ++c) {
    const float* xc = x + c * m;
    float* yc = y + c * m;
    float sum = 0.0f, sum_b = 0.0f;  // two float accumulators, summed in double below
    double total = 0;
    for (size_t i = 0; i < m; i += 2) {
      sum += xc[i];
      if (i + 1 < m) sum_b += xc[i + 1];
      if ((i & 1023) == 1022) {
        total += double(sum) + sum_b;
        sum = sum_b = 0.0f;
      }
    }
    total += double(sum) + sum_b;
    const double mu = total / double(m);
    const float muf = static_cast<float>(mu);
    double sq = 0;
    float part = 0.0f;
    for (size_t i = 0; i < m; ++i) {
      const float d = xc[i] - muf;
      part += d * d;
      if ((i & 1023) == 1023) {
        sq += part;
        part = 0.0f;
      }
    }
    sq += part;
    const double var = sq / double(m);
    const double is = 1.0 / std::sqrt(var + o.eps);
    mean[c] = muf;
    invstd[c] = static_cast<float>(is);
    const float scale = static_cast<float>(gamma[c] * is);
    const float shift = static_cast<float>(beta[c] - gamma[c] * is * mu);
    for (size_t i = 0; i < m; ++i) yc[i] = xc[i] * scale + shift;
    if (running_mean && running_var) {
      const double unbiased = m > 1 ? sq / double(m - 1) : var;
      running_mean[c] = static_cast<float>((1.0 - o.momentum) * running_mean[c] + o.momentum * mu);
      running_var[c] = static_cast<float>((1.0 - o.momentum) * running_var[c] + o.momentum * unbiased);
    }
  }
}

void batchnorm_forward_eval(const BatchNormShape& s, const BatchNormOptions& o, const float* x, const float* gamma,
                            const float* beta, const float* running_mean, const float* running_var, float* y) {
  for (size_t c = 0; c < s.c; ++c) {
    const double is = 1.0 / std::sqrt(double(running_var[c]) + o.eps);
    const float scale = static_cast<float>(gamma[c] * is);
    const float shift = static_cast<float>(beta[c] - gamma[c] * is * running_mean[c]);
    const float* xc = x + c * s.m;
    float* yc = y + c * s.m;
    for (size_t i = 0; i < s.m; ++i) yc[i] = xc[i] * scale + shift;
  }
}

void batchnorm_backward(const BatchNormShape& s, const float* x, const float* gamma, const float* mean,
                        const float* invstd, const float* dy, float* dx, float* dgamma, float* dbeta) {
  const size_t m = s.m;
  for (size_t c = 0; c < s.c; ++c) {
    const float* xc = x + c * m;
    const float* dyc = dy + c * m;
    float* dxc = dx + c * m;
    const float mu = mean[c], is = invstd[c];
    double sum_dy = 0, sum_dyx = 0;
    float a = 0.0f, b = 0.0f;
    for (size_t i = 0; i < m; ++i) {
      a += dyc[i];
      b += dyc[i] * (xc[i] - mu);
      if ((i & 1023) == 1023) {
        sum_dy += a;
        sum_dyx += b;
        a = b = 0.0f;
      }
    }
    sum_dy += a;
    sum_dyx += b;
    const double dg = sum_dyx * is;  // Σ dy·x̂
    dgamma[c] = static_cast<float>(dg);
    dbeta[c] = static_cast<float>(sum_dy);
    // dx = γ·is/M · (M dy − Σdy − x̂ Σdy·x̂) = k1 dy − k2 (x − μ) − k3
    const double md = double(m);
    const float k1 = static_cast<float>(gamma[c] * is);
    const float k2 = static_cast<float>(gamma[c] * is * is * dg / md);
    const float k3 = static_cast<float>(gamma[c] * is * sum_dy / md);
    for (size_t i = 0; i < m; ++i) dxc[i] = k1 * dyc[i] - k2 * (xc[i] - mu) - k3;
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
