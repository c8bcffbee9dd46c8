// See softmax_cross_entropy.hpp. The exps are fast_exp (vec_math.hpp, ≤ 2e-7 relative error)
// and the row reductions run in vec_math's fixed lane order, so the loops vectorise.
#include "workloads/layers/softmax_cross_entropy.hpp"

#include <cmath>

#include "workloads/layers/layer_threads.hpp"
#include "workloads/layers/vec_math.hpp"

namespace dsgd {

double softmax_cross_entropy_forward(const float* logits, const int32_t* targets, size_t n, size_t c, double* correct) {
  double loss = 0;
  double hits = 0;
  for (size_t i = 0; i < n; ++i) {
    const float* row = logits + i * c;
    const float mx = row_max(row, c);
    size_t arg = 0;  // the first arg-max
    while (row[arg] != mx) ++arg;
    const float sum = row_exp_sum(row, mx, c);
    loss += std::log(static_cast<double>(sum)) + mx - row[targets[i]];
    hits += arg == static_cast<size_t>(targets[i]) ? 1.0 : 0.0;
  }
  if (correct) *correct = hits;
  return n ? loss / static_cast<double>(n) : 0.0;
}

void softmax_cross_entropy_backward(const float* logits, const int32_t* targets, size_t n, size_t c, float scale,
                                    float* dlogits) {
  [[maybe_unused]] const int nt = layer_threads();
#ifdef _OPENMP
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1 && n * c >= kParallelMinStreamFloats)
#endif
  for (size_t i = 0; i < n; ++i) {
    const float* row = logits + i * c;
    float* out = dlogits + i * c;
    const float inv = scale / row_exp_sum(row, row_max(row, c), out, c);
    for (size_t k = 0; k < c; ++k) out[k] *= inv;
    out[targets[i]] -= scale;
  }
}

double softmax_cross_entropy_forward_naive(const float* logits, const int32_t* targets, size_t n, size_t c) {
  double loss = 0;
  for (size_t i = 0; i < n; ++i) {
    double sum = 0;
    for (size_t k = 0; k < c; ++k) sum += std::exp(double(logits[i * c + k]));
    loss += std::log(sum) - logits[i * c + targets[i]];
  }
  return n ? loss / double(n) : 0.0;
}

void softmax_cross_entropy_backward_naive(const float* logits, const int32_t* targets, size_t n, size_t c, float scale,
                                          float* dlogits) {
  for (size_t i = 0; i < n; ++i) {
    double sum = 0;
    for (size_t k = 0; k < c; ++k) sum += std::exp(double(logits[i * c + k]));
    for (size_t k = 0; k < c; ++k) {
      const double p = std::exp(double(logits[i * c + k])) / sum;
      dlogits[i * c + k] = static_cast<float>((p - (static_cast<int32_t>(k) == targets[i] ? 1.0 : 0.0)) * scale);
    }
  }
}

}  // namespace dsgd
