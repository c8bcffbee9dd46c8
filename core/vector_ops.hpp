// The per-device vector-operations seam: the elementwise float32 math the algorithms, the
// optimizers and the Communicator's averaging do on parameters and gradients (copies, scaling,
// axpy, differences, the optimizer updates), and the memory they need, behind one small
// interface per device, so that an algorithm written once runs on host or device memory
// (docs/architecture.md, "Buffers and vector operations").
//
// Cost: one virtual call per vector operation, never per element; the host implementation
// (core/vector_ops.cpp) is the plain loop the algorithms had inline, with the same float
// expression per element, so results are bit-identical to it. The CUDA implementation
// (core/cuda/) enqueues a kernel on the device's current stream per call.
//
// Registry: vector_ops_for(device) returns the host operations for host memory and the one
// registered for the device's kind otherwise (the CUDA backend registers its own when it
// creates its communicator; tests register a shadow device). Every view given to one call is
// on that device and has the same count, unless said otherwise; an output may alias an input.
//
// Limits: float32 only. What is deliberately not here (host-only today, refused up front on
// another device: docs/architecture.md): the compressors' selection and encoding (top-k,
// QSGD, PowerSGD, zero's 4-bit codes) and the one-sided windows' staging (adpsgd, ps).
#pragma once

#include <cstddef>
#include <utility>

#include "core/buffer.hpp"

namespace dsgd {

// One SGD step's constants (algorithms/optimizer.hpp's SgdOptions, in float32).
struct SgdUpdate {
  float lr = 0, momentum = 0, weight_decay = 0;
  bool nesterov = false;
};
// One AdamW step's constants, bias corrections folded in (algorithms/optimizer.cpp).
struct AdamWUpdate {
  float beta1 = 0, beta2 = 0, eps = 0;
  float decay = 1;        // 1 − lr·weight_decay
  float step_size = 0;    // lr / (1 − β1^t)
  float inv_sqrt_c2 = 1;  // 1 / sqrt(1 − β2^t)
};

class VectorOps {
 public:
  virtual ~VectorOps() = default;
  virtual Device device() const = 0;

  // ---- memory -------------------------------------------------------------------------
  // `bytes` of zero-filled memory on this device (throws Error when it cannot).
  virtual void* allocate(size_t bytes) = 0;
  virtual void deallocate(void* p) = 0;
  // dst ← src, both on this device.
  virtual void copy(BufferView dst, ConstBufferView src) = 0;
  // Between this device and the host (host: a copy). src / dst: src.count / dst.count elements.
  virtual void copy_to_host(void* dst, ConstBufferView src) = 0;
  virtual void copy_from_host(BufferView dst, const void* src) = 0;
  // Every operation enqueued so far has completed (host: nothing to wait for).
  virtual void synchronize() {}

  // ---- float32 elementwise, for each i ------------------------------------------------
  virtual void fill(BufferView x, float value) = 0;                            // x ← value
  virtual void scale(BufferView x, float a) = 0;                               // x ← a·x
  virtual void scale_copy(BufferView y, float a, ConstBufferView x) = 0;       // y ← a·x
  virtual void axpy(BufferView y, float a, ConstBufferView x) = 0;             // y ← y + a·x
  virtual void scale_add(BufferView y, float a, ConstBufferView x) = 0;        // y ← a·y + x
  virtual void blend(BufferView y, float a, float b, ConstBufferView x) = 0;   // y ← a·y + b·x
  virtual void add(BufferView out, ConstBufferView a, ConstBufferView b) = 0;  // out ← a + b
  virtual void sub(BufferView out, ConstBufferView a, ConstBufferView b) = 0;  // out ← a − b
  // x ← avg + (x − base): moves a replica by the change of its average, keeping its local
  // progress since `base` was taken. only_changed: elements with avg == base keep x exactly.
  virtual void rebase(BufferView x, ConstBufferView avg, ConstBufferView base, bool only_changed) = 0;

  // ---- optimizer updates (the formulas of algorithms/optimizer.hpp) --------------------
  // velocity: unused (may be empty) when u.momentum == 0.
  virtual void sgd_update(BufferView x, BufferView velocity, ConstBufferView g, const SgdUpdate& u) = 0;
  virtual void adamw_update(BufferView x, BufferView m, BufferView v, ConstBufferView g, const AdamWUpdate& u) = 0;
};

// The host implementation (always available).
VectorOps& vector_ops_host();
// The operations of d's memory: host → vector_ops_host(); otherwise the one registered for
// d.kind, which must serve d (Error naming the device when none is: "not built" / "no device").
VectorOps& vector_ops_for(Device d);
// Registers the operations of one device kind (nullptr: removes it). Not for device_host.
void vector_ops_register(DeviceKind kind, VectorOps* ops);

// An owning float32 buffer on one device, allocated through its VectorOps (zero-filled),
// freed on destruction; move-only. Algorithms keep their own state in these (allocated in
// setup, never in the step).
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(Device d, size_t count) { assign(d, count); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept { swap(o); }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    swap(o);
    return *this;
  }
  ~DeviceBuffer() { release(); }

  // (Re)allocates `count` zero floats on d.
  void assign(Device d, size_t count);
  // (Re)allocates and copies src (on src's device).
  void assign_copy(ConstBufferView src);
  void release();

  float* data() { return data_; }
  const float* data() const { return data_; }
  size_t size() const { return count_; }
  bool empty() const { return count_ == 0; }
  Device device() const { return device_; }
  BufferView view() { return BufferView{data_, count_, DType::dtype_f32, device_}; }
  ConstBufferView view() const { return ConstBufferView{data_, count_, DType::dtype_f32, device_}; }
  BufferView slice(size_t offset, size_t n) { return view().slice(offset, n); }
  ConstBufferView slice(size_t offset, size_t n) const { return view().slice(offset, n); }

 private:
  void swap(DeviceBuffer& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(count_, o.count_);
    std::swap(device_, o.device_);
  }
  float* data_ = nullptr;
  size_t count_ = 0;
  Device device_{};
};

}  // namespace dsgd
