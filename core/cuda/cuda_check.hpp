// Checked wrappers around the CUDA runtime, cuBLAS, cuDNN and NCCL: each call
// that can fail goes through DSGD_CUDA_CHECK(call), which throws dsgd::Error naming the library,
// the error's name and text, the call, file:line, the host and the current device, and what to
// do. One overload per status type, so the same macro serves all four libraries. Kernel launches
// are checked with DSGD_CUDA_CHECK_LAUNCH() (cudaGetLastError) right after the launch.
// Only built with CUDA (core/cuda/ is compiled when the toolkit is found).
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <nccl.h>

namespace dsgd {

// Throws Error("<lib> error <code name> (<text>) in <call> at <file>:<line> on <host>, device <d>").
[[noreturn]] void cuda_fail(const char* lib, int code, const char* code_name, const char* text, const char* call,
                            const char* file, int line);
// The hint every CUDA error carries (driver, device visibility, memory).
const char* cuda_error_hint(const char* lib, int code);

inline void cuda_check(cudaError_t e, const char* call, const char* file, int line) {
  if (e != cudaSuccess) cuda_fail("CUDA", int(e), cudaGetErrorName(e), cudaGetErrorString(e), call, file, line);
}
inline void cuda_check(cublasStatus_t e, const char* call, const char* file, int line) {
  if (e != CUBLAS_STATUS_SUCCESS)
    cuda_fail("cuBLAS", int(e), cublasGetStatusName(e), cublasGetStatusString(e), call, file, line);
}
inline void cuda_check(cudnnStatus_t e, const char* call, const char* file, int line) {
  if (e != CUDNN_STATUS_SUCCESS) cuda_fail("cuDNN", int(e), "cudnnStatus_t", cudnnGetErrorString(e), call, file, line);
}
inline void cuda_check(ncclResult_t e, const char* call, const char* file, int line) {
  if (e != ncclSuccess) cuda_fail("NCCL", int(e), "ncclResult_t", ncclGetErrorString(e), call, file, line);
}

}  // namespace dsgd

#define DSGD_CUDA_CHECK(call) ::dsgd::cuda_check((call), #call, __FILE__, __LINE__)
#define DSGD_CUDA_CHECK_LAUNCH() ::dsgd::cuda_check(cudaGetLastError(), "kernel launch", __FILE__, __LINE__)
