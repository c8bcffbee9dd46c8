// The simulated cluster (backend `sim`, docs/sim.md): N logical workers in
// one process, each a thread running the unchanged trainer loop over its own
// SimCommunicator, scheduled by one SimWorld on a virtual clock.
//
// Scheduling (conservative discrete-event simulation). Each worker has a virtual time t_i.
// One worker runs at a time: it holds the baton. A worker computes without yielding (pure
// local work cannot affect anyone), advancing t_i by the modelled cost of each compute
// phase (compute_done). At every operation whose outcome could depend on other workers
// (blocking on a collective or a message, testing a request) it gives the baton to the
// ready worker with the smallest (t, rank); so no worker acts at a virtual time below the
// current one, whatever the thread scheduler does, and a seed reproduces a run bit for bit.
//
// Timing. A collective of S bytes over n workers completes at
//     max_j(arrive_j) + network_collective_time(model, kind, algo, S, n)
// on every participant; the recorder then sees wait_i = max_j arrive_j − arrive_i and
// comm_i = the modelled time, exactly. Non-blocking all-reduce: completes at
// max_j(launch_j) + model; wait() returns at max(call time, completion). Untimed harness
// operations take no virtual time but, like their real counterparts, synchronise the
// participants (each leaves at the latest arrival), so an evaluation point aligns the
// workers as it does on MPI.
//
// Numerics. The last participant to arrive performs the reduction over the workers'
// buffers in rank order (for 2 workers: a + b, the same float as MPI's), then every buffer
// receives the result. Workers share nothing mutable.
//
// Sharded collectives: reduce-scatter (rank order sum of each block, so a sharded step
// is bit-identical to the all-reduce one) and all-gather (blocking or not), timed like the other
// collectives by the α-β model (kind reduce_scatter / allgather, S = 4·count).
//
// Point-to-point (exchange: sendrecv, neighbour exchange, blocking or not). At the start
// each message to dests[k] is stamped with its virtual arrival
//     t_start + α(link) + Σ_{m≤k} S/B(link_m)
// (the sends leave one after the other on the sender's link; link class of the pair from
// the topology: intra or inter group, self = 0 s), and matched to the receives posted by
// the destination in MPI's order (per (source, destination) pair, first posted first
// matched). The exchange completes at max(its last send's departure, its messages'
// arrivals); wait() leaves at max(call time, completion); test() yields first, then sees
// it complete once the worker's clock has passed the completion. So a non-blocking
// exchange overlaps compute, and an asynchronous peer sees exactly the messages that have
// virtually arrived by then.
//
// One-sided windows: each worker's window is `count` floats and a version counter. A lock
// yields first (every worker at a smaller virtual time acts before), so locks are granted
// in virtual-time order: exclusive per target, granted at max(request, previous holder's
// unlock); a worker that finds the window held blocks until the holder unlocks (FIFO).
// get/put copy at once and cost α + S/B of the link to the target (a copy on the own window);
// the version is stored by put and returned by get, as with MPI. Because epochs on one
// window are serialised in virtual time, AD-PSGD and an asynchronous parameter server get
// the true interleaving and the staleness their timing implies. A poll (repeated reads until
// a version arrives) whose read costs nothing (an ideal network) waits for the next epoch
// that puts to the window instead of reading again at the same virtual time.
//
// Limits: links are contention-free (the network model's assumptions); the compute cost of
// a phase is a profile, not the measured time of this execution; a deadlock (every
// unfinished worker blocked) is reported as an error naming the blocked workers.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "cluster/communicator.hpp"
#include "cluster/network_model.hpp"

namespace dsgd {

// Modelled compute cost of one training step of one worker, per phase (seconds, already
// multiplied by the compute scale; stragglers come on top, through the trainer).
struct SimComputeCost {
  double data_s = 0;
  double fwd_s = 0;
  std::vector<double> bwd_layer_s;  // charged when layer l's gradient hook fires
  double bwd_rest_s = 0;            // charged when backward returns
  double opt_s = 0;
  // One elementwise pass over the parameters outside compute (a copy, y ← y + a·x), charged
  // per pass an algorithm reports (Communicator::model_passes_done); 0: not measured.
  double model_pass_s = 0;
  double model_bytes = 0;         // the parameters' bytes, what model_pass_s streams over
  double step_compute_s() const;  // data + fwd + Σ bwd_layer + bwd_rest + opt
  // One elementwise pass over `bytes` of a buffer (an averaging collective's divide by the
  // worker count): the model pass pro rata; 0 without a measured pass.
  double pass_s(double bytes) const { return model_bytes > 0 ? model_pass_s * (bytes / model_bytes) : 0.0; }
};

struct SimWorldOptions {
  int workers = 1;
  // Links of the simulated cluster; empty: an ideal network (collectives take 0 s).
  std::optional<NetworkModel> network;
  CollAlgo algo = CollAlgo::algo_auto;
  SimComputeCost cost;
  std::string details_json = "{}";  // stored as the run's backend-details
  // The compute jitter the trainers apply (Stragglers::set_jitter's; empty: none).
  ComputeJitter jitter;
  // Group of each rank (Topology::group_of) for the link class of a point-to-point message
  // or a window access: same group → intra, else inter. Empty: one group.
  std::vector<int> group_of;
  // --native-floor: this host's native fabric (calibrated all-reduce fit); every
  // communication lasts at least its time there, as a real run under emulation does.
  std::optional<NetworkModel> native;
};

// Modelled time of one point-to-point message (kind coll_sendrecv) or one-sided access
// (coll_onesided) of `bytes` from rank i to rank j: network_message_time on the pair's link
// (intra when group_of is empty or both ranks are in one group, else inter): α + S/B, or a
// calibration's measured curve; 0 within a rank or on an ideal network (no model).
// With `native` (--native-floor): at least native's time (the host's own fabric).
double sim_message_time(const std::optional<NetworkModel>& network, const std::optional<NetworkModel>& native,
                        const std::vector<int>& group_of, int i, int j, double bytes,
                        CollKind kind = CollKind::coll_sendrecv);
// Modelled time of a collective: network_collective_time on `network` (0 without one), and
// with `native` at least its ring time (what a real collective under emulation lasts).
double sim_collective_time(const std::optional<NetworkModel>& network, const std::optional<NetworkModel>& native,
                           CollKind kind, CollAlgo algo, double bytes, int n);

// Thrown in a worker blocked on the simulator when another worker failed.
class SimPeerFailed : public std::runtime_error {
 public:
  SimPeerFailed() : std::runtime_error("another simulated worker failed") {}
};

class SimWorld;

// One worker's view of the simulated cluster (the Communicator of backend `sim`).
class SimCommunicator final : public Communicator {
 public:
  SimCommunicator(SimWorld& world, int rank) : world_(world), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override;
  std::string backend_name() const override { return "sim"; }
  std::string library_version() const override { return "dsgd-bench sim (virtual clock)"; }
  int ranks_on_this_host() const override { return 1; }

  double now() const override;
  void hold_until(double deadline) override;
  void compute_done(ComputePhase phase, size_t layer = 0) override;
  void averaging_pass_done(double bytes) override;
  double compute_cost_s(ComputePhase phase, size_t layer = 0) const override;
  bool virtual_clock() const override { return true; }
  std::string backend_details() const override;
  ComputeJitter compute_jitter() const override;

  void untimed_allreduce_sum(double* data, size_t count) override;
  void untimed_allreduce_sum(float* data, size_t count) override;
  void untimed_allreduce_max(double* data, size_t count) override;
  void untimed_gather(const double* send, size_t count, double* recv, int root) override;
  void untimed_broadcast(double* data, size_t count, int root) override;
  void untimed_send(const double* data, size_t count, int peer) override;
  void untimed_recv(double* data, size_t count, int peer) override;
  void untimed_barrier() override;
  [[noreturn]] void abort(int code) override;

 protected:
  bool models_network() const override { return true; }
  void do_allreduce_sum(BufferView data) override;
  void do_broadcast(BufferView data, int root) override;
  void do_barrier() override;
  int do_iallreduce_sum_start(BufferView data) override;
  bool do_test(int slot) override;
  void do_wait(int slot) override;
  void do_reduce_scatter_sum(ConstBufferView send, BufferView shard) override;
  void do_allgather(BufferView data) override;
  int do_iallgather_start(BufferView data) override;
  int do_exchange_start(ConstBufferView send, const int* dests, size_t n_dests, BufferView recv, size_t recv_count,
                        const int* sources, size_t n_sources) override;
  void do_window_create(size_t count) override;
  void do_window_free() override;
  void do_window_lock(int rank) override;
  void do_window_unlock(int rank) override;
  void do_window_get(BufferView dst, int rank, uint64_t* version) override;
  void do_window_put(ConstBufferView src, int rank, uint64_t version) override;
  void do_window_poll_wait(int rank, double polled_at) override;

 private:
  // An in-flight request: a collective's sequence number or an exchange's id (−1: free).
  struct Slot {
    int64_t id = -1;
    bool exchange = false;
  };
  int slot_for(int64_t id, bool exchange);
  SimWorld& world_;
  int rank_;
  std::vector<Slot> slots_;
};

class SimWorld {
 public:
  explicit SimWorld(SimWorldOptions options);
  SimWorld(const SimWorld&) = delete;
  SimWorld& operator=(const SimWorld&) = delete;
  ~SimWorld();

  int size() const { return n_; }
  const SimWorldOptions& options() const { return opt_; }
  SimCommunicator& comm(int rank) { return *worker(rank).comm; }
  double time(int rank) const { return worker(rank).clock; }

  // Runs body(rank) on one thread per worker under the scheduler and joins them. When a
  // worker throws, the others are woken (SimPeerFailed) and the first error is rethrown.
  void run(const std::function<void(int rank)>& body);

  // ---- used by SimCommunicator -----------------------------------------------------------
  enum class Op {
    op_sum_f32,
    op_sum_f64,
    op_max_f64,
    op_bcast_f32,
    op_bcast_f64,
    op_gather_f64,
    op_barrier,
    op_reduce_scatter_f32,  // data: the rank's shard, send: its full buffer
    op_allgather_f32,       // data: the full buffer, in place
  };
  // Joins the next collective of this worker's sequence. Timed: completes at
  // max(arrivals) + model(kind, bytes); untimed: at max(arrivals). Returns its sequence
  // number; blocking variants wait for completion before returning.
  int64_t collective_start(int rank, Op op, CollKind kind, bool timed, void* data, const void* send, size_t count,
                           int root);
  void collective_wait(int rank, int64_t seq);
  bool collective_test(int rank, int64_t seq);
  void send(int rank, int peer, const double* data, size_t count);
  void recv(int rank, int peer, double* data, size_t count);
  // Point-to-point exchange (see the header comment); returns an id for exchange_wait/test.
  int64_t exchange_start(int rank, const float* send, size_t send_count, const int* dests, size_t n_dests, float* recv,
                         size_t recv_count, const int* sources, size_t n_sources);
  void exchange_wait(int rank, int64_t id);
  bool exchange_test(int rank, int64_t id);
  // One-sided windows (see the header comment). create/free synchronise like a barrier.
  void window_create(int rank, size_t count);
  void window_free(int rank);
  void window_lock(int rank, int target);
  void window_unlock(int rank, int target);
  void window_get(int rank, int target, float* dst, size_t count, uint64_t* version);
  void window_put(int rank, int target, const float* src, size_t count, uint64_t version);
  // A window_poll's read of target's window found it not ready: when the read took virtual
  // time, returns (the next lock yields to every worker behind this one); when it took none,
  // blocks until an epoch with a put on that window ends and leaves at that epoch's unlock,
  // the limit of polling at no cost. A poll no put can end is reported as a deadlock.
  void window_poll_wait(int rank, int target, double polled_at);
  // Modelled time of one message (or one-sided access) of `bytes` from rank i to rank j
  // (0 within a rank or on an ideal network).
  double message_time(int i, int j, double bytes, CollKind kind = CollKind::coll_sendrecv) const;
  // A window get or put of `bytes` by `rank` on `target`'s window (sim_world_p2p.cpp).
  double access_time(int rank, int target, double bytes) const;
  void advance(int rank, double seconds) { worker(rank).clock += seconds; }
  void hold_until(int rank, double deadline);
  [[noreturn]] void fail_and_throw(int rank, const std::string& why);

 private:
  struct Collective {
    Op op = Op::op_barrier;
    CollKind kind = CollKind::coll_barrier;
    bool timed = false;
    size_t count = 0;
    int root = 0;
    int arrived = 0;
    int released = 0;  // participants that have seen the completion
    double max_arrival = 0;
    bool complete = false;
    double completion = 0;
    std::vector<void*> data;        // per rank
    std::vector<const void*> send;  // per rank (gather)
  };
  struct Message {
    std::vector<double> payload;
    double arrival = 0;
  };
  // A point-to-point exchange of one worker in flight.
  struct Exchange {
    bool used = false;
    int pending = 0;        // receives not yet matched
    double completion = 0;  // max(last send's departure, matched arrivals)
  };
  // A posted receive not yet matched: the destination's exchange and buffer.
  struct PostedRecv {
    int64_t exchange = 0;
    float* recv = nullptr;
    size_t count = 0;
  };
  // A message sent before its receive was posted.
  struct P2pMessage {
    std::vector<float> payload;
    double arrival = 0;
  };
  struct Window {
    std::vector<float> data;
    uint64_t version = 0;
    int holder = -1;            // rank holding the lock (−1: free)
    double free_at = 0;         // virtual time of the last unlock
    std::deque<int> waiters;    // ranks blocked in window_lock, in request order
    std::vector<int> pollers;   // ranks blocked in window_poll_wait, woken by an epoch with a put
    bool put_in_epoch = false;  // the holder's epoch has put
    bool created = false;
  };
  enum class State { state_ready, state_blocked, state_done };
  // What the scheduler keeps per simulated worker.
  struct Worker {
    std::unique_ptr<SimCommunicator> comm;
    double clock = 0;  // virtual time
    State state = State::state_ready;
    const char* blocked_in = "";      // the call it is blocked in, for the deadlock message
    int64_t seq = 0;                  // its next collective's sequence number
    int64_t waiting_seq = -1;         // the collective it is blocked on (−1: none)
    int waiting_peer = -1;            // the sender its recv is blocked on (−1: none)
    int64_t waiting_exchange = -1;    // the exchange it is blocked on (−1: none)
    int blocked_detail = -1;          // the peer or window named in the deadlock message (−1: none)
    std::vector<Exchange> exchanges;  // indexed by exchange id
    Window window;                    // the window it exposes
    std::condition_variable cv;       // wakes it when it gets the baton
  };

  Worker& worker(int rank) { return workers_[static_cast<size_t>(rank)]; }
  const Worker& worker(int rank) const { return workers_[static_cast<size_t>(rank)]; }

  // All below: called with mutex_ held.
  void make_ready(int rank);
  void wake_all();
  void block(std::unique_lock<std::mutex>& lock, int rank, const char* where);
  void yield(std::unique_lock<std::mutex>& lock, int rank);
  void pass_baton();
  void wait_for_baton(std::unique_lock<std::mutex>& lock, int rank);
  void complete(Collective& c);
  void release(int rank, int64_t seq, Collective& c);
  void match(int src, int dst, const P2pMessage& m, const PostedRecv& p);
  Window& window_of(int rank, int target, const char* what);
  std::string blocked_list() const;

  SimWorldOptions opt_;
  int n_;
  std::vector<Worker> workers_;  // one per rank
  // Virtual time at which the collectives' network is free: collectives in flight share it,
  // one after another in sequence order (as the MPI backend's emulated link does).
  double collective_link_free_ = 0;
  // Per (source, destination) pair, key source·n + destination.
  std::unordered_map<int64_t, std::deque<P2pMessage>> p2p_unmatched_;
  std::unordered_map<int64_t, std::deque<PostedRecv>> p2p_posted_;
  std::map<int64_t, Collective> collectives_;
  std::map<std::pair<int, int>, std::deque<Message>> mailbox_;  // (src, dst)
  std::set<std::pair<double, int>> ready_;                      // (time, rank) of ready workers
  int owner_ = -1;                                              // baton holder
  bool failed_ = false;
  std::string failure_;
  std::mutex mutex_;
};

}  // namespace dsgd
