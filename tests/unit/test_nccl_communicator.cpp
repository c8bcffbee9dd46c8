// The NCCL backend's Communicator (cluster/nccl_communicator.*) on the fake device
// (fake_collective_device.hpp): ranks as threads of one process, collectives on host memory
// behind the device seam, virtual device time. Checks the results of every operation (blocking
// and non-blocking, equal and unequal shard blocks, grouped send/recv), the ordering by events
// (an average is scaled only after its all-reduce ran on every rank), the recorded events'
// device timing (overlap and exposed time of buckets launched from "layer hooks" while compute
// continues), refusals (host memory, too many requests in flight).
#include <gtest/gtest.h>

#include <algorithm>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "cluster/nccl_communicator.hpp"
#include "core/errors.hpp"
#include "core/vector_ops.hpp"
#include "engine/calibration.hpp"
#include "engine/calibration_ops.hpp"
#include "fake_collective_device.hpp"

namespace dsgd {
namespace {

constexpr Device kTestDevice{DeviceKind::device_test, 0};

// Host memory presented as test:0 (its operations are the host's, on the calling thread: the
// fake device's compute stream).
class TestMemoryOps final : public VectorOps {
 public:
  Device device() const override { return kTestDevice; }
  VectorOps& h() { return vector_ops_host(); }
  static BufferView host(BufferView v) { return BufferView{v.data, v.count, v.dtype, kHostDevice}; }
  static ConstBufferView host(ConstBufferView v) { return ConstBufferView{v.data, v.count, v.dtype, kHostDevice}; }
  void* allocate(size_t b) override { return h().allocate(b); }
  void deallocate(void* p) override { h().deallocate(p); }
  void copy(BufferView d, ConstBufferView s) override { h().copy(host(d), host(s)); }
  void copy_to_host(void* d, ConstBufferView s) override { h().copy_to_host(d, host(s)); }
  void copy_from_host(BufferView d, const void* s) override { h().copy_from_host(host(d), s); }
  void fill(BufferView x, float v) override { h().fill(host(x), v); }
  void scale(BufferView x, float a) override { h().scale(host(x), a); }
  void scale_copy(BufferView y, float a, ConstBufferView x) override { h().scale_copy(host(y), a, host(x)); }
  void axpy(BufferView y, float a, ConstBufferView x) override { h().axpy(host(y), a, host(x)); }
  void scale_add(BufferView y, float a, ConstBufferView x) override { h().scale_add(host(y), a, host(x)); }
  void blend(BufferView y, float a, float b, ConstBufferView x) override { h().blend(host(y), a, b, host(x)); }
  void add(BufferView o, ConstBufferView a, ConstBufferView b) override { h().add(host(o), host(a), host(b)); }
  void sub(BufferView o, ConstBufferView a, ConstBufferView b) override { h().sub(host(o), host(a), host(b)); }
  void rebase(BufferView x, ConstBufferView a, ConstBufferView b, bool c) override {
    h().rebase(host(x), host(a), host(b), c);
  }
  void sgd_update(BufferView x, BufferView v, ConstBufferView g, const SgdUpdate& u) override {
    h().sgd_update(host(x), host(v), host(g), u);
  }
  void adamw_update(BufferView x, BufferView m, BufferView v, ConstBufferView g, const AdamWUpdate& u) override {
    h().adamw_update(host(x), host(m), host(v), host(g), u);
  }
};

// The MPI world's part, for ranks that are threads: rank, size, and the untimed harness
// collectives the calibration uses (sum, max, broadcast, barrier) as a rendezvous of the threads.
class ThreadHub {
 public:
  explicit ThreadHub(int n) : n_(n) {}
  // Every rank calls it with the same count; combine(acc, data, rank) folds one rank's values in.
  template <class Combine>
  void collective(int rank, double* data, size_t count, Combine combine) {
    std::unique_lock<std::mutex> lock(m_);
    if (arrived_ == 0)
      acc_.assign(data, data + count);
    else
      combine(acc_, data, rank);
    if (++arrived_ == n_) {
      result_ = acc_;
      arrived_ = 0;
      ++generation_;
      cv_.notify_all();
    } else {
      const uint64_t g = generation_;
      cv_.wait(lock, [&] { return generation_ != g; });
    }
    std::copy(result_.begin(), result_.begin() + static_cast<std::ptrdiff_t>(count), data);
  }

 private:
  int n_, arrived_ = 0;
  uint64_t generation_ = 0;
  std::vector<double> acc_, result_;
  std::mutex m_;
  std::condition_variable cv_;
};

class RankWorld final : public Communicator {
 public:
  RankWorld(int rank, int size, ThreadHub& hub) : rank_(rank), size_(size), hub_(hub) {}
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backend_name() const override { return "world"; }
  std::string library_version() const override { return "test world"; }
  int ranks_on_this_host() const override { return size_; }
  void untimed_allreduce_sum(double* d, size_t n) override {
    hub_.collective(rank_, d, n, [n](std::vector<double>& acc, const double* x, int) {
      for (size_t i = 0; i < n; ++i) acc[i] += x[i];
    });
  }
  void untimed_allreduce_sum(float* d, size_t n) override {
    std::vector<double> v(d, d + n);
    untimed_allreduce_sum(v.data(), n);
    for (size_t i = 0; i < n; ++i) d[i] = float(v[i]);
  }
  void untimed_allreduce_max(double* d, size_t n) override {
    hub_.collective(rank_, d, n, [n](std::vector<double>& acc, const double* x, int) {
      for (size_t i = 0; i < n; ++i) acc[i] = std::max(acc[i], x[i]);
    });
  }
  void untimed_broadcast(double* d, size_t n, int root) override {
    // Ranks other than the root contribute zeros; the sum is the root's values.
    std::vector<double> v(n, 0.0);
    if (rank_ == root) v.assign(d, d + n);
    untimed_allreduce_sum(v.data(), n);
    std::copy(v.begin(), v.end(), d);
  }
  void untimed_barrier() override {
    double x = 0;
    untimed_allreduce_sum(&x, 1);
  }
  void untimed_gather(const double*, size_t, double*, int) override { unsupported_here("gather"); }
  void untimed_send(const double*, size_t, int) override { unsupported_here("send"); }
  void untimed_recv(double*, size_t, int) override { unsupported_here("recv"); }
  [[noreturn]] void abort(int code) override { std::exit(code); }

 protected:
  void do_allreduce_sum(BufferView) override {}
  void do_broadcast(BufferView, int) override {}
  void do_barrier() override {}
  int do_iallreduce_sum_start(BufferView) override { return 0; }
  bool do_test(int) override { return true; }
  void do_wait(int) override {}

 private:
  [[noreturn]] static void unsupported_here(const char* what) {
    throw Error(std::string("test world: untimed ") + what + " is not implemented here");
  }
  int rank_, size_;
  ThreadHub& hub_;
};

struct Job {
  explicit Job(int ranks, int records = 16, double op_seconds = 2e-3)
      : fabric(ranks, 1 + records * kRequestEvents, op_seconds), hub(ranks), records(records) {
    vector_ops_register(DeviceKind::device_test, &ops);
  }
  ~Job() { vector_ops_register(DeviceKind::device_test, nullptr); }
  // Runs body(rank, comm) on one thread per rank; rethrows the first failure.
  void run(const std::function<void(int, NcclCommunicator&)>& body) {
    std::vector<std::thread> threads;
    std::vector<std::exception_ptr> errors(size_t(fabric.ranks()));
    for (int r = 0; r < fabric.ranks(); ++r)
      threads.emplace_back([&, r] {
        try {
          NcclCommunicator comm(std::make_unique<RankWorld>(r, fabric.ranks(), hub),
                                std::make_unique<testing::FakeCollectiveDevice>(fabric, r), kTestDevice, records);
          body(r, comm);
        } catch (...) {
          errors[size_t(r)] = std::current_exception();
        }
      });
    for (auto& t : threads) t.join();
    for (auto& e : errors)
      if (e) std::rethrow_exception(e);
  }
  testing::FakeFabric fabric;
  ThreadHub hub;
  int records;
  TestMemoryOps ops;
};

BufferView view(std::vector<float>& v) {
  return BufferView{v.data(), v.size(), DType::dtype_f32, kTestDevice};
}

TEST(NcclCommunicator, BlockingAllReducesSumAndAverageOnEveryRank) {
  Job job(3);
  std::vector<std::vector<float>> sums(3), avgs(3);
  job.run([&](int r, NcclCommunicator& c) {
    std::vector<float> a(5), b(5);
    for (size_t i = 0; i < 5; ++i) a[i] = b[i] = float(r + 1) * float(i + 1);
    c.allreduce_sum(view(a));
    c.allreduce_average(view(b));  // scaled on the compute stream after the sum ran everywhere
    sums[size_t(r)] = a;
    avgs[size_t(r)] = b;
  });
  for (int r = 0; r < 3; ++r)
    for (size_t i = 0; i < 5; ++i) {
      EXPECT_EQ(sums[size_t(r)][i], 6.0f * float(i + 1)) << r;
      EXPECT_EQ(avgs[size_t(r)][i], 6.0f * float(i + 1) / 3.0f) << r;
    }
}

TEST(NcclCommunicator, BroadcastShardsAndGroupedSendRecv) {
  for (size_t count : {size_t(9), size_t(10)}) {  // equal blocks (reduce-scatter) and unequal (grouped reduces)
    Job job(3);
    job.run([&](int r, NcclCommunicator& c) {
      std::vector<float> x(count), shard(c.shard_count(count)), g(count, 0.0f), root(4, float(r));
      for (size_t i = 0; i < count; ++i) x[i] = float(i) + 10.0f * float(r);
      c.reduce_scatter_sum(ConstBufferView(view(x)), view(shard));
      const size_t b = Communicator::shard_begin(count, 3, r);
      for (size_t i = 0; i < shard.size(); ++i) EXPECT_EQ(shard[i], 3.0f * float(b + i) + 30.0f) << count;
      for (size_t i = 0; i < shard.size(); ++i) g[b + i] = float(100 * r) + float(i);
      c.allgather(view(g));
      for (int q = 0; q < 3; ++q)
        for (size_t i = Communicator::shard_begin(count, 3, q); i < Communicator::shard_begin(count, 3, q + 1); ++i)
          EXPECT_EQ(g[i], float(100 * q) + float(i - Communicator::shard_begin(count, 3, q))) << count;
      c.broadcast(view(root), 2);
      for (float v : root) EXPECT_EQ(v, 2.0f);
      // A ring: send to r+1, receive from r−1, as one group.
      std::vector<float> send(3, float(r)), recv(3, -1.0f);
      c.sendrecv(ConstBufferView(view(send)), (r + 1) % 3, view(recv), (r + 2) % 3);
      for (float v : recv) EXPECT_EQ(v, float((r + 2) % 3));
    });
  }
}

// Two buckets launched from "layer hooks" while the backward goes on (virtual device time):
//   bucket A at 0 ms (2 ms long: done at 2), compute to 5 ms, bucket B at 5 ms (done at 7),
//   compute to 6 ms, then the waits: A was hidden entirely (2 ms of overlap, nothing exposed),
//   B overlapped 1 ms (5–6) and the compute stream waited 1 ms (6–7) for it.
TEST(NcclCommunicator, DeviceTimingGivesOverlapAndExposedTimeOfEachBucket) {
  Job job(2);
  std::vector<std::vector<CollEvent>> events(2);
  job.run([&](int r, NcclCommunicator& c) {
    CollEventLog log;
    log.reserve(16);
    c.attach_log(&log);
    auto& dev = job.fabric;
    std::vector<float> a(4, float(r)), b(6, float(2 * r));
    CollRequest ra, rb;
    c.iallreduce_average(view(a), ra);
    dev.advance_compute(r, 5e-3);
    c.iallreduce_average(view(b), rb);
    c.progress(ra);  // NCCL completes on the device: progress never completes it on the host
    EXPECT_EQ(ra.completed, 0.0);
    dev.advance_compute(r, 1e-3);
    c.wait(ra);
    c.wait(rb);
    EXPECT_NEAR(dev.compute_clock(r), 7e-3, 1e-12);  // the compute stream waited for B
    for (float v : a) EXPECT_EQ(v, 0.5f);
    for (float v : b) EXPECT_EQ(v, 1.0f);
    ASSERT_EQ(log.size(), 2u);
    c.flush_device_timing();
    events[size_t(r)].assign(log.data(), log.data() + log.size());
  });
  for (int r = 0; r < 2; ++r) {
    const CollEvent& ea = events[size_t(r)][0];
    const CollEvent& eb = events[size_t(r)][1];
    EXPECT_NEAR(ea.in_flight_until - ea.launch, 2e-3, 1e-9) << "A overlap, rank " << r;
    EXPECT_NEAR(ea.depart - ea.arrive, 0.0, 1e-9) << "A exposed";
    EXPECT_NEAR(eb.launch - ea.launch, 5e-3, 1e-9) << "B launch";
    EXPECT_NEAR(eb.in_flight_until - eb.launch, 1e-3, 1e-9) << "B overlap";
    EXPECT_NEAR(eb.depart - eb.arrive, 1e-3, 1e-9) << "B exposed";
    EXPECT_EQ(ea.kind, int32_t(CollKind::coll_allreduce));
    EXPECT_EQ(ea.bytes_sent, 16.0);  // ring all-reduce of 16 bytes on 2 ranks: 2·(1/2)·16
  }
}

TEST(NcclCommunicator, BlockingOperationIsTimedFromItsDeviceStartToDone) {
  Job job(2, 16, 3e-3);
  std::vector<CollEvent> ev(2);
  job.run([&](int r, NcclCommunicator& c) {
    CollEventLog log;
    log.reserve(4);
    c.attach_log(&log);
    job.fabric.advance_compute(r, r == 0 ? 1e-3 : 4e-3);  // rank 1 arrives 3 ms later
    std::vector<float> x(3, 1.0f);
    c.allreduce_sum(view(x));
    c.flush_device_timing();
    ev[size_t(r)] = log.data()[0];
  });
  // Each rank's span starts when its own stream reached the call and ends when the slowest
  // rank's arrival + 3 ms has passed: rank 0 spans 1 → 7 ms, rank 1 4 → 7 ms.
  EXPECT_NEAR(ev[0].depart - ev[0].arrive, 6e-3, 1e-9);
  EXPECT_NEAR(ev[1].depart - ev[1].arrive, 3e-3, 1e-9);
  EXPECT_EQ(ev[0].launch, 0.0);  // blocking: no in-flight interval
}

TEST(NcclCommunicator, HostMemoryAndTooManyRequestsAreClearErrors) {
  Job job(1, 2);
  job.run([&](int, NcclCommunicator& c) {
    std::vector<float> h(4, 1.0f);
    try {
      c.allreduce_sum(h.data(), h.size());
      FAIL() << "host memory accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("GPU memory only"), std::string::npos) << e.what();
    }
    std::vector<float> d(4, 1.0f);
    CollRequest r1, r2, r3;
    c.iallreduce_sum(view(d), r1);
    c.iallreduce_sum(view(d), r2);
    EXPECT_THROW(c.iallreduce_sum(view(d), r3), Error);
    c.wait(r1);
    c.wait(r2);
    c.iallreduce_sum(view(d), r3);  // the ring has room again (record 0's times are read first)
    c.wait(r3);
    EXPECT_EQ(c.backend_name(), "nccl");
    EXPECT_NE(c.backend_details().find("fake NCCL"), std::string::npos) << c.backend_details();
    EXPECT_FALSE(c.supports_device(kHostDevice));
    EXPECT_TRUE(c.supports_device(kTestDevice));
  });
}

// `dsgd-bench calibrate --backend nccl`'s sweep (engine/calibration.cpp) on the communicator's
// device buffers: the recorded collectives are measured, the host-only rows (the bare MPI
// all-reduce, the one-sided epochs) are left out.
TEST(NcclCommunicator, CalibrationSweepRunsOnDeviceBuffers) {
  Job job(2, 16, 1e-5);
  std::vector<std::vector<CollectiveRow>> rows(2);
  job.run([&](int r, NcclCommunicator& c) {
    CalibrationSweepPlan plan;
    plan.sizes = {64, 4096};
    plan.reps = 2;
    plan.min_rep_time_s = 1e-4;
    plan.estimate_time_s = 1e-4;
    plan.max_iters = 32;
    CalibrationObserver quiet;
    rows[size_t(r)] = calibration_sweep(plan, c, quiet);
  });
  std::vector<std::string> ops;
  for (const CollectiveRow& row : rows[0]) {
    if (ops.empty() || ops.back() != row.op) ops.push_back(row.op);
    EXPECT_GT(row.time_s, 0.0) << row.op;
    EXPECT_GE(row.iters, 1) << row.op;
  }
  const std::vector<std::string> want{"allreduce", "reduce_scatter", "allgather", "broadcast", "sendrecv"};
  EXPECT_EQ(ops, want);
}

}  // namespace
}  // namespace dsgd
