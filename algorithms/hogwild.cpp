// hogwild: lock-free asynchronous updates inside a worker (Recht, Re, Wright & Niu, "HOGWILD!:
// A Lock-Free Approach to Parallelizing Stochastic Gradient Descent", NeurIPS 2011), combined
// with an asynchronous exchange across workers (--across ps: the asynchronous parameter
// server of algorithms/ps.cpp, as Downpour SGD, Dean et al. 2012; --across gossip: D-PSGD,
// algorithms/dpsgd.cpp). T = --local-threads threads per worker, plain SGD (no momentum: the
// update is an element-wise lock-free add); thread k of a step (round) reads the worker's
// model (element by element, relaxed atomic loads: a read may mix two updates, as in
// Hogwild!), computes g_k on its own batch and, as soon as it is ready:
//   --across gossip:  x_i[j] ← x_i[j] − η·g_k[j] for every j with g_k[j] ≠ 0 (relaxed atomic
//                     add; on sparse data only the batch's features); thread 0 (the
//                     trainer's) applies the whole rule x_i ← x_i − η·(g_0 + λ·x_i), so the
//                     L2 term is applied once per worker step; after the round
//                     x_i ← Σ_j W_ij x_j (dpsgd --dpsgd-delay 0's blocking neighbour exchange).
//   --across ps:      a_i[j] ← a_i[j] + g_k[j] for g_k[j] ≠ 0 (relaxed atomic add into the
//                     worker's push buffer); the worker pushes G = g_0 + a_i as one
//                     asynchronous update (x ← x − η·sgd(G) on the server, ps --ps-mode async)
//                     and pulls the servers' model, which all its threads read next step.
// Threads and their interleaving: algorithms/local_threads.hpp (OS threads on mpi; on sim T
// cores in lockstep: reads at the round's start, updates in thread order). Data: T streams
// per computing rank (as lasgd). T = 1 equals ps --ps-mode async / dpsgd bit for bit (the
// same calls; thread 0's gossip update is sgd_update, SgdOptimizer's arithmetic).
// Bytes sent per step: the exchange's (ps async's or dpsgd's formula, docs/algorithms.md).
// Staleness per step: --across ps: ps's (server updates between pull and push); gossip: the
// mean over the round's T updates of the updates applied to x_i between a thread's read and
// its own update (sim: (T−1)/2).
// Limits: SGD without momentum only (lock-free shared velocity would be a different method);
// ps's own knobs keep their defaults (async, dedicated server on > 1 worker).
#include <algorithm>
#include <atomic>

#include "algorithms/algorithm.hpp"
#include "algorithms/config_check.hpp"
#include "algorithms/local_threads.hpp"
#include "algorithms/optimizer.hpp"
#include "algorithms/variant.hpp"
#include "cluster/backends.hpp"

namespace dsgd {

std::unique_ptr<Algorithm> algorithm_create_ps(const RunConfig& cfg);
std::unique_ptr<Algorithm> algorithm_create_dpsgd(const RunConfig& cfg);

namespace {

class Hogwild final : public Algorithm {
 public:
  explicit Hogwild(const RunConfig& cfg)
      : gossip_(cfg.across == "gossip"),
        threads_(static_cast<int>(cfg.local_threads)),
        sgd_{optimizer_base_lr(cfg), 0.0, cfg.weight_decay, false} {
    RunConfig inner = cfg;
    if (gossip_) {
      inner.dpsgd_delay = 0;
      inner_ = algorithm_create_dpsgd(inner);
    } else {
      inner.ps_mode = "async";
      inner_ = algorithm_create_ps(inner);
    }
  }
  std::string name() const override { return "hogwild"; }
  int local_threads() const override { return threads_; }
  int worker_count(int n) const override { return inner_->worker_count(n) * threads_; }
  int worker_index(int rank, int n) const override {
    const int i = inner_->worker_index(rank, n);
    return i < 0 ? -1 : i * threads_;
  }
  bool owns_optimizer() const override { return true; }

  void setup(TrainState& s) override {
    inner_->setup(s);
    params_ = s.params;
    count_ = s.count;
    if (gossip_) {
      shared_.assign(s.params, s.params + s.count);
    } else {
      push_.assign(s.count, 0.0f);
    }
    read_version_.assign(static_cast<size_t>(threads_), 0);
    local_.setup(s, LocalThreads::Ops{read_fn, apply_fn, this});
  }
  void begin_step(TrainState& s) override {
    inner_->begin_step(s);
    stale_sum_ = 0;
    if (gossip_) read(0, s.params);
    local_.start(s);
  }
  void on_layer_grad_ready(TrainState& s, size_t layer) override { inner_->on_layer_grad_ready(s, layer); }
  void reduce_gradients(TrainState& s) override { inner_->reduce_gradients(s); }
  void optimizer_step(TrainState& s) override {
    if (gossip_) {
      apply(0, s.grads, s.lr);
      return;
    }
    local_.finish();  // every helper's gradient is in the push buffer
    if (threads_ > 1)
      for (size_t j = 0; j < s.count; ++j) {
        s.grads[j] += push_[j];
        push_[j] = 0.0f;
      }
    inner_->optimizer_step(s);  // ps async: push G, staleness from the server's versions
  }
  void after_update(TrainState& s) override {
    if (gossip_) {
      local_.finish();
      s.staleness = stale_sum_ / threads_;
      std::copy(shared_.begin(), shared_.end(), s.params);
      inner_->after_update(s);  // dpsgd: mix with the neighbours
      std::copy(s.params, s.params + s.count, shared_.begin());
    } else {
      inner_->after_update(s);  // ps: pull the servers' model
    }
    if (s.step + 1 == s.total_steps) local_.stop();
  }
  void end_run(TrainState& s) override { inner_->end_run(s); }
  const float* global_model(TrainState& s) override { return inner_->global_model(s); }
  bool replicas_identical() const override { return inner_->replicas_identical(); }
  double bytes_sent_per_step(double param_bytes, int n) const override {
    return inner_->bytes_sent_per_step(param_bytes, n);
  }
  int max_collectives_per_step() const override { return inner_->max_collectives_per_step(); }
  // The exchange's state, the shared model or push buffer, and each helper's read and gradient.
  double model_state_bytes(size_t count, int n) const override {
    return inner_->model_state_bytes(count, n) + (1.0 + 2.0 * (threads_ - 1)) * sizeof(float) * double(count);
  }
  std::string details_json() const override { return inner_->details_json(); }

 private:
  static void read_fn(void* ctx, int k, float* dst) { static_cast<Hogwild*>(ctx)->read(k, dst); }
  static void apply_fn(void* ctx, int k, const float* g, double lr) { static_cast<Hogwild*>(ctx)->apply(k, g, lr); }

  // gossip: the shared model, element by element; ps: the pulled model (nobody writes it
  // during a round: the pull runs after every helper finished).
  void read(int k, float* dst) {
    if (!gossip_) {
      std::copy(params_, params_ + count_, dst);
      return;
    }
    read_version_[static_cast<size_t>(k)] = version_.load(std::memory_order_relaxed);
    float* x = shared_.data();
    for (size_t j = 0; j < count_; ++j) dst[j] = std::atomic_ref<float>(x[j]).load(std::memory_order_relaxed);
  }

  void apply(int k, const float* g, double lr_d) {
    if (!gossip_) {  // a helper's gradient into the push buffer
      float* a = push_.data();
      for (size_t j = 0; j < count_; ++j)
        if (g[j] != 0.0f) std::atomic_ref<float>(a[j]).fetch_add(g[j], std::memory_order_relaxed);
      return;
    }
    float* x = shared_.data();
    const float lr = static_cast<float>(lr_d);
    if (threads_ == 1) {
      sgd_update(sgd_, x, nullptr, g, count_, lr_d);  // nothing runs concurrently
    } else if (k == 0) {  // the whole rule, x ← x − η·(g + λ·x), one element at a time
      const float wd = static_cast<float>(sgd_.weight_decay);
      for (size_t j = 0; j < count_; ++j) {
        std::atomic_ref<float> r(x[j]);
        float old = r.load(std::memory_order_relaxed);
        float next = old;
        do {
          next = old;
          next -= lr * (g[j] + wd * old);
        } while (!r.compare_exchange_weak(old, next, std::memory_order_relaxed));
      }
    } else {
      for (size_t j = 0; j < count_; ++j)
        if (g[j] != 0.0f) std::atomic_ref<float>(x[j]).fetch_add(-(lr * g[j]), std::memory_order_relaxed);
    }
    const uint64_t before = version_.fetch_add(1, std::memory_order_relaxed);
    stale_add(double(before - read_version_[static_cast<size_t>(k)]));
  }
  void stale_add(double v) {
    double cur = stale_sum_.load(std::memory_order_relaxed);
    while (!stale_sum_.compare_exchange_weak(cur, cur + v, std::memory_order_relaxed)) {
    }
  }

  bool gossip_;
  int threads_;
  SgdOptions sgd_;
  std::unique_ptr<Algorithm> inner_;
  float* params_ = nullptr;
  size_t count_ = 0;
  std::vector<float> shared_, push_;  // gossip: the worker's model; ps: the helpers' summed gradients
  std::atomic<uint64_t> version_{0};  // gossip: updates applied to shared_
  std::vector<uint64_t> read_version_;
  std::atomic<double> stale_sum_{0};
  LocalThreads local_;  // last: destroyed (its threads joined) before what they use
};

void hogwild_validate(const RunConfig& cfg) {
  if (cfg.across != "ps" && cfg.across != "gossip")
    config_fail("across", fmt::format("unknown exchange '{}'", cfg.across),
                "available: ps (asynchronous parameter server), gossip (D-PSGD)");
  if (optimizer_resolve_name(cfg) == "adamw")
    config_fail("optimizer", "adamw does not apply to --algo hogwild: its threads apply lock-free plain SGD updates",
                "pass --optimizer sgd (or auto) with --algo hogwild");
  if (cfg.momentum != 0.0)
    config_fail(
        "momentum",
        fmt::format("must be 0 with --algo hogwild (got {}): its lock-free updates are plain SGD", cfg.momentum),
        "drop --momentum, or use lasgd for threads sharing a momentum state");
}

}  // namespace

std::unique_ptr<Algorithm> algorithm_create_hogwild(const RunConfig& cfg) {
  return std::make_unique<Hogwild>(cfg);
}

const Variant& variant_hogwild() {
  static const Variant v = [] {
    Variant v;
    v.name = "hogwild";
    v.description =
        "Hogwild!: T threads per worker with lock-free updates; asynchronous exchange across workers (ps or gossip)";
    v.knobs = "--local-threads T, --across ps|gossip, --topology (gossip)";
    v.flags = {{"local-threads"}, {"across"}};
    v.no_compress = "its exchange is the asynchronous parameter server or point-to-point gossip, not an all-reduce";
    v.validate = hogwild_validate;
    v.create = algorithm_create_hogwild;
    v.needs = [](const RunConfig& cfg) -> uint32_t {
      return cfg.across == "gossip" ? cap_point_to_point : cap_one_sided_windows;
    };
    v.host_only = [](const RunConfig&) -> const char* { return "its threads update a shared model in host memory"; };
    return v;
  }();
  return v;
}

}  // namespace dsgd
