// Test helper: a "shadow" device that stands in for a GPU on a CPU-only machine. Its memory is
// host memory behind pointers with the top address bit flipped (non-canonical on x86-64), so
// any host code that dereferences a pointer of this device instead of going through its
// VectorOps or the Communicator crashes the test at once. ShadowVectorOps translates the
// pointers back and runs the host operations, so results are bit-identical to the host's;
// ShadowCommunicator wraps another backend (a SimCommunicator) and forwards every operation
// with the views translated to host views. A run on the shadow device that matches the host
// run bit for bit shows an algorithm's code never touches its model's memory directly.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "cluster/communicator.hpp"
#include "core/vector_ops.hpp"

namespace dsgd::testing {

constexpr Device kShadowDevice{DeviceKind::device_test, 0};
constexpr uintptr_t kShadowBit = uintptr_t(1) << 63;

inline void* shadow_to_host(const void* p) {
  return p ? reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(p) ^ kShadowBit) : nullptr;
}
inline BufferView shadow_host(BufferView v) {
  v.data = shadow_to_host(v.data);
  v.device = kHostDevice;
  return v;
}
inline ConstBufferView shadow_host(ConstBufferView v) {
  return ConstBufferView{shadow_to_host(v.data), v.count, v.dtype, kHostDevice};
}

class ShadowVectorOps final : public VectorOps {
 public:
  Device device() const override { return kShadowDevice; }
  void* allocate(size_t bytes) override {
    void* p = host().allocate(bytes);
    return p ? shadow_to_host(p) : nullptr;
  }
  void deallocate(void* p) override { host().deallocate(shadow_to_host(p)); }
  void copy(BufferView dst, ConstBufferView src) override { host().copy(h(dst), h(src)); }
  void copy_to_host(void* dst, ConstBufferView src) override { host().copy_to_host(dst, h(src)); }
  void copy_from_host(BufferView dst, const void* src) override { host().copy_from_host(h(dst), src); }
  void fill(BufferView x, float v) override { host().fill(h(x), v); }
  void scale(BufferView x, float a) override { host().scale(h(x), a); }
  void scale_copy(BufferView y, float a, ConstBufferView x) override { host().scale_copy(h(y), a, h(x)); }
  void axpy(BufferView y, float a, ConstBufferView x) override { host().axpy(h(y), a, h(x)); }
  void scale_add(BufferView y, float a, ConstBufferView x) override { host().scale_add(h(y), a, h(x)); }
  void blend(BufferView y, float a, float b, ConstBufferView x) override { host().blend(h(y), a, b, h(x)); }
  void add(BufferView o, ConstBufferView a, ConstBufferView b) override { host().add(h(o), h(a), h(b)); }
  void sub(BufferView o, ConstBufferView a, ConstBufferView b) override { host().sub(h(o), h(a), h(b)); }
  void rebase(BufferView x, ConstBufferView a, ConstBufferView b, bool only) override {
    host().rebase(h(x), h(a), h(b), only);
  }
  void sgd_update(BufferView x, BufferView v, ConstBufferView g, const SgdUpdate& u) override {
    host().sgd_update(h(x), h(v), h(g), u);
  }
  void adamw_update(BufferView x, BufferView m, BufferView v, ConstBufferView g, const AdamWUpdate& u) override {
    host().adamw_update(h(x), h(m), h(v), h(g), u);
  }
  int calls = 0;  // operations run (not counting memory management)

 private:
  VectorOps& host() { return vector_ops_host(); }
  // Every view given to this device must be on it.
  template <class View>
  View h(View v) {
    if (v.count > 0 && !(v.device == kShadowDevice)) std::abort();
    ++calls;
    return shadow_host(v);
  }
};

// Registers a ShadowVectorOps for the lifetime of the object.
class ShadowDeviceScope {
 public:
  ShadowDeviceScope() { vector_ops_register(DeviceKind::device_test, &ops); }
  ~ShadowDeviceScope() { vector_ops_register(DeviceKind::device_test, nullptr); }
  ShadowVectorOps ops;
};

// A backend whose buffers live on the shadow device: forwards to `inner` with host views.
class ShadowCommunicator final : public Communicator {
 public:
  explicit ShadowCommunicator(Communicator& inner) : inner_(inner), requests_(64) {}
  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  std::string backend_name() const override { return "shadow(" + inner_.backend_name() + ")"; }
  std::string library_version() const override { return inner_.library_version(); }
  int ranks_on_this_host() const override { return inner_.ranks_on_this_host(); }
  bool supports_device(Device d) const override { return d == kShadowDevice; }
  double now() const override { return inner_.now(); }
  void hold_until(double deadline) override { inner_.hold_until(deadline); }
  void compute_done(ComputePhase phase, size_t layer = 0) override { inner_.compute_done(phase, layer); }
  double compute_cost_s(ComputePhase phase, size_t layer = 0) const override {
    return inner_.compute_cost_s(phase, layer);
  }
  bool virtual_clock() const override { return inner_.virtual_clock(); }

  void untimed_allreduce_sum(double* d, size_t n) override { inner_.untimed_allreduce_sum(d, n); }
  void untimed_allreduce_sum(float* d, size_t n) override { inner_.untimed_allreduce_sum(d, n); }
  void untimed_allreduce_max(double* d, size_t n) override { inner_.untimed_allreduce_max(d, n); }
  void untimed_gather(const double* s, size_t n, double* r, int root) override { inner_.untimed_gather(s, n, r, root); }
  void untimed_broadcast(double* d, size_t n, int root) override { inner_.untimed_broadcast(d, n, root); }
  void untimed_send(const double* d, size_t n, int peer) override { inner_.untimed_send(d, n, peer); }
  void untimed_recv(double* d, size_t n, int peer) override { inner_.untimed_recv(d, n, peer); }
  void untimed_barrier() override { inner_.untimed_barrier(); }
  void bare_allreduce_sum(BufferView d) override { inner_.bare_allreduce_sum(shadow_host(d)); }
  [[noreturn]] void abort(int code) override {
    inner_.abort(code);
    std::abort();  // not reached: GCC cannot see through the virtual call that inner_.abort never returns
  }

 protected:
  void do_allreduce_sum(BufferView d) override { inner_.allreduce_sum(shadow_host(d)); }
  void do_broadcast(BufferView d, int root) override { inner_.broadcast(shadow_host(d), root); }
  void do_barrier() override { inner_.barrier(); }
  int do_iallreduce_sum_start(BufferView d) override {
    const int slot = free_slot();
    inner_.iallreduce_sum(shadow_host(d), requests_[static_cast<size_t>(slot)]);
    return slot;
  }
  bool do_test(int) override { return false; }  // completed by do_wait (numerics only)
  void do_wait(int slot) override { inner_.wait(requests_[static_cast<size_t>(slot)]); }
  void do_reduce_scatter_sum(ConstBufferView send, BufferView shard) override {
    inner_.reduce_scatter_sum(shadow_host(send), shadow_host(shard));
  }
  void do_allgather(BufferView d) override { inner_.allgather(shadow_host(d)); }
  int do_iallgather_start(BufferView d) override {
    const int slot = free_slot();
    inner_.iallgather(shadow_host(d), requests_[static_cast<size_t>(slot)]);
    return slot;
  }
  int do_exchange_start(ConstBufferView send, const int* dests, size_t n_dests, BufferView recv, size_t recv_count,
                        const int* sources, size_t n_sources) override {
    const int slot = free_slot();
    CollRequest& r = requests_[static_cast<size_t>(slot)];
    const bool neighbours =
        n_dests == n_sources && recv_count == send.count && std::equal(dests, dests + n_dests, sources);
    if (neighbours)
      inner_.ineighbor_exchange(shadow_host(send), dests, n_dests, shadow_host(recv), r);
    else if (n_dests == 1 && n_sources == 1)
      inner_.isendrecv(shadow_host(send), dests[0], shadow_host(recv).slice(0, recv_count), sources[0], r);
    else
      std::abort();  // not needed by the tests
    return slot;
  }

 private:
  int free_slot() {
    for (size_t i = 0; i < requests_.size(); ++i)
      if (!requests_[i].active()) return static_cast<int>(i);
    std::abort();
  }
  Communicator& inner_;
  std::vector<CollRequest> requests_;
};

}  // namespace dsgd::testing
