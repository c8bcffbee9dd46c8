// The Communicator interface every algorithm is written against, and the recording of
// each collective's arrival and departure time that separates `wait` (blocked until the
// slowest peer arrives) from `comm` (data moving) after the run, without extra messages
// in the training loop (docs/metrics.md).
//
// Buffers are views (core/buffer.hpp: pointer, count, dtype, device), so one algorithm serves
// host and device memory; a non-blocking operation is a handle (CollRequest) to a request the
// backend owns. Public methods are non-virtual: they record the event, then call the backend's
// do_*. The averaging forms scale through the view's device's VectorOps (core/vector_ops.hpp).
// Backends: the rows of cluster/backends.hpp (MpiCommunicator, cluster/mpi_communicator.cpp;
// SimCommunicator, cluster/sim_world.hpp) and SelfCommunicator (one rank, no MPI). A backend
// accepts host memory unless it says otherwise (supports_device). The untimed_* helpers are
// for the harness (evaluation, flushing timings, clock sync): host values, never recorded.
//
// Host-pointer convenience overloads: every operation also takes plain host float pointers
// and counts (allreduce_sum(float*, size_t), ...). They build a host view and call the view
// form, inline; code written for host memory only may use them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "cluster/straggler.hpp"
#include "core/buffer.hpp"
#include "core/clock.hpp"

namespace dsgd {

enum class CollKind : int32_t {
  coll_allreduce = 0,
  coll_broadcast = 1,
  coll_allgather = 2,
  coll_reduce_scatter = 3,
  coll_barrier = 4,
  coll_sendrecv = 5,  // point-to-point: sendrecv and neighbour exchanges
  coll_onesided = 6,  // one-sided (RMA) access epoch: window_lock .. window_unlock
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
  // Overwrites event i (< size()): a device backend's times, known only after the fact
  // (NcclCommunicator::flush_device_timing).
  void replace(size_t i, const CollEvent& e) {
    if (i < size_) events_[i] = e;
  }

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
  phase_data = 0,  // load_batch
  phase_forward = 1,
  phase_backward_layer = 2,  // one layer's gradient is final (from the layer hook)
  phase_backward = 3,        // backward returned (the part after the last layer hook)
  phase_optimizer = 4,
  // The algorithm's own elementwise passes over a model-sized vector, outside compute and
  // communication (gossip's mix, a copy of the model to send); `layer` is how many.
  phase_model_passes = 5,
};

// The run's link classes (docs/cluster.md), for algorithms that adapt to them (adatopk): G
// groups of consecutive ranks (hier:GxW; 1: flat) and the bandwidth of a link inside a group
// and between groups as configured (--bandwidth, --inter-bandwidth), bytes/s; 0: not known
// (the native fabric, taken as uniform).
struct LinkClasses {
  int groups = 1;
  double intra_bytes_per_s = 0;
  double inter_bytes_per_s = 0;
};

// A handle to a non-blocking operation in flight (Communicator::iallreduce_*, iallgather,
// isendrecv, ineighbor_exchange), as c10d's Work: the backend owns the request itself (MPI's
// MPI_Requests, the simulator's sequence number, a CUDA event and stream with NCCL) in its
// slot table, and the handle names the slot. Plain data, reusable: an algorithm keeps one per
// bucket, allocated once; launching, testing and waiting never allocate.
struct CollRequest {
  int slot = -1;    // the backend's request slot; −1 when not in flight
  BufferView data;  // the buffer the operation writes (averaged in place at wait)
  bool average = false;
  double launch = 0;     // now() at launch
  double completed = 0;  // first time progress() saw it complete (0: not seen)
  CollKind kind = CollKind::coll_allreduce;
  double model_bytes = 0;  // S passed to the emulation hook
  double bytes_sent = 0;   // recorded bytes this rank sends
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
  // Whether the recorded operations accept buffers in d's memory (default: host only). A view
  // on a device the backend does not accept is refused with an Error naming both.
  virtual bool supports_device(Device d) const { return d.is_host(); }
  // Where this rank's buffers for the recorded operations belong (nccl: its GPU; default: host).
  virtual Device memory_device() const { return kHostDevice; }

  // The clock seam (docs/sim.md). Every timestamp the trainer, the recorder and the
  // algorithms take comes from now(). Real backends read the wall clock and a compute
  // phase takes the time it takes; the sim backend returns the worker's virtual time and
  // compute_done advances it by the modelled cost of the phase that just ended.
  virtual double now() const { return clock_now_s(); }
  // Holds (an emulated transfer's extra time, a straggler's delay) spin like a rank waiting
  // in MPI, unless this host runs more ranks than it has cores: then they sleep, leaving the
  // core to the others (docs/cluster.md, "Emulated network").
  virtual void hold_until(double deadline) { clock_hold_until(deadline, hold_may_sleep()); }
  virtual void compute_done(ComputePhase phase, size_t layer = 0) {}
  // The algorithm just made `passes` elementwise passes over a model-sized vector outside
  // compute and communication (a gossip mix: 1 + one per neighbour; a copy: 1): on a virtual
  // clock each costs the profile's measured model pass (docs/sim.md, "Model passes").
  void model_passes_done(size_t passes) { compute_done(ComputePhase::phase_model_passes, passes); }
  // An averaging collective just scaled `bytes` of its result by 1/size (divide_by_size): on
  // a virtual clock that costs the model pass pro rata, SimComputeCost::pass_s (docs/sim.md,
  // "Model passes"); on real backends it took the time it took.
  virtual void averaging_pass_done(double bytes) {}
  // The modelled seconds compute_done(phase, layer) adds on a virtual clock, for compute that
  // runs beside the worker's own (pdasgd's forward thread, algorithms/decoupled_forward.hpp);
  // 0 on real backends, where compute takes the time it takes.
  virtual double compute_cost_s(ComputePhase phase, size_t layer = 0) const { return 0.0; }
  // Whether now() is a virtual clock on which compute is modelled, not timed (sim): an
  // algorithm's helper threads then run inline on the worker's thread, so that a seed
  // reproduces the run (algorithms/local_threads.hpp).
  virtual bool virtual_clock() const { return false; }
  // Backend details stored with the run's configuration (a JSON object's text; empty: none).
  virtual std::string backend_details() const { return {}; }
  // The simulator's compute jitter (Stragglers::set_jitter's; empty: none, and on every real
  // backend, whose compute varies by itself).
  virtual ComputeJitter compute_jitter() const { return {}; }
  // A backend whose operations run on device streams (nccl) records each event at the call
  // and replaces its times with the device's here (cluster/device_timing.hpp); the recorder
  // calls it before it reads the log (StepRecorder::flush). Default: nothing to do.
  virtual void flush_device_timing() {}

  // Recorded collectives, in place on float32 views.
  void allreduce_sum(BufferView data);
  void allreduce_average(BufferView data);  // sum, then scale by 1/size
  void broadcast(BufferView data, int root);
  void barrier();

  // Non-blocking all-reduce: launch, then progress() while computing (drives the backend's
  // progress and notes completion), then wait(). The buffer must not be touched in between.
  void iallreduce_sum(BufferView data, CollRequest& request);
  void iallreduce_average(BufferView data, CollRequest& request);
  void progress(CollRequest& request);
  // (wait() also completes the non-blocking point-to-point operations below.)
  // compute_end: when the rank stopped computing to wait for its requests (0: this wait
  // call); a request's overlap ends there even when waits for other requests came first.
  void wait(CollRequest& request, double compute_end = 0);

  // Sharded collectives. Rank r's block ("shard") of a buffer of `count` floats is
  // [shard_begin(count, n, r), shard_begin(count, n, r + 1)) with shard_begin = ⌊count·r/n⌋,
  // so blocks differ by at most one float. Recorded bytes (ring): (n−1)/n · 4·count.
  static size_t shard_begin(size_t count, int n, int r) {
    return static_cast<size_t>((static_cast<unsigned __int128>(count) * static_cast<unsigned>(r)) /
                               static_cast<unsigned>(n));
  }
  // This rank's block length of a buffer of `count` floats.
  size_t shard_count(size_t count) const {
    return shard_begin(count, size(), rank() + 1) - shard_begin(count, size(), rank());
  }
  // shard ← this rank's block of Σ_ranks send (send: the whole buffer; shard: shard_count(send.count)
  // elements at least — its first shard_count elements are written).
  void reduce_scatter_sum(ConstBufferView send, BufferView shard);
  void reduce_scatter_average(ConstBufferView send, BufferView shard);  // then scale by 1/size
  // In place: every rank's block of data is sent to every rank.
  void allgather(BufferView data);
  // Non-blocking all-gather (same blocks, in place), completed by progress()/wait() like
  // iallreduce: recorded as CollKind::coll_allgather with the ring's (n−1)/n·4·count bytes,
  // held by the emulated link like the non-blocking all-reduce.
  void iallgather(BufferView data, CollRequest& request);

  // Point-to-point (CollKind::coll_sendrecv). sendrecv: send `send` to `dest` and receive
  // `recv` from `source` (either may be this rank). Recorded bytes: send.bytes(); the emulated
  // hold is one message α + S/B.
  void sendrecv(ConstBufferView send, int dest, BufferView recv, int source);
  void isendrecv(ConstBufferView send, int dest, BufferView recv, int source, CollRequest& request);
  // Neighbour exchange: send the same `send` to each of peers[0..n_peers) and receive
  // send.count floats from each into recv (n_peers·send.count floats; block k comes from
  // peers[k]). One recorded event per call whatever the degree, so ranks of different degree
  // record the same number of events. Recorded bytes: send.bytes()·n_peers; the emulated hold
  // is one message of that size (α + n_peers·S/B: the sends share the rank's link).
  void neighbor_exchange(ConstBufferView send, const int* peers, size_t n_peers, BufferView recv);
  void ineighbor_exchange(ConstBufferView send, const int* peers, size_t n_peers, BufferView recv,
                          CollRequest& request);

  // One-sided windows (MPI RMA, passive target). window_create (collective, untimed): every
  // rank exposes `count` floats and a version counter, all zero, in memory the backend owns
  // (host memory: no backend exposes device memory one-sidedly). An access epoch is
  // window_lock(rank) (exclusive; rank may be this one), any number of window_get /
  // window_put on that rank, window_unlock(rank); the epoch is recorded at unlock as one
  // CollKind::coll_onesided event from the lock call to the unlock's return, with the bytes put
  // to other ranks, and held by the emulation for one message of the bytes got + put remotely.
  // A one-sided event has no cross-rank wait: all of it counts as comm (docs/metrics.md).
  void window_create(size_t count);
  void window_free();
  void window_lock(int rank);
  void window_get(BufferView dst, int rank, uint64_t* version);
  void window_put(ConstBufferView src, int rank, uint64_t version);
  void window_unlock(int rank);
  // Waits on `rank`'s window: repeats lock, window_get(dst) with its version, unlock,
  // until ready(dst, version, ctx) is true; returns that version (dst holds that read).
  // The whole wait is ONE recorded coll_onesided event (no bytes sent), however many reads
  // it took, so a step's event count stays bounded; held by the emulation for one message
  // of the bytes got. Built on the do_window_* operations (every backend with windows).
  // dst is host memory (ready() reads it).
  using WindowReady = bool (*)(const float* data, uint64_t version, const void* ctx);
  uint64_t window_poll(BufferView dst, int rank, WindowReady ready, const void* ctx);
  // Serves other ranks' pending epochs on this rank's window (do_window_progress; MPI: their
  // lock requests complete only while this rank is inside an MPI call). The trainer calls it
  // between the layers of a step's forward and backward passes, so that another rank's lock
  // waits for a layer, not for the rest of this rank's step (adpsgd, ps). Not recorded;
  // nothing while no window is open, or on backends that need no progress.
  void window_progress() {
    if (window_open_) do_window_progress();
  }

  // ---- host-pointer convenience overloads: each builds a host view (core/buffer.hpp) ----
  void allreduce_sum(float* data, size_t count) { allreduce_sum(host_view(data, count)); }
  void allreduce_average(float* data, size_t count) { allreduce_average(host_view(data, count)); }
  void broadcast(float* data, size_t count, int root) { broadcast(host_view(data, count), root); }
  void iallreduce_sum(float* data, size_t count, CollRequest& r) { iallreduce_sum(host_view(data, count), r); }
  void iallreduce_average(float* data, size_t count, CollRequest& r) { iallreduce_average(host_view(data, count), r); }
  // (send: count floats; shard: this rank's block, shard_count(count) floats)
  void reduce_scatter_sum(const float* send, float* shard, size_t count) {
    reduce_scatter_sum(host_view(send, count), host_view(shard, shard_count(count)));
  }
  void reduce_scatter_average(const float* send, float* shard, size_t count) {
    reduce_scatter_average(host_view(send, count), host_view(shard, shard_count(count)));
  }
  void allgather(float* data, size_t count) { allgather(host_view(data, count)); }
  void iallgather(float* data, size_t count, CollRequest& r) { iallgather(host_view(data, count), r); }
  void sendrecv(const float* send, size_t send_count, int dest, float* recv, size_t recv_count, int source) {
    sendrecv(host_view(send, send_count), dest, host_view(recv, recv_count), source);
  }
  void isendrecv(const float* send, size_t send_count, int dest, float* recv, size_t recv_count, int source,
                 CollRequest& r) {
    isendrecv(host_view(send, send_count), dest, host_view(recv, recv_count), source, r);
  }
  void neighbor_exchange(const float* send, size_t count, const int* peers, size_t n_peers, float* recv) {
    neighbor_exchange(host_view(send, count), peers, n_peers, host_view(recv, count * n_peers));
  }
  void ineighbor_exchange(const float* send, size_t count, const int* peers, size_t n_peers, float* recv,
                          CollRequest& r) {
    ineighbor_exchange(host_view(send, count), peers, n_peers, host_view(recv, count * n_peers), r);
  }
  void window_get(float* dst, size_t count, int rank, uint64_t* version) {
    window_get(host_view(dst, count), rank, version);
  }
  void window_put(const float* src, size_t count, int rank, uint64_t version) {
    window_put(host_view(src, count), rank, version);
  }
  uint64_t window_poll(float* dst, size_t count, int rank, WindowReady ready, const void* ctx) {
    return window_poll(host_view(dst, count), rank, ready, ctx);
  }

  // Two-level all-reduce on a hier:GxW topology (groups = G > 1, ranks g·W .. g·W+W−1 form
  // group g): every all-reduce, blocking or not, becomes a reduce-scatter inside the group,
  // an all-reduce of each shard among the G ranks holding it, and an all-gather inside the
  // group — the algorithm the network model assumes for groups > 1 (network_model.hpp),
  // so the fast intra-group links carry most of the bytes. Bytes sent per rank are the
  // ring's 2(n−1)/n·S. Collective (every rank calls it with the same G); 1: flat (default).
  // A backend that models its collectives (sim) already costs them so; one that cannot
  // split (self: one rank) stays flat. hierarchy_groups(): the G in effect (1: flat).
  void set_hierarchy(int groups) { hier_groups_ = do_set_hierarchy(groups) ? groups : 1; }
  int hierarchy_groups() const { return hier_groups_; }
  // The run's link classes (set by the trainer before the algorithm's setup; default: flat, unknown).
  void set_link_classes(const LinkClasses& links) { links_ = links; }
  const LinkClasses& link_classes() const { return links_; }

  // Events are recorded only while a log is attached.
  void attach_log(CollEventLog* log) { log_ = log; }
  // Recorded collectives are held by hook.extra_s(...) seconds; default: nothing added.
  // Backends that model the network themselves (sim) ignore it.
  void set_emulation(EmulationHook hook) {
    if (!models_network()) emulation_ = hook;
  }

  // The backend's own all-reduce (sum, in place), not recorded, not emulated: the calibration's
  // "bare" row, measured beside the recorded one. Default: untimed_allreduce_sum on host memory;
  // a device backend overrides it for its device's views.
  virtual void bare_allreduce_sum(BufferView data);

  // Untimed harness helpers (host memory).
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
  // The attached event log (nullptr when none): where the next recorded event will go.
  CollEventLog* event_log() const { return log_; }
  virtual bool models_network() const { return false; }
  // Returns whether all-reduces now run in `groups` groups.
  virtual bool do_set_hierarchy(int groups) { return groups <= 1 || models_network(); }
  // Every view reaching a do_* is float32 on a device the backend supports (checked before).
  virtual void do_allreduce_sum(BufferView data) = 0;
  virtual void do_broadcast(BufferView data, int root) = 0;
  virtual void do_barrier() = 0;
  // Non-blocking: start returns a slot; test/wait complete it (and free the slot).
  virtual int do_iallreduce_sum_start(BufferView data) = 0;
  virtual bool do_test(int slot) = 0;
  virtual void do_wait(int slot) = 0;
  // Sharded collectives and point-to-point. Not pure: a backend that lacks one throws
  // Error "backend X does not implement Y" when it is used.
  // shard ← this rank's block (Communicator::shard_begin) of Σ_ranks send (send.count floats;
  // shard: at least the block's length).
  virtual void do_reduce_scatter_sum(ConstBufferView send, BufferView shard);
  // In place: rank r's block of data goes to every rank.
  virtual void do_allgather(BufferView data);
  // Non-blocking do_allgather; returns a slot completed by do_test / do_wait.
  virtual int do_iallgather_start(BufferView data);
  // Non-blocking: sends `send` to each of dests[0..n_dests) and receives recv_count floats
  // from each of sources[0..n_sources) into recv.slice(k·recv_count, recv_count); returns a
  // slot completed by do_test / do_wait like do_iallreduce_sum_start's.
  virtual int do_exchange_start(ConstBufferView send, const int* dests, size_t n_dests, BufferView recv,
                                size_t recv_count, const int* sources, size_t n_sources);
  // One-sided windows (see window_create): count floats + a uint64 version per rank.
  virtual void do_window_create(size_t count);
  virtual void do_window_free();
  virtual void do_window_lock(int rank);
  virtual void do_window_unlock(int rank);
  virtual void do_window_get(BufferView dst, int rank, uint64_t* version);
  virtual void do_window_put(ConstBufferView src, int rank, uint64_t version);
  // Drives the backend's progress between two reads of a window_poll, so that other ranks'
  // epochs on this rank's window complete while it waits (MPI: passive-target requests are
  // served only inside MPI calls, and an epoch on the own window may not enter progress).
  // Default: nothing (backends whose windows need no progress).
  virtual void do_window_progress() {}
  // Between two reads of a window_poll on `rank`'s window that was not ready; `polled_at`:
  // now() when the read that failed began. Default: lets the writers we wait for take the
  // lock (a yield of the thread). The simulator blocks the poller until a put to the window
  // when the read took no virtual time (an ideal network), where polling again would never
  // let a worker at a later virtual time write.
  virtual void do_window_poll_wait(int rank, double polled_at);

 private:
  [[noreturn]] void unsupported(const char* what) const;
  // Refuses a view the backend cannot take (not float32, or on a device it does not support).
  // Inline: host float32 views pass on one compare.
  void check(ConstBufferView v, const char* what) const {
    if (v.dtype != DType::dtype_f32 || (!v.device.is_host() && !supports_device(v.device))) refuse(v, what);
  }
  [[noreturn]] void refuse(ConstBufferView v, const char* what) const;
  void finish_blocking(CollRequest& r);
  int exchange_start(ConstBufferView send, const int* dests, size_t n_dests, BufferView recv, size_t recv_count,
                     const int* sources, size_t n_sources, CollRequest& r);
  void record(CollKind kind, double arrive, double bytes_sent);
  // Fills r for a non-blocking operation launched now on `data` (its slot is set by the caller).
  void begin_request(CollRequest& r, BufferView data, CollKind kind, double model_bytes, double bytes_sent);
  void divide_by_size(BufferView data);
  void emulate(CollKind kind, double bytes);
  CollEventLog* log_ = nullptr;
  EmulationHook emulation_;
  double epoch_arrive_ = 0, epoch_emulated_s_ = 0, epoch_put_bytes_ = 0;
  int hier_groups_ = 1;
  bool window_open_ = false;  // between window_create and window_free
  // Whether holds may sleep: more ranks on this host than cores (decided at the first hold).
  bool hold_may_sleep() {
    if (hold_may_sleep_ < 0)
      hold_may_sleep_ = ranks_on_this_host() > static_cast<int>(std::thread::hardware_concurrency()) ? 1 : 0;
    return hold_may_sleep_ != 0;
  }
  int hold_may_sleep_ = -1;
  LinkClasses links_;
  double emulated_link_free_ = 0;  // end of the last non-blocking request's emulated link time
};

// The communicator of this process: MPI's world when built with MPI (initialising MPI),
// otherwise a single rank. (The backend table, cluster/backends.hpp, is how the programs
// choose one.)
std::unique_ptr<Communicator> communicator_create_world(int* argc, char*** argv);
// A single-rank communicator without MPI (tests, serial reference).
std::unique_ptr<Communicator> communicator_create_self();

// Bytes one rank sends in a ring all-reduce of `bytes` over n ranks: 2(n-1)/n × bytes.
double ring_allreduce_bytes_sent(double bytes, int n);
// Bytes one rank sends in a ring reduce-scatter or all-gather of a `bytes` buffer: (n-1)/n × bytes.
double ring_scatter_gather_bytes_sent(double bytes, int n);

}  // namespace dsgd
