// Recording wrappers of the Communicator interface and the single-rank backend.
#include "cluster/communicator.hpp"

#include <cstdlib>

#include "core/clock.hpp"

namespace dsgd {

const char* coll_kind_name(CollKind kind) {
  switch (kind) {
    case CollKind::coll_allreduce: return "allreduce";
    case CollKind::coll_broadcast: return "broadcast";
    case CollKind::coll_allgather: return "allgather";
    case CollKind::coll_reduce_scatter: return "reduce_scatter";
    case CollKind::coll_barrier: return "barrier";
  }
  return "unknown";
}

double ring_allreduce_bytes_sent(double bytes, int n) { return n <= 1 ? 0.0 : 2.0 * (n - 1) / n * bytes; }

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

void Communicator::iallreduce_sum(float* data, size_t count, CollRequest& r) {
  r.data = data;
  r.count = count;
  r.average = false;
  r.completed = 0;
  r.launch = now();
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
  const double bytes = double(r.count) * sizeof(float);
  // Emulated link: the operation cannot finish before launch + its modelled extra time.
  if (emulation_.extra_s) {
    const double extra = emulation_.extra_s(emulation_.ctx, CollKind::coll_allreduce, bytes, size());
    hold_until(r.launch + extra);
  }
  const int n = size();
  if (r.average) divide_by_size(r.data, r.count);
  if (log_) {
    double in_flight_until = compute_end > 0 && compute_end < arrive ? compute_end : arrive;
    if (r.completed > 0 && r.completed < in_flight_until) in_flight_until = r.completed;
    log_->push(CollEvent{arrive, now(), ring_allreduce_bytes_sent(bytes, n),
                         static_cast<int32_t>(CollKind::coll_allreduce), r.launch, in_flight_until});
  }
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
};

}  // namespace

std::unique_ptr<Communicator> communicator_create_self() { return std::make_unique<SelfCommunicator>(); }

#ifndef DSGD_HAVE_MPI
std::unique_ptr<Communicator> communicator_create_world(int*, char***) { return communicator_create_self(); }
#endif

}  // namespace dsgd
