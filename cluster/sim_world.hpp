// The simulated cluster (backend `sim`, DESIGN.md §2, docs/sim.md): N logical workers in
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
// Point-to-point and asynchronous algorithms (fit of the design, see docs/sim.md): a
// message is a mailbox entry (src, dst, tag) stamped with its virtual arrival time
// send_time + α + S/B; a receive blocks until a matching entry exists and leaves at
// max(call time, arrival). Because a worker only acts when it has the smallest virtual
// time, an asynchronous peer (AD-PSGD's pairwise averaging, an async parameter server)
// sees exactly the messages that have virtually arrived by then: the true interleaving
// and staleness. The harness's untimed send/recv already use these mailboxes.
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
  double step_compute_s() const;    // data + fwd + Σ bwd_layer + bwd_rest + opt
};

struct SimWorldOptions {
  int workers = 1;
  // Links of the simulated cluster; empty: an ideal network (collectives take 0 s).
  std::optional<NetworkModel> network;
  CollAlgo algo = CollAlgo::algo_auto;
  SimComputeCost cost;
  std::string details_json = "{}";  // stored as the run's backend-details
};

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
  std::string backend_details() const override;

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
  void do_allreduce_sum(float* data, size_t count) override;
  void do_broadcast(float* data, size_t count, int root) override;
  void do_barrier() override;
  int do_iallreduce_sum_start(float* data, size_t count) override;
  bool do_test(int slot) override;
  void do_wait(int slot) override;

 private:
  SimWorld& world_;
  int rank_;
  std::vector<int64_t> slots_;  // in-flight request slot → collective sequence number (−1 free)
};

class SimWorld {
 public:
  explicit SimWorld(SimWorldOptions options);
  SimWorld(const SimWorld&) = delete;
  SimWorld& operator=(const SimWorld&) = delete;
  ~SimWorld();

  int size() const { return n_; }
  const SimWorldOptions& options() const { return opt_; }
  SimCommunicator& comm(int rank) { return *comms_[static_cast<size_t>(rank)]; }
  double time(int rank) const { return clock_[static_cast<size_t>(rank)]; }

  // Runs body(rank) on one thread per worker under the scheduler and joins them. When a
  // worker throws, the others are woken (SimPeerFailed) and the first error is rethrown.
  void run(const std::function<void(int rank)>& body);

  // ---- used by SimCommunicator -----------------------------------------------------------
  enum class Op { op_sum_f32, op_sum_f64, op_max_f64, op_bcast_f32, op_bcast_f64, op_gather_f64, op_barrier };
  // Joins the next collective of this worker's sequence. Timed: completes at
  // max(arrivals) + model(kind, bytes); untimed: at max(arrivals). Returns its sequence
  // number; blocking variants wait for completion before returning.
  int64_t collective_start(int rank, Op op, CollKind kind, bool timed, void* data, const void* send, size_t count,
                           int root);
  void collective_wait(int rank, int64_t seq);
  bool collective_test(int rank, int64_t seq);
  void send(int rank, int peer, const double* data, size_t count);
  void recv(int rank, int peer, double* data, size_t count);
  void advance(int rank, double seconds) { clock_[static_cast<size_t>(rank)] += seconds; }
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
  enum class State { state_ready, state_blocked, state_done };

  // All below: called with mutex_ held.
  void make_ready(int rank);
  void block(std::unique_lock<std::mutex>& lock, int rank, const char* where);
  void yield(std::unique_lock<std::mutex>& lock, int rank);
  void pass_baton();
  void wait_for_baton(std::unique_lock<std::mutex>& lock, int rank);
  void complete(Collective& c);
  void release(int rank, int64_t seq, Collective& c);
  std::string blocked_list() const;

  SimWorldOptions opt_;
  int n_;
  std::vector<std::unique_ptr<SimCommunicator>> comms_;
  std::vector<double> clock_;
  std::vector<State> state_;
  std::vector<const char*> blocked_in_;
  std::vector<int64_t> seq_;  // next collective sequence number, per worker
  std::vector<int64_t> waiting_seq_;  // collective a blocked worker waits for (−1: none)
  std::vector<int> waiting_peer_;     // sender a blocked worker's recv waits for (−1: none)
  std::map<int64_t, Collective> collectives_;
  std::map<std::pair<int, int>, std::deque<Message>> mailbox_;  // (src, dst)
  std::set<std::pair<double, int>> ready_;                      // (time, rank) of ready workers
  int owner_ = -1;                                              // baton holder
  bool failed_ = false;
  std::string failure_;
  std::mutex mutex_;
  std::vector<std::unique_ptr<std::condition_variable>> cv_;
};

}  // namespace dsgd
