// The kernels of CudaVectorOps (vector_ops_cuda.hpp): one grid-stride kernel per operation, the
// element expressions as HostVectorOps' (core/vector_ops.cpp). No fmt here (core/errors.hpp):
// nvcc cannot compile fmt's compile-time format strings; the class is in vector_ops_cuda.cpp.
#include <cuda_runtime.h>

#include "core/cuda/cuda_check.hpp"
#include "core/cuda/vector_ops_kernels.hpp"

namespace dsgd {

namespace {

unsigned blocks_for(size_t n) {
  const size_t b = (n + 255) / 256;
  constexpr size_t kMaxBlocks = size_t{65535} * 8;
  return unsigned(b < kMaxBlocks ? (b ? b : 1) : kMaxBlocks);
}

#define DSGD_FOR_EACH(i, n) \
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; (i) < (n); (i) += size_t(gridDim.x) * blockDim.x)

__global__ void fill_kernel(float* x, size_t n, float v) {
  DSGD_FOR_EACH(i, n) x[i] = v;
}
__global__ void scale_kernel(float* x, size_t n, float a) {
  DSGD_FOR_EACH(i, n) x[i] *= a;
}
__global__ void scale_copy_kernel(float* y, const float* x, size_t n, float a) {
  DSGD_FOR_EACH(i, n) y[i] = a * x[i];
}
__global__ void axpy_kernel(float* y, const float* x, size_t n, float a) {
  DSGD_FOR_EACH(i, n) y[i] += a * x[i];
}
__global__ void scale_add_kernel(float* y, const float* x, size_t n, float a) {
  DSGD_FOR_EACH(i, n) y[i] = a * y[i] + x[i];
}
__global__ void blend_kernel(float* y, const float* x, size_t n, float a, float b) {
  DSGD_FOR_EACH(i, n) y[i] = a * y[i] + b * x[i];
}
__global__ void add_kernel(float* out, const float* a, const float* b, size_t n) {
  DSGD_FOR_EACH(i, n) out[i] = a[i] + b[i];
}
__global__ void sub_kernel(float* out, const float* a, const float* b, size_t n) {
  DSGD_FOR_EACH(i, n) out[i] = a[i] - b[i];
}
__global__ void rebase_kernel(float* x, const float* avg, const float* base, size_t n, bool only_changed) {
  DSGD_FOR_EACH(i, n) {
    if (!only_changed || avg[i] != base[i]) x[i] = avg[i] + (x[i] - base[i]);
  }
}
__global__ void sgd_kernel(float* x, float* v, const float* g, size_t n, float lr, float mu, float wd, bool nesterov) {
  DSGD_FOR_EACH(i, n) {
    if (mu == 0.0f) {
      x[i] -= lr * (g[i] + wd * x[i]);
    } else if (nesterov) {
      const float d = g[i] + wd * x[i];
      v[i] = mu * v[i] + d;
      x[i] -= lr * (d + mu * v[i]);
    } else {
      v[i] = mu * v[i] + g[i] + wd * x[i];
      x[i] -= lr * v[i];
    }
  }
}
__global__ void adamw_kernel(float* x, float* m, float* v, const float* g, size_t n, AdamWUpdate u) {
  DSGD_FOR_EACH(i, n) {
    const float gi = g[i];
    m[i] = u.beta1 * m[i] + (1.0f - u.beta1) * gi;
    v[i] = u.beta2 * v[i] + (1.0f - u.beta2) * gi * gi;
    const float denom = sqrtf(v[i]) * u.inv_sqrt_c2 + u.eps;
    x[i] = x[i] * u.decay - u.step_size * m[i] / denom;
  }
}

#undef DSGD_FOR_EACH

}  // namespace

#define DSGD_LAUNCH(kernel, n, ...)                         \
  do {                                                      \
    if ((n) == 0) return;                                   \
    kernel<<<blocks_for(n), 256, 0, stream>>>(__VA_ARGS__); \
    DSGD_CUDA_CHECK_LAUNCH();                               \
  } while (0)

void vec_fill(float* x, size_t n, float v, cudaStream_t stream) {
  DSGD_LAUNCH(fill_kernel, n, x, n, v);
}
void vec_scale(float* x, size_t n, float a, cudaStream_t stream) {
  DSGD_LAUNCH(scale_kernel, n, x, n, a);
}
void vec_scale_copy(float* y, const float* x, size_t n, float a, cudaStream_t stream) {
  DSGD_LAUNCH(scale_copy_kernel, n, y, x, n, a);
}
void vec_axpy(float* y, const float* x, size_t n, float a, cudaStream_t stream) {
  DSGD_LAUNCH(axpy_kernel, n, y, x, n, a);
}
void vec_scale_add(float* y, const float* x, size_t n, float a, cudaStream_t stream) {
  DSGD_LAUNCH(scale_add_kernel, n, y, x, n, a);
}
void vec_blend(float* y, const float* x, size_t n, float a, float b, cudaStream_t stream) {
  DSGD_LAUNCH(blend_kernel, n, y, x, n, a, b);
}
void vec_add(float* out, const float* a, const float* b, size_t n, cudaStream_t stream) {
  DSGD_LAUNCH(add_kernel, n, out, a, b, n);
}
void vec_sub(float* out, const float* a, const float* b, size_t n, cudaStream_t stream) {
  DSGD_LAUNCH(sub_kernel, n, out, a, b, n);
}
void vec_rebase(float* x, const float* avg, const float* base, size_t n, bool only_changed, cudaStream_t stream) {
  DSGD_LAUNCH(rebase_kernel, n, x, avg, base, n, only_changed);
}
void vec_sgd(float* x, float* v, const float* g, size_t n, const SgdUpdate& u, cudaStream_t stream) {
  DSGD_LAUNCH(sgd_kernel, n, x, v, g, n, u.lr, u.momentum, u.weight_decay, u.nesterov);
}
void vec_adamw(float* x, float* m, float* v, const float* g, size_t n, const AdamWUpdate& u, cudaStream_t stream) {
  DSGD_LAUNCH(adamw_kernel, n, x, m, v, g, n, u);
}

#undef DSGD_LAUNCH

}  // namespace dsgd
