// See gpu_context.hpp.
#include "workloads/cuda/gpu_context.hpp"

#include "core/errors.hpp"

namespace dsgd {

const char* gemm_precision_name(GemmPrecision p) {
  switch (p) {
    case GemmPrecision::fp32: return "fp32";
    case GemmPrecision::tf32: return "tf32";
    case GemmPrecision::bf16: return "bf16";
  }
  return "?";
}

GemmPrecision gemm_precision_parse(const std::string& name) {
  if (name == "fp32") return GemmPrecision::fp32;
  if (name == "tf32") return GemmPrecision::tf32;
  if (name == "bf16") return GemmPrecision::bf16;
  DSGD_THROW(InputError, "use fp32, tf32 or bf16", "--precision: unknown precision '{}'", name);
}

namespace {
int select_device(int device) {
  DSGD_CUDA_CHECK(cudaSetDevice(device));
  return device;
}
}  // namespace

GpuContext::GpuContext(int device, GemmPrecision precision) : device_(select_device(device)), precision_(precision) {
  DSGD_CUDA_CHECK(cublasCreate(&blas_));
  DSGD_CUDA_CHECK(cublasSetStream(blas_, stream_.get()));
  DSGD_CUDA_CHECK(cudnnCreate(&dnn_));
  DSGD_CUDA_CHECK(cudnnSetStream(dnn_, stream_.get()));
}

GpuContext::~GpuContext() {
  if (dnn_) (void)cudnnDestroy(dnn_);
  if (blas_) (void)cublasDestroy(blas_);
}

}  // namespace dsgd
