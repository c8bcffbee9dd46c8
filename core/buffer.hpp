// Buffers that know where they live: a non-owning view of `count` elements of one dtype in one
// device's memory, passed to the Communicator and Workload interfaces so that one algorithm
// serves host and GPU memory (docs/architecture.md, "Buffers and vector operations").
//
// A view is four words, built and sliced inline (no allocation, no virtual call). Its pointer is
// an address in the view's device: host code may dereference it only when device.is_host()
// (host_f32() checks that). Elementwise math on a view goes through that device's VectorOps
// (core/vector_ops.hpp); an owning allocation on a device is a DeviceBuffer (same header).
//
// Limits: float32 is the only dtype of the recorded collectives and the vector operations;
// float64 views exist for the harness (untimed sums, gathers). Device kinds: host, and cuda
// (whose memory and operations come with the CUDA build, docs/gpu.md), and a test device
// (host memory behind pointers the host must not dereference: tests/unit/shadow_device.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace dsgd {

enum class DType : uint8_t {
  dtype_f32 = 0,
  dtype_f64 = 1,
};
constexpr size_t dtype_size(DType t) {
  return t == DType::dtype_f64 ? 8 : 4;
}
const char* dtype_name(DType t);

enum class DeviceKind : uint8_t {
  device_host = 0,  // CPU memory: dereferenceable by host code
  device_cuda = 1,  // a CUDA device's global memory (index = CUDA device ordinal)
  device_test = 2,  // tests only: host memory behind non-dereferenceable pointers
};

struct Device {
  DeviceKind kind = DeviceKind::device_host;
  int index = 0;
  constexpr bool is_host() const { return kind == DeviceKind::device_host; }
  constexpr bool operator==(const Device&) const = default;
};
constexpr Device kHostDevice{};
// "host", "cuda:0", "test:0".
std::string device_name(Device d);

struct ConstBufferView;

// count elements of dtype at data, in device's memory (mutable).
struct BufferView {
  void* data = nullptr;
  size_t count = 0;
  DType dtype = DType::dtype_f32;
  Device device{};

  size_t bytes() const { return count * dtype_size(dtype); }
  // Elements [offset, offset + n) of this view (no bounds check in Release builds: hot path).
  BufferView slice(size_t offset, size_t n) const {
    return BufferView{static_cast<char*>(data) + offset * dtype_size(dtype), n, dtype, device};
  }
  // The float32 pointer, in the view's device (not dereferenceable on the host unless host).
  float* f32() const { return static_cast<float*>(data); }
  double* f64() const { return static_cast<double*>(data); }
  // The float32 pointer of a host view; throws Error naming `what` when the view is not f32 on
  // the host (a host-only implementation given device memory).
  float* host_f32(const char* what) const;
};

// A read-only view (a send buffer, parameters read by forward).
struct ConstBufferView {
  const void* data = nullptr;
  size_t count = 0;
  DType dtype = DType::dtype_f32;
  Device device{};

  ConstBufferView() = default;
  ConstBufferView(const void* d, size_t n, DType t, Device dev) : data(d), count(n), dtype(t), device(dev) {}
  ConstBufferView(const BufferView& v) : data(v.data), count(v.count), dtype(v.dtype), device(v.device) {}

  size_t bytes() const { return count * dtype_size(dtype); }
  ConstBufferView slice(size_t offset, size_t n) const {
    return ConstBufferView{static_cast<const char*>(data) + offset * dtype_size(dtype), n, dtype, device};
  }
  const float* f32() const { return static_cast<const float*>(data); }
  const double* f64() const { return static_cast<const double*>(data); }
  const float* host_f32(const char* what) const;
};

// Host views of plain host pointers: what the host-pointer convenience overloads build.
inline BufferView host_view(float* p, size_t n) {
  return BufferView{p, n, DType::dtype_f32, kHostDevice};
}
inline ConstBufferView host_view(const float* p, size_t n) {
  return ConstBufferView{p, n, DType::dtype_f32, kHostDevice};
}
inline BufferView host_view(double* p, size_t n) {
  return BufferView{p, n, DType::dtype_f64, kHostDevice};
}
// A float32 view of n elements at p in device d.
inline BufferView device_view(float* p, size_t n, Device d) {
  return BufferView{p, n, DType::dtype_f32, d};
}
inline ConstBufferView device_view(const float* p, size_t n, Device d) {
  return ConstBufferView{p, n, DType::dtype_f32, d};
}

}  // namespace dsgd
