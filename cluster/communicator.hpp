// The Communicator interface every algorithm is written against, and the recording of
// each collective's arrival and departure time that separates `wait` (blocked until the
// slowest peer arrives) from `comm` (data moving) after the run, without extra messages
// in the training loop (docs/metrics.md).
//
// Public methods are non-virtual: they record the event, then call the backend's do_*.
// Backends: MpiCommunicator (cluster/mpi_communicator.cpp) and SelfCommunicator (one
// rank, no MPI). The untimed_* helpers are for the harness (evaluation, flushing
// timings, clock sync) and are never recorded.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/clock.hpp"

namespace dsgd {

enum class CollKind : int32_t {
  coll_allreduce = 0,
  coll_broadcast = 1,
  coll_allgather = 2,
  coll_reduce_scatter = 3,
  coll_barrier = 4,
};
const char* coll_kind_name(CollKind kind);

// One recorded collective on one rank: now() when the rank entered it (arrive)
// and when it returned (depart), and the bytes this rank sent under the ring algorithm.
// For a non-blocking collective, arrive is when the rank called wait(), and
// [launch, in_flight_until] the interval it was in flight while the rank computed
// (docs/metrics.md); both are 0 for a blocking collective.
struct CollEvent {
  double arrive = 0;
  double depart = 0;
  double bytes_sent = 0;
  int32_t kind = 0;
  double launch = 0;
  double in_flight_until = 0;
};

// Fixed-capacity event log, allocated once; the trainer clears it at each flush.
class CollEventLog {
 public:
  void reserve(size_t capacity) { events_.resize(capacity); }
  void clear() { size_ = 0; }
  size_t size() const { return size_; }
  const CollEvent* data() const { return events_.data(); }
  // Returns false (and drops the event) when full; the trainer sizes it so this never happens.
  bool push(const CollEvent& e) {
    if (size_ >= events_.size()) {
      ++dropped_;
      return false;
    }
    events_[size_++] = e;
    return true;
  }
  size_t dropped() const { return dropped_; }

 private:
  std::vector<CollEvent> events_;
  size_t size_ = 0;
  size_t dropped_ = 0;
};

// Network emulation (cluster/network_model.hpp, NetworkEmulation): the extra seconds every rank holds a
// collective after the real one finished, so that it lasts as long as on the emulated
// link: model(emulated, bytes) − model(native fabric, bytes), identical on every rank.
// A plain function pointer + context: calling it never allocates.
struct EmulationHook {
  double (*extra_s)(const void* ctx, CollKind kind, double bytes, int ranks) = nullptr;
  const void* ctx = nullptr;
};

// Compute phases of a step, for Communicator::compute_done (the sim backend's cost model).
enum class ComputePhase : int32_t {
  phase_data = 0,            // load_batch
  phase_forward = 1,
  phase_backward_layer = 2,  // one layer's gradient is final (from the layer hook)
  phase_backward = 3,        // backward returned (the part after the last layer hook)
  phase_optimizer = 4,
};

// A non-blocking collective in flight (Communicator::iallreduce_*). Plain data, reusable:
// an algorithm keeps one per bucket, allocated once.
struct CollRequest {
  int slot = -1;        // backend request slot; −1 when not in flight
  float* data = nullptr;
  size_t count = 0;
  bool average = false;
  double launch = 0;     // now() at launch
  double completed = 0;  // first time progress() saw it complete (0: not seen)
  bool active() const { return slot >= 0; }
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string backend_name() const = 0;
  virtual std::string library_version() const = 0;
  // Ranks of this job that run on this host (for oversubscription warnings).
  virtual int ranks_on_this_host() const = 0;

  // The clock seam (docs/sim.md). Every timestamp the trainer, the recorder and the
  // algorithms take comes from now(). Real backends read the wall clock and a compute
  // phase takes the time it takes; the sim backend returns the worker's virtual time and
  // compute_done advances it by the modelled cost of the phase that just ended.
  virtual double now() const { return clock_now_s(); }
  virtual void hold_until(double deadline) { clock_hold_until(deadline); }
  virtual void compute_done(ComputePhase phase, size_t layer = 0) {}
  // Backend details stored with the run's configuration (a JSON object's text; empty: none).
  virtual std::string backend_details() const { return {}; }

  // Recorded collectives on float buffers (in place).
  void allreduce_sum(float* data, size_t count);
  void allreduce_average(float* data, size_t count);  // sum, then scale by 1/size
  void broadcast(float* data, size_t count, int root);
  void barrier();

  // Non-blocking all-reduce: launch, then progress() while computing (drives MPI's
  // progress and notes completion), then wait(). The buffer must not be touched in between.
  void iallreduce_sum(float* data, size_t count, CollRequest& request);
  void iallreduce_average(float* data, size_t count, CollRequest& request);
  void progress(CollRequest& request);
  // compute_end: when the rank stopped computing to wait for its requests (0: this wait
  // call); a request's overlap ends there even when waits for other requests came first.
  void wait(CollRequest& request, double compute_end = 0);

  // Events are recorded only while a log is attached.
  void attach_log(CollEventLog* log) { log_ = log; }
  // Recorded collectives are held by hook.extra_s(...) seconds; default: nothing added.
  // Backends that model the network themselves (sim) ignore it.
  void set_emulation(EmulationHook hook) {
    if (!models_network()) emulation_ = hook;
  }

  // Untimed harness helpers.
  virtual void untimed_allreduce_sum(double* data, size_t count) = 0;
  virtual void untimed_allreduce_sum(float* data, size_t count) = 0;
  virtual void untimed_allreduce_max(double* data, size_t count) = 0;
  // Gathers `count` doubles from every rank into recv (size × count) on root.
  virtual void untimed_gather(const double* send, size_t count, double* recv, int root) = 0;
  virtual void untimed_broadcast(double* data, size_t count, int root) = 0;
  virtual void untimed_send(const double* data, size_t count, int peer) = 0;
  virtual void untimed_recv(double* data, size_t count, int peer) = 0;
  virtual void untimed_barrier() = 0;
  // Stops every rank of the job (after an error on one of them).
  [[noreturn]] virtual void abort(int code) = 0;

 protected:
  virtual bool models_network() const { return false; }
  virtual void do_allreduce_sum(float* data, size_t count) = 0;
  virtual void do_broadcast(float* data, size_t count, int root) = 0;
  virtual void do_barrier() = 0;
  // Non-blocking: start returns a slot; test/wait complete it (and free the slot).
  virtual int do_iallreduce_sum_start(float* data, size_t count) = 0;
  virtual bool do_test(int slot) = 0;
  virtual void do_wait(int slot) = 0;

 private:
  void record(CollKind kind, double arrive, double bytes_sent);
  void divide_by_size(float* data, size_t count) const;
  void emulate(CollKind kind, double bytes);
  CollEventLog* log_ = nullptr;
  EmulationHook emulation_;
};

// The communicator of this process: MPI's world when built with MPI (initialising MPI),
// otherwise a single rank.
std::unique_ptr<Communicator> communicator_create_world(int* argc, char*** argv);
// A single-rank communicator without MPI (tests, serial reference).
std::unique_ptr<Communicator> communicator_create_self();

// Bytes one rank sends in a ring all-reduce of `bytes` over n ranks: 2(n-1)/n × bytes.
double ring_allreduce_bytes_sent(double bytes, int n);

}  // namespace dsgd
