// data ← data · factor on a stream: the 1/n of an average all-reduce, on the communication
// stream right after the NCCL call (NCCL 2.10+ has ncclAvg, but the sum-then-scale order is the
// CPU backends' and keeps the results comparable).
#include <cuda_runtime.h>

#include "cluster/cuda/nccl_device.hpp"
#include "core/cuda/cuda_check.hpp"

namespace dsgd {

namespace {
__global__ void scale_kernel(float* x, size_t n, float f) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) x[i] *= f;
}
}  // namespace

void nccl_scale_kernel_launch(float* data, size_t count, float factor, cudaStream_t stream) {
  if (!count) return;
  size_t blocks = (count + 255) / 256;
  constexpr size_t kMaxBlocks = size_t{65535} * 8;
  if (blocks > kMaxBlocks) blocks = kMaxBlocks;
  scale_kernel<<<unsigned(blocks), 256, 0, stream>>>(data, count, factor);
  DSGD_CUDA_CHECK_LAUNCH();
}

}  // namespace dsgd
