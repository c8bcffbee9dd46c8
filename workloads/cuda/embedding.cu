// See embedding.hpp. dwte: one block per vocabulary row, threads over the d features, scanning
// the batch's tokens in order (V·N token reads: small for byte-level vocabularies; a sort by
// token would serve large ones). dwpe: one thread per (position, feature), summing the batch.
#include <cuda_runtime.h>

#include "core/cuda/cuda_check.hpp"
#include "workloads/cuda/embedding.hpp"

namespace dsgd {

namespace {

__global__ void embedding_forward_kernel(size_t rows, size_t seq, size_t d, const int32_t* tokens, const float* wte,
                                         const float* wpe, float* x) {
  const size_t n = rows * d;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    const size_t row = i / d, k = i % d;
    x[i] = wte[size_t(tokens[row]) * d + k] + wpe[(row % seq) * d + k];
  }
}

__global__ void embedding_dwte_kernel(size_t rows, size_t d, const int32_t* tokens, const float* dx, float* dwte) {
  const int32_t v = int32_t(blockIdx.x);
  for (size_t k = threadIdx.x; k < d; k += blockDim.x) {
    float acc = 0;
    for (size_t row = 0; row < rows; ++row)
      if (tokens[row] == v) acc += dx[row * d + k];
    dwte[size_t(v) * d + k] = acc;
  }
}

__global__ void embedding_dwpe_kernel(size_t batch, size_t seq, size_t d, const float* dx, float* dwpe) {
  const size_t n = seq * d;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    float acc = 0;
    for (size_t b = 0; b < batch; ++b) acc += dx[b * n + i];
    dwpe[i] = acc;
  }
}

unsigned blocks_for(size_t n) {
  const size_t b = (n + 255) / 256;
  return unsigned(b < 65535 * 8 ? (b ? b : 1) : 65535 * 8);
}

}  // namespace

void embedding_forward_cuda(const EmbeddingShape& s, const int32_t* tokens, const float* wte, const float* wpe,
                            float* x, cudaStream_t stream) {
  const size_t rows = s.batch * s.seq;
  if (!rows || !s.d) return;
  embedding_forward_kernel<<<blocks_for(rows * s.d), 256, 0, stream>>>(rows, s.seq, s.d, tokens, wte, wpe, x);
  DSGD_CUDA_CHECK_LAUNCH();
}

void embedding_backward_cuda(const EmbeddingShape& s, const int32_t* tokens, const float* dx, float* dwte, float* dwpe,
                             cudaStream_t stream) {
  if (!s.d) return;
  embedding_dwte_kernel<<<unsigned(s.vocab), 256, 0, stream>>>(s.batch * s.seq, s.d, tokens, dx, dwte);
  DSGD_CUDA_CHECK_LAUNCH();
  embedding_dwpe_kernel<<<blocks_for(s.seq * s.d), 256, 0, stream>>>(s.batch, s.seq, s.d, dx, dwpe);
  DSGD_CUDA_CHECK_LAUNCH();
}

}  // namespace dsgd
