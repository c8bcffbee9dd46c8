// A CollectiveDevice for tests (cluster/collective_device.hpp) on host memory: `ranks` fake
// devices in one process, one thread per rank, sharing a FakeFabric. Each rank's communication
// stream is a queue: an item (one collective, or one ncclGroupStart..End group, or a local
// scale) runs when it reaches the front of its queue and, for a collective, when every rank's
// queue front is its counterpart (the k-th collective item on every rank), as NCCL's kernels
// wait for their peers; the last rank to enqueue runs it for all. The compute stream is the
// rank's thread: compute_waits_for blocks the thread until the event completes (so an
// operation the other ranks never issue is a 10 s timeout with an Error, not a hang).
// Time is virtual: each rank's compute clock advances only by advance_compute(s); a
// communication item starts at max(the stream's free time, the compute clock when it was
// enqueued, or the compute event it waits for) and every rank's counterpart ends at the latest
// start + op_seconds; events carry
// those times, so the NCCL backend's timing conversion can be checked to the microsecond.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "cluster/collective_device.hpp"
#include "core/errors.hpp"

namespace dsgd::testing {

class FakeFabric {
 public:
  enum class OpKind { all_reduce, reduce_scatter, reduce, all_gather, broadcast, send, recv, scale };
  struct Op {
    OpKind kind;
    const float* src = nullptr;
    float* dst = nullptr;
    size_t count = 0;
    int peer = 0;  // root or peer
    float factor = 1;
  };
  struct Item {
    bool local = false;  // a scale: runs without the other ranks
    std::vector<Op> ops;
    double ready = 0;  // compute clock at enqueue
  };
  struct Event {
    bool comm = false;
    size_t target = 0;  // comm: complete once this many items of the rank ran
    double time = 0;    // compute events: the compute clock at record
  };

  FakeFabric(int ranks, int events, double op_seconds)
      : ranks_(ranks),
        op_seconds_(op_seconds),
        queues_(size_t(ranks)),
        ran_(size_t(ranks), 0),
        enqueued_(size_t(ranks), 0),
        free_at_(size_t(ranks), 0.0),
        item_end_(size_t(ranks)),
        clock_(size_t(ranks), 0.0),
        events_(size_t(ranks), std::vector<Event>(size_t(events))),
        group_(size_t(ranks)),
        in_group_(size_t(ranks), false) {}
  int ranks() const { return ranks_; }
  int event_count() const { return int(events_[0].size()); }

  void enqueue_op(int r, Op op) {
    std::unique_lock<std::mutex> lock(m_);
    if (in_group_[size_t(r)]) {
      group_[size_t(r)].push_back(op);
      return;
    }
    push(r, Item{op.kind == OpKind::scale, {op}, clock_[size_t(r)]});
    run_ready();
  }
  // The communication stream waits for compute event e: a local item that ends at e's time.
  void enqueue_wait(int r, int e) {
    std::unique_lock<std::mutex> lock(m_);
    push(r, Item{true, {}, events_[size_t(r)].at(size_t(e)).time});
    run_ready();
  }
  void group_start(int r) {
    std::unique_lock<std::mutex> lock(m_);
    in_group_[size_t(r)] = true;
    group_[size_t(r)].clear();
  }
  void group_end(int r) {
    std::unique_lock<std::mutex> lock(m_);
    in_group_[size_t(r)] = false;
    push(r, Item{false, group_[size_t(r)], clock_[size_t(r)]});
    run_ready();
  }
  void record(int r, int e, bool comm) {
    std::unique_lock<std::mutex> lock(m_);
    Event& ev = events_[size_t(r)].at(size_t(e));
    ev.comm = comm;
    ev.target = comm ? enqueued_[size_t(r)] : 0;
    ev.time = clock_[size_t(r)];
  }
  bool complete(int r, int e) {
    std::unique_lock<std::mutex> lock(m_);
    return done(r, e);
  }
  // Blocks the rank's thread until the event completes (10 s at most: then an Error).
  void wait(int r, int e) {
    std::unique_lock<std::mutex> lock(m_);
    if (!cv_.wait_for(lock, std::chrono::seconds(10), [&] { return done(r, e); }))
      DSGD_THROW(Error, "every rank must issue the same collectives in the same order",
                 "fake device: rank {} waited 10 s for an operation the other ranks did not issue", r);
    const double t = time_of(r, e);
    if (t > clock_[size_t(r)]) clock_[size_t(r)] = t;  // the compute stream waited until then
  }
  double time(int r, int e) {
    std::unique_lock<std::mutex> lock(m_);
    if (!done(r, e)) DSGD_THROW(Error, "this is a bug in the test", "fake device: time of an incomplete event");
    return time_of(r, e);
  }
  void advance_compute(int r, double s) {
    std::unique_lock<std::mutex> lock(m_);
    clock_[size_t(r)] += s;
  }
  double compute_clock(int r) {
    std::unique_lock<std::mutex> lock(m_);
    return clock_[size_t(r)];
  }

 private:
  bool done(int r, int e) const {
    const Event& ev = events_[size_t(r)].at(size_t(e));
    return !ev.comm || ran_[size_t(r)] >= ev.target;
  }
  double time_of(int r, int e) const {
    const Event& ev = events_[size_t(r)].at(size_t(e));
    if (!ev.comm) return ev.time;
    return ev.target == 0 ? 0.0 : item_end_[size_t(r)].at(ev.target - 1);
  }
  void push(int r, Item item) {
    queues_[size_t(r)].push_back(std::move(item));
    ++enqueued_[size_t(r)];
  }
  double start_of(int r, const Item& it) const { return std::max(free_at_[size_t(r)], it.ready); }
  void finish(int r, double end) {
    free_at_[size_t(r)] = end;
    item_end_[size_t(r)].push_back(end);
    ++ran_[size_t(r)];
    queues_[size_t(r)].pop_front();
  }
  // Runs what can run: local items at a queue front, then collectives every rank has reached.
  void run_ready() {
    bool progressed = true;
    while (progressed) {
      progressed = false;
      for (int r = 0; r < ranks_; ++r)
        while (!queues_[size_t(r)].empty() && queues_[size_t(r)].front().local) {
          const Item& it = queues_[size_t(r)].front();
          for (const Op& op : it.ops)
            for (size_t i = 0; i < op.count; ++i) op.dst[i] *= op.factor;
          finish(r, start_of(r, it));
          progressed = true;
        }
      bool all = true;
      for (int r = 0; r < ranks_; ++r) all = all && !queues_[size_t(r)].empty();
      if (!all) break;
      double end = 0;
      for (int r = 0; r < ranks_; ++r) end = std::max(end, start_of(r, queues_[size_t(r)].front()) + op_seconds_);
      execute();
      for (int r = 0; r < ranks_; ++r) finish(r, end);
      progressed = true;
    }
    cv_.notify_all();
  }
  // The front items of every rank, as one collective step.
  void execute() {
    const size_t n_ops = queues_[0].front().ops.size();
    for (int r = 1; r < ranks_; ++r)
      if (queues_[size_t(r)].front().ops.size() != n_ops)
        DSGD_THROW(Error, "every rank must issue the same collectives", "fake device: mismatched groups");
    std::map<std::pair<int, int>, std::deque<const Op*>> mail;  // (from, to) -> sends in order
    for (int r = 0; r < ranks_; ++r)
      for (const Op& op : queues_[size_t(r)].front().ops)
        if (op.kind == OpKind::send) mail[{r, op.peer}].push_back(&op);
    for (size_t k = 0; k < n_ops; ++k) {
      auto op_of = [&](int r) -> const Op& { return queues_[size_t(r)].front().ops[k]; };
      const Op& o0 = op_of(0);
      switch (o0.kind) {
        case OpKind::all_reduce: {
          std::vector<float> sum(o0.count, 0.0f);
          for (int r = 0; r < ranks_; ++r)
            for (size_t i = 0; i < o0.count; ++i) sum[i] += op_of(r).src[i];
          for (int r = 0; r < ranks_; ++r) std::memcpy(op_of(r).dst, sum.data(), o0.count * sizeof(float));
          break;
        }
        case OpKind::reduce_scatter:
          for (int r = 0; r < ranks_; ++r)
            for (size_t i = 0; i < o0.count; ++i) {
              float s = 0;
              for (int j = 0; j < ranks_; ++j) s += op_of(j).src[size_t(r) * o0.count + i];
              op_of(r).dst[i] = s;
            }
          break;
        case OpKind::reduce: {
          const int root = o0.peer;
          for (size_t i = 0; i < o0.count; ++i) {
            float s = 0;
            for (int j = 0; j < ranks_; ++j) s += op_of(j).src[i];
            op_of(root).dst[i] = s;
          }
          break;
        }
        case OpKind::all_gather:
          for (int r = 0; r < ranks_; ++r)
            for (int j = 0; j < ranks_; ++j)
              if (j != r)
                std::memcpy(op_of(j).dst + size_t(r) * o0.count, op_of(r).dst + size_t(r) * o0.count,
                            o0.count * sizeof(float));
          break;
        case OpKind::broadcast: {
          const int root = o0.peer;
          for (int j = 0; j < ranks_; ++j)
            if (j != root) std::memcpy(op_of(j).dst, op_of(root).dst, o0.count * sizeof(float));
          break;
        }
        case OpKind::send:
        case OpKind::recv:
        case OpKind::scale: break;  // point-to-point below
      }
    }
    for (int r = 0; r < ranks_; ++r)
      for (const Op& op : queues_[size_t(r)].front().ops)
        if (op.kind == OpKind::recv) {
          auto& q = mail[{op.peer, r}];
          if (q.empty())
            DSGD_THROW(Error, "match every recv with a send", "fake device: rank {} receives nothing from {}", r,
                       op.peer);
          std::memcpy(op.dst, q.front()->src, op.count * sizeof(float));
          q.pop_front();
        }
  }

  int ranks_;
  double op_seconds_;
  std::mutex m_;
  std::condition_variable cv_;
  std::vector<std::deque<Item>> queues_;
  std::vector<size_t> ran_, enqueued_;
  std::vector<double> free_at_;
  std::vector<std::vector<double>> item_end_;
  std::vector<double> clock_;
  std::vector<std::vector<Event>> events_;
  std::vector<std::vector<Op>> group_;
  std::vector<bool> in_group_;
};

class FakeCollectiveDevice final : public CollectiveDevice {
 public:
  FakeCollectiveDevice(FakeFabric& f, int rank) : f_(f), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return f_.ranks(); }
  std::string description() const override { return "fake NCCL (tests)"; }
  using K = FakeFabric::OpKind;
  void all_reduce_sum(float* d, size_t n) override { f_.enqueue_op(rank_, {K::all_reduce, d, d, n}); }
  void reduce_scatter_sum(const float* s, float* d, size_t b) override {
    f_.enqueue_op(rank_, {K::reduce_scatter, s, d, b});
  }
  void reduce_sum(const float* s, float* d, size_t n, int root) override {
    f_.enqueue_op(rank_, {K::reduce, s, d, n, root});
  }
  void all_gather(float* d, size_t b) override { f_.enqueue_op(rank_, {K::all_gather, d, d, b}); }
  void broadcast(float* d, size_t n, int root) override { f_.enqueue_op(rank_, {K::broadcast, d, d, n, root}); }
  void send(const float* d, size_t n, int peer) override { f_.enqueue_op(rank_, {K::send, d, nullptr, n, peer}); }
  void recv(float* d, size_t n, int peer) override { f_.enqueue_op(rank_, {K::recv, nullptr, d, n, peer}); }
  void group_start() override { f_.group_start(rank_); }
  void group_end() override { f_.group_end(rank_); }
  void scale(float* d, size_t n, float factor) override { f_.enqueue_op(rank_, {K::scale, d, d, n, 0, factor}); }
  int event_count() const override { return f_.event_count(); }
  void record_on_compute(int e) override { f_.record(rank_, e, false); }
  void record_on_comm(int e) override { f_.record(rank_, e, true); }
  void comm_waits_for(int e) override { f_.enqueue_wait(rank_, e); }
  void compute_waits_for(int e) override { f_.wait(rank_, e); }
  bool query(int e) override { return f_.complete(rank_, e); }
  void synchronize(int e) override { f_.wait(rank_, e); }
  void synchronize_compute() override {}
  double seconds_between(int from, int to) override { return f_.time(rank_, to) - f_.time(rank_, from); }

 private:
  FakeFabric& f_;
  int rank_;
};

}  // namespace dsgd::testing
