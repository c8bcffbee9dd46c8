// See softmax.hpp. Row statistics in float as the CPU kernels (the CPU attention softmax uses
// fast_exp, relative error ≤ 2e-7; here __expf's ≤ 2 ulp + the range reduction's error, so
// the two agree to ~1e-6 relative); the loss sums in double.
#include <cuda_runtime.h>

#include "core/cuda/cuda_check.hpp"
#include "workloads/cuda/softmax.hpp"
#include "workloads/cuda/warp_reduce.cuh"

namespace dsgd {

namespace {

using namespace cuda_detail;

__global__ void causal_softmax_forward_kernel(float* p, size_t rows, size_t seq) {
  const size_t row = blockIdx.x * size_t(kRowsPerBlock) + threadIdx.y;
  if (row >= rows) return;
  const size_t t = row % seq;  // position of this row in its S×S square
  float* r = p + row * seq;
  const int lane = threadIdx.x;
  float mx = -INFINITY;
  for (size_t j = lane; j <= t; j += kWarp) mx = fmaxf(mx, r[j]);
  mx = warp_max(mx);
  float s = 0;
  for (size_t j = lane; j <= t; j += kWarp) {
    const float e = __expf(r[j] - mx);
    r[j] = e;
    s += e;
  }
  const float inv = 1.0f / warp_sum(s);
  for (size_t j = lane; j < seq; j += kWarp) r[j] = j <= t ? r[j] * inv : 0.0f;
}

__global__ void causal_softmax_backward_kernel(const float* p, float* dp, size_t rows, size_t seq, float scale) {
  const size_t row = blockIdx.x * size_t(kRowsPerBlock) + threadIdx.y;
  if (row >= rows) return;
  const size_t t = row % seq;
  const float* pr = p + row * seq;
  float* dr = dp + row * seq;
  const int lane = threadIdx.x;
  float dot = 0;
  for (size_t j = lane; j <= t; j += kWarp) dot += pr[j] * dr[j];
  dot = warp_sum(dot);
  for (size_t j = lane; j < seq; j += kWarp) dr[j] = j <= t ? pr[j] * (dr[j] - dot) * scale : 0.0f;
}

__global__ void cross_entropy_rows_kernel(const float* logits, const int32_t* targets, size_t n, size_t c,
                                          float* row_loss, float* row_hit) {
  const size_t row = blockIdx.x * size_t(kRowsPerBlock) + threadIdx.y;
  if (row >= n) return;
  const float* r = logits + row * c;
  const int lane = threadIdx.x;
  // Arg-max with the lowest index on ties (as the CPU's strict > scan).
  float mx = -INFINITY;
  size_t arg = 0;
  for (size_t k = lane; k < c; k += kWarp)
    if (r[k] > mx) mx = r[k], arg = k;
  for (int o = kWarp / 2; o > 0; o /= 2) {
    const float om = __shfl_xor_sync(0xffffffffu, mx, o);
    const size_t oa = __shfl_xor_sync(0xffffffffu, arg, o);
    if (om > mx || (om == mx && oa < arg)) mx = om, arg = oa;
  }
  float s = 0;
  for (size_t k = lane; k < c; k += kWarp) s += __expf(r[k] - mx);
  s = warp_sum(s);
  if (lane == 0) {
    const int32_t tgt = targets[row];
    row_loss[row] = logf(s) + mx - r[tgt];
    row_hit[row] = arg == size_t(tgt) ? 1.0f : 0.0f;
  }
}

__global__ void cross_entropy_backward_kernel(const float* logits, const int32_t* targets, size_t n, size_t c,
                                              float scale, float* dlogits) {
  const size_t row = blockIdx.x * size_t(kRowsPerBlock) + threadIdx.y;
  if (row >= n) return;
  const float* r = logits + row * c;
  float* out = dlogits + row * c;
  const int lane = threadIdx.x;
  float mx = -INFINITY;
  for (size_t k = lane; k < c; k += kWarp) mx = fmaxf(mx, r[k]);
  mx = warp_max(mx);
  float s = 0;
  for (size_t k = lane; k < c; k += kWarp) s += __expf(r[k] - mx);
  const float inv = scale / warp_sum(s);
  const int32_t tgt = targets[row];
  for (size_t k = lane; k < c; k += kWarp) {
    const float v = __expf(r[k] - mx) * inv;  // read before the write: dlogits may alias logits
    out[k] = int32_t(k) == tgt ? v - scale : v;
  }
}

// One block of 256 threads: thread i sums elements i, i+256, ... in double, then a tree in
// shared memory: the same order every run.
__global__ void sum_pair_kernel(const float* a, const float* b, size_t n, double* sums) {
  __shared__ double sa[256], sb[256];
  double x = 0, y = 0;
  for (size_t i = threadIdx.x; i < n; i += 256) {
    x += a[i];
    if (b) y += b[i];
  }
  sa[threadIdx.x] = x;
  sb[threadIdx.x] = y;
  __syncthreads();
  for (int h = 128; h > 0; h /= 2) {
    if (int(threadIdx.x) < h) {
      sa[threadIdx.x] += sa[threadIdx.x + h];
      sb[threadIdx.x] += sb[threadIdx.x + h];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    sums[0] = sa[0];
    sums[1] = sb[0];
  }
}

}  // namespace

void causal_softmax_forward_cuda(float* p, size_t blocks, size_t seq, cudaStream_t stream) {
  const size_t rows = blocks * seq;
  if (!rows) return;
  causal_softmax_forward_kernel<<<row_blocks(rows), dim3(kWarp, kRowsPerBlock), 0, stream>>>(p, rows, seq);
  DSGD_CUDA_CHECK_LAUNCH();
}

void causal_softmax_backward_cuda(const float* p, float* dp, size_t blocks, size_t seq, float scale,
                                  cudaStream_t stream) {
  const size_t rows = blocks * seq;
  if (!rows) return;
  causal_softmax_backward_kernel<<<row_blocks(rows), dim3(kWarp, kRowsPerBlock), 0, stream>>>(p, dp, rows, seq, scale);
  DSGD_CUDA_CHECK_LAUNCH();
}

void sum_pair_cuda(const float* a, const float* b, size_t n, double* sums, cudaStream_t stream) {
  sum_pair_kernel<<<1, 256, 0, stream>>>(a, b, n, sums);
  DSGD_CUDA_CHECK_LAUNCH();
}

void softmax_cross_entropy_rows_cuda(const float* logits, const int32_t* targets, size_t n, size_t c, float* row_loss,
                                     float* row_hit, double* sums, cudaStream_t stream) {
  if (n) {
    cross_entropy_rows_kernel<<<row_blocks(n), dim3(kWarp, kRowsPerBlock), 0, stream>>>(logits, targets, n, c, row_loss,
                                                                                        row_hit);
    DSGD_CUDA_CHECK_LAUNCH();
  }
  sum_pair_cuda(row_loss, row_hit, n, sums, stream);
}

double softmax_cross_entropy_forward_cuda(const float* logits, const int32_t* targets, size_t n, size_t c,
                                          float* row_loss, float* row_hit, double* sums, cudaStream_t stream,
                                          double* correct) {
  softmax_cross_entropy_rows_cuda(logits, targets, n, c, row_loss, row_hit, sums, stream);
  double host[2] = {0, 0};
  DSGD_CUDA_CHECK(cudaMemcpyAsync(host, sums, sizeof host, cudaMemcpyDeviceToHost, stream));
  DSGD_CUDA_CHECK(cudaStreamSynchronize(stream));
  if (correct) *correct = host[1];
  return n ? host[0] / double(n) : 0.0;
}

void softmax_cross_entropy_backward_cuda(const float* logits, const int32_t* targets, size_t n, size_t c, float scale,
                                         float* dlogits, cudaStream_t stream) {
  if (!n) return;
  cross_entropy_backward_kernel<<<row_blocks(n), dim3(kWarp, kRowsPerBlock), 0, stream>>>(logits, targets, n, c, scale,
                                                                                          dlogits);
  DSGD_CUDA_CHECK_LAUNCH();
}

}  // namespace dsgd
