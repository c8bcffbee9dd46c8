// See vector_ops_cuda.hpp: the class (allocation, copies, the registration) on the host
// compiler; each elementwise operation calls its launcher (vector_ops_kernels.hpp).
#include "core/cuda/vector_ops_cuda.hpp"

#include "core/cuda/cuda_check.hpp"
#include "core/cuda/vector_ops_kernels.hpp"
#include "core/errors.hpp"
#include "core/gpu_info.hpp"

namespace dsgd {

CudaVectorOps::CudaVectorOps() {
  int d = 0;
  DSGD_CUDA_CHECK(cudaGetDevice(&d));
  device_ = Device{DeviceKind::device_cuda, d};
  DSGD_CUDA_CHECK(cudaStreamCreateWithFlags(&own_, cudaStreamNonBlocking));
  stream_ = own_;
}

CudaVectorOps::~CudaVectorOps() {
  if (own_) (void)cudaStreamDestroy(own_);
}

void* CudaVectorOps::allocate(size_t bytes) {
  if (bytes == 0) return nullptr;
  void* p = nullptr;
  DSGD_CUDA_CHECK(cudaMalloc(&p, bytes));
  DSGD_CUDA_CHECK(cudaMemsetAsync(p, 0, bytes, stream_));
  DSGD_CUDA_CHECK(cudaStreamSynchronize(stream_));  // zero-filled before any other stream uses it
  return p;
}
void CudaVectorOps::deallocate(void* p) {
  if (p) (void)cudaFree(p);
}
void CudaVectorOps::copy(BufferView dst, ConstBufferView src) {
  if (src.count > 0 && dst.data != src.data)
    DSGD_CUDA_CHECK(cudaMemcpyAsync(dst.data, src.data, src.bytes(), cudaMemcpyDeviceToDevice, stream_));
}
void CudaVectorOps::copy_to_host(void* dst, ConstBufferView src) {
  if (src.count == 0) return;
  DSGD_CUDA_CHECK(cudaMemcpyAsync(dst, src.data, src.bytes(), cudaMemcpyDeviceToHost, stream_));
  DSGD_CUDA_CHECK(cudaStreamSynchronize(stream_));
}
void CudaVectorOps::copy_from_host(BufferView dst, const void* src) {
  if (dst.count == 0) return;
  DSGD_CUDA_CHECK(cudaMemcpyAsync(dst.data, src, dst.bytes(), cudaMemcpyHostToDevice, stream_));
  DSGD_CUDA_CHECK(cudaStreamSynchronize(stream_));
}
void CudaVectorOps::synchronize() {
  DSGD_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

void CudaVectorOps::fill(BufferView x, float value) {
  vec_fill(x.f32(), x.count, value, stream_);
}
void CudaVectorOps::scale(BufferView x, float a) {
  vec_scale(x.f32(), x.count, a, stream_);
}
void CudaVectorOps::scale_copy(BufferView y, float a, ConstBufferView x) {
  vec_scale_copy(y.f32(), x.f32(), y.count, a, stream_);
}
void CudaVectorOps::axpy(BufferView y, float a, ConstBufferView x) {
  vec_axpy(y.f32(), x.f32(), y.count, a, stream_);
}
void CudaVectorOps::scale_add(BufferView y, float a, ConstBufferView x) {
  vec_scale_add(y.f32(), x.f32(), y.count, a, stream_);
}
void CudaVectorOps::blend(BufferView y, float a, float b, ConstBufferView x) {
  vec_blend(y.f32(), x.f32(), y.count, a, b, stream_);
}
void CudaVectorOps::add(BufferView out, ConstBufferView a, ConstBufferView b) {
  vec_add(out.f32(), a.f32(), b.f32(), out.count, stream_);
}
void CudaVectorOps::sub(BufferView out, ConstBufferView a, ConstBufferView b) {
  vec_sub(out.f32(), a.f32(), b.f32(), out.count, stream_);
}
void CudaVectorOps::rebase(BufferView x, ConstBufferView avg, ConstBufferView base, bool only_changed) {
  vec_rebase(x.f32(), avg.f32(), base.f32(), x.count, only_changed, stream_);
}
void CudaVectorOps::sgd_update(BufferView x, BufferView velocity, ConstBufferView g, const SgdUpdate& u) {
  vec_sgd(x.f32(), velocity.f32(), g.f32(), x.count, u, stream_);
}
void CudaVectorOps::adamw_update(BufferView x, BufferView m, BufferView v, ConstBufferView g, const AdamWUpdate& u) {
  vec_adamw(x.f32(), m.f32(), v.f32(), g.f32(), x.count, u, stream_);
}

CudaVectorOps& vector_ops_cuda() {
  static CudaVectorOps* ops = [] {
    const GpuInfo g = gpu_info_probe();
    if (!g.available) throw Error("CUDA vector operations: " + g.reason, "run on a machine with a GPU");
    auto* p = new CudaVectorOps();  // lives for the process (registered globally)
    vector_ops_register(DeviceKind::device_cuda, p);
    return p;
  }();
  return *ops;
}

}  // namespace dsgd
