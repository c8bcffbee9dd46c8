// The linear SVM's hinge loss and its gradient on device memory, the contract of
// workloads/svm_kernels.hpp: s (B×C) scores, labels (B), t_ic = ±1 (svm_target);
// loss_ic = max(0, 1 − t_ic s_ic); ds_ic = −t_ic·scale where t_ic s_ic < 1, else 0.
// The scores and the weight gradient are GEMMs (gemm.hpp): s = x w + b, dw = xᵀ ds.
// Only built with CUDA.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace dsgd {

// ds (B×C) written; elem_loss and elem_active (B×C each) are scratch; sums[0] = Σ loss and
// sums[1] = the number of active (non-zero) entries of ds, in double on the device
// (sum_pair_cuda). Asynchronous.
void svm_hinge_grad_cuda(const float* s, const int32_t* labels, size_t B, size_t C, float scale, float* ds,
                         float* elem_loss, float* elem_active, double* sums, cudaStream_t stream);

}  // namespace dsgd
