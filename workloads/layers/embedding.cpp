// See embedding.hpp.
#include "workloads/layers/embedding.hpp"

#include <cstring>

namespace dsgd {

void embedding_forward(const EmbeddingShape& s, const int32_t* tokens, const float* wte, const float* wpe, float* x) {
  const size_t d = s.d;
  for (size_t b = 0; b < s.batch; ++b)
    for (size_t t = 0; t < s.seq; ++t) {
      const size_t row = b * s.seq + t;
      const float* e = wte + static_cast<size_t>(tokens[row]) * d;
      const float* p = wpe + t * d;
      float* out = x + row * d;
      for (size_t k = 0; k < d; ++k) out[k] = e[k] + p[k];
    }
}

void embedding_backward(const EmbeddingShape& s, const int32_t* tokens, const float* dx, float* dwte, float* dwpe) {
  const size_t d = s.d;
  std::memset(dwte, 0, s.vocab * d * sizeof(float));
  std::memset(dwpe, 0, s.seq * d * sizeof(float));
  for (size_t b = 0; b < s.batch; ++b)
    for (size_t t = 0; t < s.seq; ++t) {
      const size_t row = b * s.seq + t;
      const float* g = dx + row * d;
      float* e = dwte + static_cast<size_t>(tokens[row]) * d;
      float* p = dwpe + t * d;
      for (size_t k = 0; k < d; ++k) {
        e[k] += g[k];
        p[k] += g[k];
      }
    }
}

void embedding_forward_naive(const EmbeddingShape& s, const int32_t* tokens, const float* wte, const float* wpe,
                             float* x) {
  for (size_t row = 0; row < s.batch * s.seq; ++row) {
    const size_t t = row % s.seq;
    for (size_t k = 0; k < s.d; ++k) {
      double acc = wpe[t * s.d + k];
      for (size_t v = 0; v < s.vocab; ++v)
        acc += (static_cast<int32_t>(v) == tokens[row] ? 1.0 : 0.0) * wte[v * s.d + k];
      x[row * s.d + k] = static_cast<float>(acc);
    }
  }
}

void embedding_backward_naive(const EmbeddingShape& s, const int32_t* tokens, const float* dx, float* dwte,
                              float* dwpe) {
  const size_t rows = s.batch * s.seq;
  for (size_t v = 0; v < s.vocab; ++v)
    for (size_t k = 0; k < s.d; ++k) {
      double acc = 0;
      for (size_t row = 0; row < rows; ++row)
        acc += (static_cast<int32_t>(v) == tokens[row] ? 1.0 : 0.0) * dx[row * s.d + k];
      dwte[v * s.d + k] = static_cast<float>(acc);
    }
  for (size_t t = 0; t < s.seq; ++t)
    for (size_t k = 0; k < s.d; ++k) {
      double acc = 0;
      for (size_t b = 0; b < s.batch; ++b) acc += dx[(b * s.seq + t) * s.d + k];
      dwpe[t * s.d + k] = static_cast<float>(acc);
    }
}

}  // namespace dsgd
