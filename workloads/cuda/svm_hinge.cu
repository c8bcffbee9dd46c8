// See svm_hinge.hpp.
#include <cuda_runtime.h>

#include "core/cuda/cuda_check.hpp"
#include "workloads/cuda/softmax.hpp"
#include "workloads/cuda/svm_hinge.hpp"
#include "workloads/cuda/warp_reduce.cuh"

namespace dsgd {

namespace {

__global__ void svm_hinge_kernel(const float* s, const int32_t* labels, size_t B, size_t C, float scale, float* ds,
                                 float* elem_loss, float* active) {
  const size_t n = B * C;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    const size_t row = i / C, c = i % C;
    const int32_t label = labels[row];
    const bool positive = C == 1 ? label == 1 : size_t(label) == c;
    const float t = positive ? 1.0f : -1.0f;
    const float margin = t * s[i];
    const bool on = margin < 1.0f;
    elem_loss[i] = on ? 1.0f - margin : 0.0f;
    ds[i] = on ? -t * scale : 0.0f;
    active[i] = on ? 1.0f : 0.0f;
  }
}

}  // namespace

void svm_hinge_grad_cuda(const float* s, const int32_t* labels, size_t B, size_t C, float scale, float* ds,
                         float* elem_loss, float* elem_active, double* sums, cudaStream_t stream) {
  const size_t n = B * C;
  if (n) {
    svm_hinge_kernel<<<cuda_detail::elem_blocks(n), 256, 0, stream>>>(s, labels, B, C, scale, ds, elem_loss,
                                                                      elem_active);
    DSGD_CUDA_CHECK_LAUNCH();
  }
  sum_pair_cuda(elem_loss, elem_active, n, sums, stream);
}

}  // namespace dsgd
