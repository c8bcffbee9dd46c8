// Recording wrappers of the Communicator interface and the single-rank backend.
#include "cluster/communicator.hpp"

#include <algorithm>
#include <cstdlib>
#include <thread>

#include "core/clock.hpp"
#include "core/errors.hpp"
#include "core/vector_ops.hpp"

namespace dsgd {

const char* coll_kind_name(CollKind kind) {
  switch (kind) {
    case CollKind::coll_allreduce: return "allreduce";
    case CollKind::coll_broadcast: return "broadcast";
    case CollKind::coll_allgather: return "allgather";
    case CollKind::coll_reduce_scatter: return "reduce_scatter";
    case CollKind::coll_barrier: return "barrier";
    case CollKind::coll_sendrecv: return "sendrecv";
    case CollKind::coll_onesided: return "onesided";
  }
  return "unknown";
}

double ring_allreduce_bytes_sent(double bytes, int n) {
  return n <= 1 ? 0.0 : 2.0 * (n - 1) / n * bytes;
}
double ring_scatter_gather_bytes_sent(double bytes, int n) {
  return n <= 1 ? 0.0 : double(n - 1) / n * bytes;
}

void Communicator::record(CollKind kind, double arrive, double bytes_sent) {
  if (!log_) return;
  log_->push(CollEvent{arrive, now(), bytes_sent, static_cast<int32_t>(kind), 0.0, 0.0});
}

// Host float32: the loop inline (the hot path of every averaging all-reduce); another
// device: its VectorOps (one call per buffer). Inside the collective's timed span, as in a
// real run (a real GPT's 1.9 MB gradient: ~120 µs of a 410 µs all-reduce on this project's
// 2-core machine); averaging_pass_done charges it on a virtual clock.
void Communicator::divide_by_size(BufferView data) {
  const int n = size();
  if (n <= 1) return;
  const float scale = 1.0f / static_cast<float>(n);
  if (!data.device.is_host()) {
    vector_ops_for(data.device).scale(data, scale);
  } else {
    float* x = data.f32();
    const size_t count = data.count;
    for (size_t i = 0; i < count; ++i) x[i] *= scale;
  }
  averaging_pass_done(double(data.bytes()));
}

void Communicator::emulate(CollKind kind, double bytes) {
  if (!emulation_.extra_s) return;
  const double extra = emulation_.extra_s(emulation_.ctx, kind, bytes, size());
  if (extra > 0) hold_until(now() + extra);
}

void Communicator::refuse(ConstBufferView v, const char* what) const {
  if (v.dtype != DType::dtype_f32)
    DSGD_THROW(Error, "pass float32 buffers", "{}: {} buffers are not supported (backend {})", what,
               dtype_name(v.dtype), backend_name());
  DSGD_THROW(Error, "keep the buffers in memory this backend accepts (dsgd-bench list backends)",
             "{}: backend {} does not take buffers on {}", what, backend_name(), device_name(v.device));
}

void Communicator::allreduce_sum(BufferView data) {
  check(data, "allreduce");
  const double arrive = log_ ? now() : 0.0;
  do_allreduce_sum(data);
  emulate(CollKind::coll_allreduce, double(data.bytes()));
  record(CollKind::coll_allreduce, arrive, ring_allreduce_bytes_sent(double(data.bytes()), size()));
}

void Communicator::allreduce_average(BufferView data) {
  check(data, "allreduce");
  const double arrive = log_ ? now() : 0.0;
  do_allreduce_sum(data);
  emulate(CollKind::coll_allreduce, double(data.bytes()));
  divide_by_size(data);
  record(CollKind::coll_allreduce, arrive, ring_allreduce_bytes_sent(double(data.bytes()), size()));
}

void Communicator::broadcast(BufferView data, int root) {
  check(data, "broadcast");
  const double arrive = log_ ? now() : 0.0;
  do_broadcast(data, root);
  emulate(CollKind::coll_broadcast, double(data.bytes()));
  record(CollKind::coll_broadcast, arrive, rank() == root ? double(data.bytes()) : 0.0);
}

void Communicator::begin_request(CollRequest& r, BufferView data, CollKind kind, double model_bytes,
                                 double bytes_sent) {
  r.data = data;
  r.average = false;
  r.completed = 0;
  r.launch = now();
  r.kind = kind;
  r.model_bytes = model_bytes;
  r.bytes_sent = bytes_sent;
}

void Communicator::iallreduce_sum(BufferView data, CollRequest& r) {
  check(data, "iallreduce");
  const double bytes = double(data.bytes());
  begin_request(r, data, CollKind::coll_allreduce, bytes, ring_allreduce_bytes_sent(bytes, size()));
  r.slot = do_iallreduce_sum_start(data);
}

void Communicator::iallreduce_average(BufferView data, CollRequest& r) {
  iallreduce_sum(data, r);
  r.average = true;
}

void Communicator::progress(CollRequest& r) {
  if (!r.active() || r.completed > 0) return;
  if (do_test(r.slot)) r.completed = now();
}

void Communicator::wait(CollRequest& r, double compute_end) {
  if (!r.active()) return;
  const double arrive = now();
  if (r.completed == 0) do_wait(r.slot);
  r.slot = -1;
  // Emulated link: the operation cannot finish before it had the link for its modelled extra
  // time. Requests in flight together share the rank's one link: each occupies it from
  // max(its launch, the end of the request waited for before it) (docs/cluster.md).
  if (emulation_.extra_s) {
    const double extra = emulation_.extra_s(emulation_.ctx, r.kind, r.model_bytes, size());
    const double start = r.launch > emulated_link_free_ ? r.launch : emulated_link_free_;
    emulated_link_free_ = start + extra;
    hold_until(emulated_link_free_);
  }
  if (r.average) divide_by_size(r.data);
  if (log_) {
    double in_flight_until = compute_end > 0 && compute_end < arrive ? compute_end : arrive;
    if (r.completed > 0 && r.completed < in_flight_until) in_flight_until = r.completed;
    log_->push(CollEvent{arrive, now(), r.bytes_sent, static_cast<int32_t>(r.kind), r.launch, in_flight_until});
  }
}

void Communicator::reduce_scatter_sum(ConstBufferView send, BufferView shard) {
  check(send, "reduce_scatter");
  check(shard, "reduce_scatter");
  const double arrive = log_ ? now() : 0.0;
  const double bytes = double(send.bytes());
  do_reduce_scatter_sum(send, shard);
  emulate(CollKind::coll_reduce_scatter, bytes);
  record(CollKind::coll_reduce_scatter, arrive, ring_scatter_gather_bytes_sent(bytes, size()));
}

void Communicator::reduce_scatter_average(ConstBufferView send, BufferView shard) {
  check(send, "reduce_scatter");
  check(shard, "reduce_scatter");
  const double arrive = log_ ? now() : 0.0;
  const double bytes = double(send.bytes());
  do_reduce_scatter_sum(send, shard);
  emulate(CollKind::coll_reduce_scatter, bytes);
  divide_by_size(shard.slice(0, shard_count(send.count)));
  record(CollKind::coll_reduce_scatter, arrive, ring_scatter_gather_bytes_sent(bytes, size()));
}

void Communicator::allgather(BufferView data) {
  check(data, "allgather");
  const double arrive = log_ ? now() : 0.0;
  const double bytes = double(data.bytes());
  do_allgather(data);
  emulate(CollKind::coll_allgather, bytes);
  record(CollKind::coll_allgather, arrive, ring_scatter_gather_bytes_sent(bytes, size()));
}

void Communicator::iallgather(BufferView data, CollRequest& r) {
  check(data, "iallgather");
  const double bytes = double(data.bytes());
  begin_request(r, data, CollKind::coll_allgather, bytes, ring_scatter_gather_bytes_sent(bytes, size()));
  r.slot = do_iallgather_start(data);
}

int Communicator::exchange_start(ConstBufferView send, const int* dests, size_t n_dests, BufferView recv,
                                 size_t recv_count, const int* sources, size_t n_sources, CollRequest& r) {
  check(send, "sendrecv");
  check(recv, "sendrecv");
  const double bytes = double(send.bytes()) * double(n_dests);
  begin_request(r, recv.slice(0, recv_count * n_sources), CollKind::coll_sendrecv, bytes, bytes);
  r.slot = do_exchange_start(send, dests, n_dests, recv, recv_count, sources, n_sources);
  return r.slot;
}

void Communicator::isendrecv(ConstBufferView send, int dest, BufferView recv, int source, CollRequest& r) {
  exchange_start(send, &dest, 1, recv, recv.count, &source, 1, r);
}

void Communicator::sendrecv(ConstBufferView send, int dest, BufferView recv, int source) {
  CollRequest r;
  isendrecv(send, dest, recv, source, r);
  finish_blocking(r);
}

void Communicator::ineighbor_exchange(ConstBufferView send, const int* peers, size_t n_peers, BufferView recv,
                                      CollRequest& r) {
  exchange_start(send, peers, n_peers, recv, send.count, peers, n_peers, r);
}

void Communicator::neighbor_exchange(ConstBufferView send, const int* peers, size_t n_peers, BufferView recv) {
  CollRequest r;
  ineighbor_exchange(send, peers, n_peers, recv, r);
  finish_blocking(r);
}

// A blocking point-to-point operation started through the non-blocking path: recorded like
// a blocking collective (arrival at launch, no in-flight interval), held by the emulation
// from its launch.
void Communicator::finish_blocking(CollRequest& r) {
  do_wait(r.slot);
  r.slot = -1;
  if (emulation_.extra_s) hold_until(r.launch + emulation_.extra_s(emulation_.ctx, r.kind, r.model_bytes, size()));
  if (log_) log_->push(CollEvent{r.launch, now(), r.bytes_sent, static_cast<int32_t>(r.kind), 0.0, 0.0});
}

void Communicator::window_create(size_t count) {
  do_window_create(count);
  window_open_ = true;
}
void Communicator::window_free() {
  window_open_ = false;
  do_window_free();
}

void Communicator::window_lock(int rank) {
  epoch_arrive_ = now();
  epoch_emulated_s_ = epoch_put_bytes_ = 0;
  do_window_lock(rank);
}

// Each remote access of an epoch is one emulated message (α + S/B each: a get and a put cross
// the link one after the other), as the simulator times them.
void Communicator::window_get(BufferView dst, int rank, uint64_t* version) {
  check(dst, "window_get");
  do_window_get(dst, rank, version);
  if (rank != this->rank() && emulation_.extra_s)
    epoch_emulated_s_ += emulation_.extra_s(emulation_.ctx, CollKind::coll_onesided, double(dst.bytes()), size());
}

void Communicator::window_put(ConstBufferView src, int rank, uint64_t version) {
  check(src, "window_put");
  do_window_put(src, rank, version);
  if (rank != this->rank()) {
    epoch_put_bytes_ += double(src.bytes());
    if (emulation_.extra_s)
      epoch_emulated_s_ += emulation_.extra_s(emulation_.ctx, CollKind::coll_onesided, double(src.bytes()), size());
  }
}

void Communicator::window_unlock(int rank) {
  // The emulated transfer ends before the lock is released: on a real link the target's window
  // stays locked until the epoch's data has crossed it, so a rank waiting for that lock waits
  // for the transfer too (as the simulator's window does).
  if (epoch_emulated_s_ > 0) hold_until(epoch_arrive_ + epoch_emulated_s_);
  do_window_unlock(rank);
  record(CollKind::coll_onesided, epoch_arrive_, epoch_put_bytes_);
}

uint64_t Communicator::window_poll(BufferView dst, int rank, WindowReady ready, const void* ctx) {
  const float* host = dst.host_f32("window_poll");  // ready() reads it
  const double arrive = now();
  uint64_t version = 0;
  for (;;) {
    const double polled_at = now();
    do_window_lock(rank);
    do_window_get(dst, rank, &version);
    do_window_unlock(rank);
    if (ready(host, version, ctx)) break;
    do_window_progress();
    do_window_poll_wait(rank, polled_at);
  }
  if (emulation_.extra_s && rank != this->rank())
    hold_until(now() + emulation_.extra_s(emulation_.ctx, CollKind::coll_onesided, double(dst.bytes()), size()));
  record(CollKind::coll_onesided, arrive, 0.0);
  return version;
}

void Communicator::do_window_poll_wait(int, double) {
  std::this_thread::yield();
}

[[noreturn]] void Communicator::unsupported(const char* what) const {
  DSGD_THROW(Error, "use the mpi backend, or implement the operation in this backend",
             "backend {} does not implement {}", backend_name(), what);
}

void Communicator::do_reduce_scatter_sum(ConstBufferView, BufferView) {
  unsupported("reduce_scatter");
}
void Communicator::do_allgather(BufferView) {
  unsupported("allgather");
}
int Communicator::do_iallgather_start(BufferView) {
  unsupported("iallgather");
}
void Communicator::do_window_create(size_t) {
  unsupported("one-sided windows");
}
void Communicator::do_window_free() {
  unsupported("one-sided windows");
}
void Communicator::do_window_lock(int) {
  unsupported("one-sided windows");
}
void Communicator::do_window_unlock(int) {
  unsupported("one-sided windows");
}
void Communicator::do_window_get(BufferView, int, uint64_t*) {
  unsupported("one-sided windows");
}
void Communicator::do_window_put(ConstBufferView, int, uint64_t) {
  unsupported("one-sided windows");
}
int Communicator::do_exchange_start(ConstBufferView, const int*, size_t, BufferView, size_t, const int*, size_t) {
  unsupported("sendrecv (point-to-point exchange)");
}

void Communicator::bare_allreduce_sum(BufferView data) {
  untimed_allreduce_sum(data.host_f32("bare all-reduce"), data.count);
}

void Communicator::barrier() {
  const double arrive = log_ ? now() : 0.0;
  do_barrier();
  emulate(CollKind::coll_barrier, 0.0);
  record(CollKind::coll_barrier, arrive, 0.0);
}

namespace {

// One rank, no communication: every collective is the identity.
class SelfCommunicator final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string backend_name() const override { return "self"; }
  std::string library_version() const override { return "none (single process)"; }
  int ranks_on_this_host() const override { return 1; }
  void untimed_allreduce_sum(double*, size_t) override {}
  void untimed_allreduce_sum(float*, size_t) override {}
  void untimed_allreduce_max(double*, size_t) override {}
  void untimed_gather(const double* send, size_t count, double* recv, int) override {
    for (size_t i = 0; i < count; ++i) recv[i] = send[i];
  }
  void untimed_broadcast(double*, size_t, int) override {}
  void untimed_send(const double*, size_t, int) override {}
  void untimed_recv(double*, size_t, int) override {}
  void untimed_barrier() override {}
  [[noreturn]] void abort(int code) override { std::exit(code); }

 protected:
  void do_allreduce_sum(BufferView) override {}
  void do_broadcast(BufferView, int) override {}
  void do_barrier() override {}
  int do_iallreduce_sum_start(BufferView) override { return 0; }
  bool do_test(int) override { return true; }
  void do_wait(int) override {}
  void do_reduce_scatter_sum(ConstBufferView send, BufferView shard) override {
    std::copy(send.f32(), send.f32() + send.count, shard.f32());
  }
  void do_allgather(BufferView) override {}
  int do_iallgather_start(BufferView) override { return 0; }
  void do_window_create(size_t count) override {
    window_.assign(count, 0.0f);
    version_ = 0;
  }
  void do_window_free() override { window_.clear(); }
  void do_window_lock(int) override {}
  void do_window_unlock(int) override {}
  void do_window_get(BufferView dst, int, uint64_t* version) override {
    std::copy(window_.begin(), window_.begin() + static_cast<ptrdiff_t>(dst.count), dst.f32());
    *version = version_;
  }
  void do_window_put(ConstBufferView src, int, uint64_t version) override {
    std::copy(src.f32(), src.f32() + src.count, window_.begin());
    version_ = version;
  }
  std::vector<float> window_;
  uint64_t version_ = 0;
  // The only peer is this rank: each receive is a copy of the send buffer.
  int do_exchange_start(ConstBufferView send, const int* dests, size_t n_dests, BufferView recv, size_t recv_count,
                        const int* sources, size_t n_sources) override {
    for (size_t k = 0; k < n_dests; ++k)
      if (dests[k] != 0) DSGD_THROW(Error, "this is a bug: a single rank has no peers", "send to rank {}", dests[k]);
    for (size_t k = 0; k < n_sources; ++k) {
      if (sources[k] != 0 || recv_count != send.count || n_dests == 0)
        DSGD_THROW(Error, "this is a bug: a single rank has no peers", "receive from rank {}", sources[k]);
      std::copy(send.f32(), send.f32() + send.count, recv.f32() + k * recv_count);
    }
    return 0;
  }
};

}  // namespace

std::unique_ptr<Communicator> communicator_create_self() {
  return std::make_unique<SelfCommunicator>();
}

#ifndef DSGD_HAVE_MPI
std::unique_ptr<Communicator> communicator_create_world(int*, char***) {
  return communicator_create_self();
}
#endif

}  // namespace dsgd
