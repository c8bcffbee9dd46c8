// See softmax_cross_entropy.hpp.
#include "workloads/layers/softmax_cross_entropy.hpp"

#include <cmath>

#include "workloads/layers/layer_threads.hpp"

namespace dsgd {

double softmax_cross_entropy_forward(const float* logits, const int32_t* targets, size_t n, size_t c, double* correct) {
  double loss = 0;
  double hits = 0;
  for (size_t i = 0; i < n; ++i) {
    const float* row = logits + i * c;
    float mx = row[0];
    size_t arg = 0;
    for (size_t k = 1; k < c; ++k)
      if (row[k] > mx) {
        mx = row[k];
        arg = k;
      }
    float sum = 0;
    for (size_t k = 0; k < c; ++k) sum += std::exp(row[k] - mx);
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
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1 && n * c >= kParallelMinFloats)
#endif
  for (size_t i = 0; i < n; ++i) {
    const float* row = logits + i * c;
    float* out = dlogits + i * c;
    float mx = row[0];
    for (size_t k = 1; k < c; ++k) mx = row[k] > mx ? row[k] : mx;
    float sum = 0;
    for (size_t k = 0; k < c; ++k) {
      out[k] = std::exp(row[k] - mx);
      sum += out[k];
    }
    const float inv = scale / sum;
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
