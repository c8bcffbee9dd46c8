// See cuda_check.hpp.
#include "core/cuda/cuda_check.hpp"

#include <unistd.h>

#include "core/errors.hpp"

namespace dsgd {

const char* cuda_error_hint(const char* lib, int code) {
  const std::string l = lib;
  if (l == "CUDA" && (code == int(cudaErrorNoDevice) || code == int(cudaErrorInsufficientDriver)))
    return "check that a GPU and its driver are present (nvidia-smi) and visible (CUDA_VISIBLE_DEVICES)";
  if (l == "CUDA" && code == int(cudaErrorMemoryAllocation))
    return "the device is out of memory: use a smaller --batch or model, or free the GPU";
  if (l == "cuBLAS" && code == int(CUBLAS_STATUS_ALLOC_FAILED))
    return "the device is out of memory: use a smaller --batch or model, or free the GPU";
  if (l == "NCCL")
    return "run with NCCL_DEBUG=WARN (or INFO) for NCCL's own account; every rank must call the same collectives";
  return "rerun with CUDA_LAUNCH_BLOCKING=1 to find the failing call; compute-sanitizer checks the kernels";
}

void cuda_fail(const char* lib, int code, const char* code_name, const char* text, const char* call, const char* file,
               int line) {
  char host[256] = "?";
  gethostname(host, sizeof host - 1);
  int device = -1;
  (void)cudaGetDevice(&device);  // best effort: the error may be that there is no device
  (void)cudaGetLastError();      // do not leave that probe's error behind for the next check
  throw Error(fmt::format("{} error {} ({} {}) in {} at {}:{} on host {}, device {}", lib, text ? text : "?",
                          code_name ? code_name : "?", code, call, file, line, host, device),
              cuda_error_hint(lib, code));
}

}  // namespace dsgd
