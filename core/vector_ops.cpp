// See vector_ops.hpp: the host implementation (plain loops, one float expression per element as
// the algorithms wrote them inline), the per-kind registry and DeviceBuffer.
#include "core/vector_ops.hpp"

#include <cmath>
#include <cstdlib>
#include <cstring>

#include "core/errors.hpp"

namespace dsgd {

namespace {

class HostVectorOps final : public VectorOps {
 public:
  Device device() const override { return kHostDevice; }

  void* allocate(size_t bytes) override {
    if (bytes == 0) return nullptr;
    const size_t rounded = (bytes + kAlign - 1) / kAlign * kAlign;
    void* p = std::aligned_alloc(kAlign, rounded);
    if (!p) DSGD_THROW(Error, "use a smaller model or fewer workers", "cannot allocate {} bytes of host memory", bytes);
    std::memset(p, 0, rounded);
    return p;
  }
  void deallocate(void* p) override { std::free(p); }
  void copy(BufferView dst, ConstBufferView src) override {
    if (src.count > 0 && dst.data != src.data) std::memmove(dst.data, src.data, src.bytes());
  }
  void copy_to_host(void* dst, ConstBufferView src) override {
    if (src.count > 0 && dst != src.data) std::memmove(dst, src.data, src.bytes());
  }
  void copy_from_host(BufferView dst, const void* src) override {
    if (dst.count > 0 && dst.data != src) std::memmove(dst.data, src, dst.bytes());
  }

  void fill(BufferView xv, float value) override {
    float* x = xv.f32();
    for (size_t i = 0; i < xv.count; ++i) x[i] = value;
  }
  void scale(BufferView xv, float a) override {
    float* x = xv.f32();
    for (size_t i = 0; i < xv.count; ++i) x[i] *= a;
  }
  void scale_copy(BufferView yv, float a, ConstBufferView xv) override {
    float* y = yv.f32();
    const float* x = xv.f32();
    for (size_t i = 0; i < yv.count; ++i) y[i] = a * x[i];
  }
  void axpy(BufferView yv, float a, ConstBufferView xv) override {
    float* y = yv.f32();
    const float* x = xv.f32();
    for (size_t i = 0; i < yv.count; ++i) y[i] += a * x[i];
  }
  void scale_add(BufferView yv, float a, ConstBufferView xv) override {
    float* y = yv.f32();
    const float* x = xv.f32();
    for (size_t i = 0; i < yv.count; ++i) y[i] = a * y[i] + x[i];
  }
  void blend(BufferView yv, float a, float b, ConstBufferView xv) override {
    float* y = yv.f32();
    const float* x = xv.f32();
    for (size_t i = 0; i < yv.count; ++i) y[i] = a * y[i] + b * x[i];
  }
  void add(BufferView outv, ConstBufferView av, ConstBufferView bv) override {
    float* out = outv.f32();
    const float *a = av.f32(), *b = bv.f32();
    for (size_t i = 0; i < outv.count; ++i) out[i] = a[i] + b[i];
  }
  void sub(BufferView outv, ConstBufferView av, ConstBufferView bv) override {
    float* out = outv.f32();
    const float *a = av.f32(), *b = bv.f32();
    for (size_t i = 0; i < outv.count; ++i) out[i] = a[i] - b[i];
  }
  void rebase(BufferView xv, ConstBufferView avgv, ConstBufferView basev, bool only_changed) override {
    float* x = xv.f32();
    const float *avg = avgv.f32(), *base = basev.f32();
    const size_t n = xv.count;
    if (only_changed) {
      for (size_t i = 0; i < n; ++i)
        if (avg[i] != base[i]) x[i] = avg[i] + (x[i] - base[i]);
    } else {
      for (size_t i = 0; i < n; ++i) x[i] = avg[i] + (x[i] - base[i]);
    }
  }

  void sgd_update(BufferView xv, BufferView velocity, ConstBufferView gv, const SgdUpdate& u) override {
    float* params = xv.f32();
    const float* grads = gv.f32();
    const size_t n = xv.count;
    const float lr = u.lr, mu = u.momentum, wd = u.weight_decay;
    if (mu == 0.0f) {
      for (size_t i = 0; i < n; ++i) params[i] -= lr * (grads[i] + wd * params[i]);
      return;
    }
    float* v = velocity.f32();
    if (u.nesterov) {
      for (size_t i = 0; i < n; ++i) {
        const float d = grads[i] + wd * params[i];
        v[i] = mu * v[i] + d;
        params[i] -= lr * (d + mu * v[i]);
      }
    } else {
      for (size_t i = 0; i < n; ++i) {
        v[i] = mu * v[i] + grads[i] + wd * params[i];
        params[i] -= lr * v[i];
      }
    }
  }
  void adamw_update(BufferView xv, BufferView mv, BufferView vv, ConstBufferView gv, const AdamWUpdate& u) override {
    float* params = xv.f32();
    float* m = mv.f32();
    float* v = vv.f32();
    const float* grads = gv.f32();
    const float b1 = u.beta1, b2 = u.beta2, eps = u.eps, decay = u.decay;
    const float step_size = u.step_size, inv_sqrt_c2 = u.inv_sqrt_c2;
    const size_t n = xv.count;
    for (size_t i = 0; i < n; ++i) {
      const float g = grads[i];
      m[i] = b1 * m[i] + (1.0f - b1) * g;
      v[i] = b2 * v[i] + (1.0f - b2) * g * g;
      const float denom = std::sqrt(v[i]) * inv_sqrt_c2 + eps;
      params[i] = params[i] * decay - step_size * m[i] / denom;
    }
  }

 private:
  static constexpr size_t kAlign = 64;
};

constexpr size_t kKinds = 3;
VectorOps* g_registered[kKinds] = {nullptr, nullptr, nullptr};

}  // namespace

VectorOps& vector_ops_host() {
  static HostVectorOps ops;
  return ops;
}

VectorOps& vector_ops_for(Device d) {
  if (d.is_host()) return vector_ops_host();
  const auto k = static_cast<size_t>(d.kind);
  VectorOps* ops = k < kKinds ? g_registered[k] : nullptr;
  if (!ops)
    DSGD_THROW(Error,
               d.kind == DeviceKind::device_cuda ? "build with the CUDA toolkit and run on a machine with a GPU"
                                                 : "register the device's operations first",
               "no vector operations for memory on {}", device_name(d));
  if (ops->device() != d)
    DSGD_THROW(Error, "use one device per process", "vector operations serve {}, not {}", device_name(ops->device()),
               device_name(d));
  return *ops;
}

void vector_ops_register(DeviceKind kind, VectorOps* ops) {
  const auto k = static_cast<size_t>(kind);
  if (kind == DeviceKind::device_host || k >= kKinds)
    DSGD_THROW(Error, "this is a bug", "vector_ops_register: device kind {} cannot be registered", k);
  g_registered[k] = ops;
}

void DeviceBuffer::assign(Device d, size_t count) {
  release();
  if (count == 0) {
    device_ = d;
    return;
  }
  data_ = static_cast<float*>(vector_ops_for(d).allocate(count * sizeof(float)));
  count_ = count;
  device_ = d;
}

void DeviceBuffer::assign_copy(ConstBufferView src) {
  assign(src.device, src.count);
  if (count_ > 0) vector_ops_for(device_).copy(view(), src);
}

void DeviceBuffer::release() {
  if (data_) vector_ops_for(device_).deallocate(data_);
  data_ = nullptr;
  count_ = 0;
}

}  // namespace dsgd
