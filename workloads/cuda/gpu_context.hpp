// The per-device state every GPU kernel wrapper takes: the compute stream, a cuBLAS handle and
// a cuDNN handle bound to it, and the GEMM precision the run asked for. One per process (one
// process per GPU); created at setup, never in the step loop. Only built with CUDA.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <string>

#include "core/cuda/cuda_buffer.hpp"

namespace dsgd {

// fp32: exact single precision (cuBLAS CUBLAS_COMPUTE_32F, cuDNN FMA math).
// tf32: float storage, TF32 tensor-core products with float accumulation (10-bit mantissa inputs).
// bf16: bfloat16 operands, float accumulation and output (GEMMs whose inputs are bf16 copies).
enum class GemmPrecision { fp32, tf32, bf16 };
const char* gemm_precision_name(GemmPrecision p);
// "fp32" | "tf32" | "bf16"; throws InputError naming --precision otherwise.
GemmPrecision gemm_precision_parse(const std::string& name);

class GpuContext {
 public:
  // Selects `device` (cudaSetDevice) and creates the stream and handles on it.
  explicit GpuContext(int device = 0, GemmPrecision precision = GemmPrecision::fp32);
  ~GpuContext();
  GpuContext(const GpuContext&) = delete;
  GpuContext& operator=(const GpuContext&) = delete;

  int device() const { return device_; }
  cudaStream_t stream() const { return stream_.get(); }
  cublasHandle_t blas() const { return blas_; }
  cudnnHandle_t dnn() const { return dnn_; }
  GemmPrecision precision() const { return precision_; }
  void set_precision(GemmPrecision p) { precision_ = p; }
  void synchronize() const { stream_.synchronize(); }

 private:
  int device_;
  GemmPrecision precision_;
  CudaStream stream_;
  cublasHandle_t blas_ = nullptr;
  cudnnHandle_t dnn_ = nullptr;
};

}  // namespace dsgd
