// Recording wrappers of the Communicator interface and the single-rank backend.
#include "cluster/communicator.hpp"

#include <algorithm>
#include <cstdlib>
#include <thread>

#include "core/clock.hpp"
#include "core/errors.hpp"

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

void Communicator::divide_by_size(float* data, size_t count) const {
  const int n = size();
  if (n <= 1) return;
  const float scale = 1.0f / static_cast<float>(n);
  for (size_t i = 0; i < count; ++i) data[i] *= scale;
}

void Communicator::emulate(CollKind kind, double bytes) {
  if (!emulation_.extra_s) return;
  const double extra = emulation_.extra_s(emulation_.ctx, kind, bytes, size());
  if (extra > 0) hold_until(now() + extra);
}

void Communicator::allreduce_sum(float* data, size_t count) {
  const double arrive = log_ ? now() : 0.0;
  do_allreduce_sum(data, count);
  emulate(CollKind::coll_allreduce, double(count) * sizeof(float));
  record(CollKind::coll_allreduce, arrive, ring_allreduce_bytes_sent(double(count) * sizeof(float), size()));
}

void Communicator::allreduce_average(float* data, size_t count) {
  const double arrive = log_ ? now() : 0.0;
  do_allreduce_sum(data, count);
  emulate(CollKind::coll_allreduce, double(count) * sizeof(float));
  divide_by_size(data, count);
  record(CollKind::coll_allreduce, arrive, ring_allreduce_bytes_sent(double(count) * sizeof(float), size()));
}

void Communicator::broadcast(float* data, size_t count, int root) {
  const double arrive = log_ ? now() : 0.0;
  do_broadcast(data, count, root);
  emulate(CollKind::coll_broadcast, double(count) * sizeof(float));
  record(CollKind::coll_broadcast, arrive, rank() == root ? double(count) * sizeof(float) : 0.0);
}

void Communicator::begin_request(CollRequest& r, float* data, size_t count, CollKind kind, double model_bytes,
                                 double bytes_sent) {
  r.data = data;
  r.count = count;
  r.average = false;
  r.completed = 0;
  r.launch = now();
  r.kind = kind;
  r.model_bytes = model_bytes;
  r.bytes_sent = bytes_sent;
}

void Communicator::iallreduce_sum(float* data, size_t count, CollRequest& r) {
  const double bytes = double(count) * sizeof(float);
  begin_request(r, data, count, CollKind::coll_allreduce, bytes, ring_allreduce_bytes_sent(bytes, size()));
  r.slot = do_iallreduce_sum_start(data, count);
}

void Communicator::iallreduce_average(float* data, size_t count, CollRequest& r) {
  iallreduce_sum(data, count, r);
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
  if (r.average) divide_by_size(r.data, r.count);
  if (log_) {
    double in_flight_until = compute_end > 0 && compute_end < arrive ? compute_end : arrive;
    if (r.completed > 0 && r.completed < in_flight_until) in_flight_until = r.completed;
    log_->push(CollEvent{arrive, now(), r.bytes_sent, static_cast<int32_t>(r.kind), r.launch, in_flight_until});
  }
}

void Communicator::reduce_scatter_sum(const float* send, float* shard, size_t count) {
  const double arrive = log_ ? now() : 0.0;
  const double bytes = double(count) * sizeof(float);
  do_reduce_scatter_sum(send, shard, count);
  emulate(CollKind::coll_reduce_scatter, bytes);
  record(CollKind::coll_reduce_scatter, arrive, ring_scatter_gather_bytes_sent(bytes, size()));
}

void Communicator::reduce_scatter_average(const float* send, float* shard, size_t count) {
  const double arrive = log_ ? now() : 0.0;
  const double bytes = double(count) * sizeof(float);
  do_reduce_scatter_sum(send, shard, count);
  emulate(CollKind::coll_reduce_scatter, bytes);
  const int n = size();
  divide_by_size(shard, shard_begin(count, n, rank() + 1) - shard_begin(count, n, rank()));
  record(CollKind::coll_reduce_scatter, arrive, ring_scatter_gather_bytes_sent(bytes, n));
}

void Communicator::allgather(float* data, size_t count) {
  const double arrive = log_ ? now() : 0.0;
  const double bytes = double(count) * sizeof(float);
  do_allgather(data, count);
  emulate(CollKind::coll_allgather, bytes);
  record(CollKind::coll_allgather, arrive, ring_scatter_gather_bytes_sent(bytes, size()));
}

void Communicator::iallgather(float* data, size_t count, CollRequest& r) {
  const double bytes = double(count) * sizeof(float);
  begin_request(r, data, count, CollKind::coll_allgather, bytes, ring_scatter_gather_bytes_sent(bytes, size()));
  r.slot = do_iallgather_start(data, count);
}

int Communicator::exchange_start(const float* send, size_t send_count, const int* dests, size_t n_dests, float* recv,
                                 size_t recv_count, const int* sources, size_t n_sources, CollRequest& r) {
  const double bytes = double(send_count) * sizeof(float) * double(n_dests);
  begin_request(r, recv, recv_count * n_sources, CollKind::coll_sendrecv, bytes, bytes);
  r.slot = do_exchange_start(send, send_count, dests, n_dests, recv, recv_count, sources, n_sources);
  return r.slot;
}

void Communicator::isendrecv(const float* send, size_t send_count, int dest, float* recv, size_t recv_count, int source,
                             CollRequest& r) {
  exchange_start(send, send_count, &dest, 1, recv, recv_count, &source, 1, r);
}

void Communicator::sendrecv(const float* send, size_t send_count, int dest, float* recv, size_t recv_count,
                            int source) {
  CollRequest r;
  isendrecv(send, send_count, dest, recv, recv_count, source, r);
  finish_blocking(r);
}

void Communicator::ineighbor_exchange(const float* send, size_t count, const int* peers, size_t n_peers, float* recv,
                                      CollRequest& r) {
  exchange_start(send, count, peers, n_peers, recv, count, peers, n_peers, r);
}

void Communicator::neighbor_exchange(const float* send, size_t count, const int* peers, size_t n_peers, float* recv) {
  CollRequest r;
  ineighbor_exchange(send, count, peers, n_peers, recv, r);
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
}
void Communicator::window_free() {
  do_window_free();
}

void Communicator::window_lock(int rank) {
  epoch_arrive_ = now();
  epoch_remote_bytes_ = epoch_put_bytes_ = 0;
  do_window_lock(rank);
}

void Communicator::window_get(float* dst, size_t count, int rank, uint64_t* version) {
  do_window_get(dst, count, rank, version);
  if (rank != this->rank()) epoch_remote_bytes_ += double(count) * sizeof(float);
}

void Communicator::window_put(const float* src, size_t count, int rank, uint64_t version) {
  do_window_put(src, count, rank, version);
  if (rank != this->rank()) {
    epoch_remote_bytes_ += double(count) * sizeof(float);
    epoch_put_bytes_ += double(count) * sizeof(float);
  }
}

void Communicator::window_unlock(int rank) {
  do_window_unlock(rank);
  if (emulation_.extra_s && epoch_remote_bytes_ > 0)
    hold_until(epoch_arrive_ +
               emulation_.extra_s(emulation_.ctx, CollKind::coll_onesided, epoch_remote_bytes_, size()));
  record(CollKind::coll_onesided, epoch_arrive_, epoch_put_bytes_);
}

uint64_t Communicator::window_poll(float* dst, size_t count, int rank, WindowReady ready, const void* ctx) {
  const double arrive = now();
  uint64_t version = 0;
  for (;;) {
    do_window_lock(rank);
    do_window_get(dst, count, rank, &version);
    do_window_unlock(rank);
    if (ready(dst, version, ctx)) break;
    do_window_progress();
    std::this_thread::yield();  // let the writers we wait for take the lock
  }
  if (emulation_.extra_s && rank != this->rank())
    hold_until(now() +
               emulation_.extra_s(emulation_.ctx, CollKind::coll_onesided, double(count) * sizeof(float), size()));
  record(CollKind::coll_onesided, arrive, 0.0);
  return version;
}

[[noreturn]] void Communicator::unsupported(const char* what) const {
  DSGD_THROW(Error, "use the mpi backend, or implement the operation in this backend",
             "backend {} does not implement {}", backend_name(), what);
}

void Communicator::do_reduce_scatter_sum(const float*, float*, size_t) {
  unsupported("reduce_scatter");
}
void Communicator::do_allgather(float*, size_t) {
  unsupported("allgather");
}
int Communicator::do_iallgather_start(float*, size_t) {
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
void Communicator::do_window_get(float*, size_t, int, uint64_t*) {
  unsupported("one-sided windows");
}
void Communicator::do_window_put(const float*, size_t, int, uint64_t) {
  unsupported("one-sided windows");
}
int Communicator::do_exchange_start(const float*, size_t, const int*, size_t, float*, size_t, const int*, size_t) {
  unsupported("sendrecv (point-to-point exchange)");
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
  void do_allreduce_sum(float*, size_t) override {}
  void do_broadcast(float*, size_t, int) override {}
  void do_barrier() override {}
  int do_iallreduce_sum_start(float*, size_t) override { return 0; }
  bool do_test(int) override { return true; }
  void do_wait(int) override {}
  void do_reduce_scatter_sum(const float* send, float* shard, size_t count) override {
    std::copy(send, send + count, shard);
  }
  void do_allgather(float*, size_t) override {}
  int do_iallgather_start(float*, size_t) override { return 0; }
  void do_window_create(size_t count) override {
    window_.assign(count, 0.0f);
    version_ = 0;
  }
  void do_window_free() override { window_.clear(); }
  void do_window_lock(int) override {}
  void do_window_unlock(int) override {}
  void do_window_get(float* dst, size_t count, int, uint64_t* version) override {
    std::copy(window_.begin(), window_.begin() + static_cast<ptrdiff_t>(count), dst);
    *version = version_;
  }
  void do_window_put(const float* src, size_t count, int, uint64_t version) override {
    std::copy(src, src + count, window_.begin());
    version_ = version;
  }
  std::vector<float> window_;
  uint64_t version_ = 0;
  // The only peer is this rank: each receive is a copy of the send buffer.
  int do_exchange_start(const float* send, size_t send_count, const int* dests, size_t n_dests, float* recv,
                        size_t recv_count, const int* sources, size_t n_sources) override {
    for (size_t k = 0; k < n_dests; ++k)
      if (dests[k] != 0) DSGD_THROW(Error, "this is a bug: a single rank has no peers", "send to rank {}", dests[k]);
    for (size_t k = 0; k < n_sources; ++k) {
      if (sources[k] != 0 || recv_count != send_count || n_dests == 0)
        DSGD_THROW(Error, "this is a bug: a single rank has no peers", "receive from rank {}", sources[k]);
      std::copy(send, send + send_count, recv + k * recv_count);
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
