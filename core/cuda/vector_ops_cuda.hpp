// The CUDA implementation of the per-device vector operations (core/vector_ops.hpp): each call
// enqueues one kernel (or one cudaMemcpyAsync) on the stream set with set_stream (the compute
// stream of the process's GPU; default: a non-blocking stream of its own), with the same float
// expression per element as the host loops, so host and device agree to a rounding (nvcc may
// contract a·b + c into an FMA where the host build did not, or the reverse: ≤ 1 ulp per
// operation). copy_to_host / copy_from_host wait for the copy (the host reads or reuses the
// buffer next); every other call returns at once. One device per process: the instance serves
// device cuda:N, N the device current at construction. Only built with CUDA.
#pragma once

#include <cuda_runtime_api.h>

#include "core/vector_ops.hpp"

namespace dsgd {

class CudaVectorOps final : public VectorOps {
 public:
  CudaVectorOps();  // on the current device (cudaGetDevice)
  ~CudaVectorOps() override;
  CudaVectorOps(const CudaVectorOps&) = delete;
  CudaVectorOps& operator=(const CudaVectorOps&) = delete;
  Device device() const override { return device_; }
  cudaStream_t stream() const { return stream_; }
  // The stream later calls enqueue on (not owned; nullptr: back to the own stream).
  void set_stream(cudaStream_t s) { stream_ = s ? s : own_; }

  void* allocate(size_t bytes) override;
  void deallocate(void* p) override;
  void copy(BufferView dst, ConstBufferView src) override;
  void copy_to_host(void* dst, ConstBufferView src) override;
  void copy_from_host(BufferView dst, const void* src) override;
  void synchronize() override;

  void fill(BufferView x, float value) override;
  void scale(BufferView x, float a) override;
  void scale_copy(BufferView y, float a, ConstBufferView x) override;
  void axpy(BufferView y, float a, ConstBufferView x) override;
  void scale_add(BufferView y, float a, ConstBufferView x) override;
  void blend(BufferView y, float a, float b, ConstBufferView x) override;
  void add(BufferView out, ConstBufferView a, ConstBufferView b) override;
  void sub(BufferView out, ConstBufferView a, ConstBufferView b) override;
  void rebase(BufferView x, ConstBufferView avg, ConstBufferView base, bool only_changed) override;
  void sgd_update(BufferView x, BufferView velocity, ConstBufferView g, const SgdUpdate& u) override;
  void adamw_update(BufferView x, BufferView m, BufferView v, ConstBufferView g, const AdamWUpdate& u) override;

 private:
  Device device_;
  cudaStream_t own_ = nullptr;
  cudaStream_t stream_ = nullptr;
};

// The process's CUDA vector operations, created on first use on the current device and
// registered for DeviceKind::device_cuda (vector_ops_register). Throws Error (the probe's
// reason) when no device is usable.
CudaVectorOps& vector_ops_cuda();

}  // namespace dsgd
