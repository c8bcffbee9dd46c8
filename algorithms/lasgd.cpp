// lasgd: locally asynchronous SGD on all-reduce (LASGD; Avidor & Tal Israel, "Locally
// Asynchronous Stochastic Gradient Descent for Decentralised Deep Learning", 2022), in the
// form of docs/algorithms.md: inside worker i, T = --local-threads threads share its model
// x_i and one optimizer state; each thread k of a step (round) does
//   x̃_k ← x_i (read, under the worker's lock);  g_k = ∇f(x̃_k; b_k) on its own batch;
//   x_i ← x_i − η·opt(g_k)   (under the lock, as soon as g_k is ready: no waiting for the others)
// and after every step with (t+1) ≡ 0 mod H (H = --period), once all T threads of the round
// have applied:  x_i ← avg_j x_j  (blocking all-reduce of the model, as localsgd).
// Threads and their interleaving: algorithms/local_threads.hpp (real OS threads on mpi; on
// sim T cores in lockstep: all read at the round's start, updates in thread order, so
// thread k's update is k updates stale). Data: T·n disjoint streams (worker i's threads draw
// streams i·T .. i·T+T−1), so a step trains on T·n·batch samples (throughput counts them).
// T = 1 equals localsgd (without post-local) bit for bit: the model lives in this algorithm's
// buffer, copied to the trainer's before each step, and the update is the same optimizer call.
// Bytes sent per step per worker: R/H with R = 2(n−1)/n · 4|x| (ring all-reduce), as localsgd.
// Staleness recorded per step (steps.staleness): the mean over the round's T updates of the
// updates applied to x_i between a thread's read and its own update (sim: (T−1)/2).
#include <algorithm>
#include <mutex>

#include "algorithms/algorithm.hpp"
#include "algorithms/config_check.hpp"
#include "algorithms/local_threads.hpp"
#include "algorithms/optimizer.hpp"
#include "algorithms/variant.hpp"

namespace dsgd {

void localsgd_timing(const SimTimingPlan& plan, SimTimingState& state, int64_t step, std::vector<double>& clock,
                     SimStepTiming* rows);

namespace {

class Lasgd final : public Algorithm {
 public:
  explicit Lasgd(const RunConfig& cfg)
      : cfg_(cfg), period_(cfg.period), threads_(static_cast<int>(cfg.local_threads)) {}
  std::string name() const override { return "lasgd"; }
  int local_threads() const override { return threads_; }
  int worker_count(int n) const override { return n * threads_; }
  int worker_index(int rank, int n) const override { return rank * threads_; }
  bool owns_optimizer() const override { return true; }

  void setup(TrainState& s) override {
    shared_.assign(s.params, s.params + s.count);
    optimizer_ = optimizer_create(cfg_, s.count, 1);  // the lr comes from the trainer's schedule
    read_version_.assign(static_cast<size_t>(threads_), 0);
    local_.setup(s, LocalThreads::Ops{read_fn, apply_fn, this});
  }
  void begin_step(TrainState& s) override {
    stale_sum_ = 0;
    read(0, s.params);
    local_.start(s);
  }
  void optimizer_step(TrainState& s) override { apply(0, s.grads, s.lr); }
  void after_update(TrainState& s) override {
    local_.finish();
    s.staleness = stale_sum_ / threads_;
    if ((s.step + 1) % period_ == 0) s.comm.allreduce_average(shared_.data(), s.count);
    std::copy(shared_.begin(), shared_.end(), s.params);
    if (s.step + 1 == s.total_steps) local_.stop();
  }
  bool replicas_identical() const override { return period_ == 1; }
  double bytes_sent_per_step(double param_bytes, int n) const override {
    return ring_allreduce_bytes_sent(param_bytes, n) / static_cast<double>(period_);
  }
  int max_collectives_per_step() const override { return 1; }
  // Parameters, gradient, optimizer state, the shared model, and each helper's read and gradient.
  double model_state_bytes(size_t count, int n) const override {
    return (4.0 + 2.0 * (threads_ - 1)) * sizeof(float) * double(count);
  }

 private:
  static void read_fn(void* ctx, int k, float* dst) { static_cast<Lasgd*>(ctx)->read(k, dst); }
  static void apply_fn(void* ctx, int k, const float* g, double lr) { static_cast<Lasgd*>(ctx)->apply(k, g, lr); }
  void read(int k, float* dst) {
    std::lock_guard<std::mutex> lock(mutex_);
    std::copy(shared_.begin(), shared_.end(), dst);
    read_version_[static_cast<size_t>(k)] = version_;
  }
  void apply(int k, const float* g, double lr) {
    std::lock_guard<std::mutex> lock(mutex_);
    optimizer_->step(shared_.data(), g, lr);
    stale_sum_ += double(version_ - read_version_[static_cast<size_t>(k)]);
    ++version_;
  }

  RunConfig cfg_;
  int64_t period_;
  int threads_;
  std::mutex mutex_;  // guards shared_, optimizer_, the versions and stale_sum_
  std::vector<float> shared_;
  std::unique_ptr<Optimizer> optimizer_;
  uint64_t version_ = 0;  // updates applied to shared_
  std::vector<uint64_t> read_version_;
  double stale_sum_ = 0;
  LocalThreads local_;  // last: destroyed (its threads joined) before what they use
};

}  // namespace

std::unique_ptr<Algorithm> algorithm_create_lasgd(const RunConfig& cfg) {
  return std::make_unique<Lasgd>(cfg);
}

const Variant& variant_lasgd() {
  static const Variant v = [] {
    Variant v;
    v.name = "lasgd";
    v.description =
        "locally asynchronous SGD: T threads per worker update its model asynchronously; all-reduce every H steps";
    v.knobs = "--period H, --local-threads T";
    v.flags = {{"local-threads"}};
    v.takes_period = true;
    v.no_compress = "its model average is a plain all-reduce here";
    v.no_compress_hint = "drop --compress, or use localsgd --compress";
    v.create = algorithm_create_lasgd;
    v.host_only = [](const RunConfig&) -> const char* { return "its threads update a shared model in host memory"; };
    // Timing-only: thread 0's timeline is localsgd's (the helpers run on their own cores in
    // lockstep and add no virtual time; local_threads.hpp).
    v.timing = localsgd_timing;
    v.timing_text = "lasgd";
    return v;
  }();
  return v;
}

}  // namespace dsgd
