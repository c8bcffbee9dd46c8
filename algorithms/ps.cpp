// ps: parameter server (Li et al., "Scaling Distributed Machine Learning with the Parameter
// Server", OSDI 2014), bulk synchronous, asynchronous, or stale synchronous (Ho et al., "More
// Effective Distributed ML via a Stale Synchronous Parallel Parameter Server", NIPS 2013),
// with the OD-SGD one-step-delay option (Xu et al., "OD-SGD: One-step Delay Stochastic
// Gradient Descent for Distributed Training", ACM TACO 2020). Rules in docs/algorithms.md.
//
// The model is split into K shards (Communicator::shard_begin(count, K, k)). Shard k's server
// state (parameters, SGD velocity, and in sync mode a gradient accumulator and an arrival
// count) lives in the one-sided window of the rank serving it: rank k (--ps-placement
// colocated: every rank trains, ranks 0..K−1 also serve) or rank n−K+k (dedicated: the last K
// ranks only serve; the first W = n−K train and share the data). Window of every rank, floats:
//   [0] this rank's worker clock (ssp)   [1] sync arrivals   [2, 2+m) parameters
//   [2+m, 2+2m) velocity (momentum > 0)  then [.., +m) gradient accumulator (sync)
// with m the largest shard; the window's version counts the updates applied to the shard.
// Worker step t (every shard k; the update under the exclusive lock is the server's apply):
//   pull   lock k; x̂_k ← params; v_k ← version; unlock                (after_update of t−1)
//   compute g = ∇f(x̂) (the trainer)
//   push   lock k; read state (version V); staleness V − v_k;
//          async/ssp: x_k ← x_k − η·sgd(g_k) (velocity in the window); version V+1
//          sync:      acc_k += g_k, arrivals+1; the W-th arrival applies x_k ← x_k − η·sgd(acc_k/W),
//                     clears acc_k and arrivals, version V+1; the others keep V
//          put state; unlock
//   sync: the pull of step t+1 waits (window_poll) for version t+1 of every shard.
//   ssp:  before step c (its clock: c steps done) a worker publishes c and waits while
//         min_j clock_j < c − s (polling the slow workers' windows; the slowest never waits).
//   one-step delay: no separate pull; the push's read gives x̂_k (read before this push's
//         update), so gradient t+1 is computed while updates t of the others land. sync: the
//         push of step t first waits for version t (update t−1 applied):
//         x_{t+1} = x_t − η·sgd(avg_i g_i(x_{t−1})).
// Staleness of an applied gradient = V − v_k (updates applied to the shard between the read
// it was computed on and its push; with the one-step delay this includes the worker's own
// previous update); a step records the mean over its K shards (docs/metrics.md).
// Equivalences: sync without delay = ssgd (on 2 workers bit-identical: the accumulator sums
// the same two gradients, scaled by 1/W, and sgd_update is SgdOptimizer's arithmetic); any
// mode on 1 worker = serial SGD.
// Bytes sent per step (recorded: puts to another rank's window): a worker puts
// 4·(2 + r·m) bytes per remote shard (r = 1 params + 1 velocity if momentum + 1 sync acc), so
// the mean over n ranks is R·4·(2 + r·m)/n with R the (worker, remote shard) pairs:
// colocated K(n−1), dedicated W·K. The paper's PS sends 4|x| (gradient) and receives 4|x|
// per step; on RMA the pusher carries the server state because it applies the update.
// Limits: SGD only (the state must live in the window); clocks are floats (< 2^24 steps);
// dedicated servers idle through the steps (passive target) and join evaluations. Colocated
// placement opens epochs on the own window and remote ones; the window lock serialises both
// (docs/cluster.md, one-sided windows).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "algorithms/algorithm.hpp"
#include "algorithms/config_check.hpp"
#include "algorithms/optimizer.hpp"
#include "algorithms/variant.hpp"
#include "cluster/backends.hpp"
#include "core/errors.hpp"

namespace dsgd {

namespace {

enum class PsMode { ps_sync, ps_async, ps_ssp };

bool version_at_least(const float*, uint64_t version, const void* ctx) {
  return version >= *static_cast<const uint64_t*>(ctx);
}
bool clock_at_least(const float* data, uint64_t, const void* ctx) {
  return data[0] >= *static_cast<const float*>(ctx);
}

// K for n ranks (core/run_config.hpp: one rule with the configuration check).
int ps_shards(const RunConfig& cfg, int n) {
  return static_cast<int>(run_config_ps_shards(cfg, n));
}

class Ps final : public Algorithm {
 public:
  explicit Ps(const RunConfig& cfg)
      : cfg_(cfg),
        mode_(cfg.ps_mode == "async" ? PsMode::ps_async
              : cfg.ps_mode == "ssp" ? PsMode::ps_ssp
                                     : PsMode::ps_sync),
        bound_(cfg.ps_staleness),
        dedicated_(run_config_ps_dedicated(cfg)),
        delay_(cfg.ps_one_step_delay),
        sgd_{optimizer_base_lr(cfg), cfg.momentum, cfg.weight_decay, cfg.nesterov} {}
  std::string name() const override { return "ps"; }

  int worker_count(int n) const override { return dedicated_ ? std::max(1, n - ps_shards(cfg_, n)) : n; }
  int worker_index(int rank, int n) const override { return rank < worker_count(n) ? rank : -1; }

  void setup(TrainState& s) override {
    s.param_view().host_f32("ps");  // host only (Variant::host_only): the shards live in host windows
    n_ = s.comm.size();
    rank_ = s.comm.rank();
    K_ = ps_shards(cfg_, n_);
    if (static_cast<size_t>(K_) > s.count)
      DSGD_THROW(InputError, "pass fewer shards (--ps-shards)",
                 "--ps-shards {}: larger than the model ({} parameters); a shard would be empty", K_, s.count);
    if (dedicated_ && K_ >= n_)
      DSGD_THROW(InputError, "use fewer shards (--ps-shards) or more ranks (--workers), or --ps-placement colocated",
                 "--ps-placement dedicated with {} shard{} on {} rank{} leaves no worker: the last K ranks only serve",
                 K_, K_ == 1 ? "" : "s", n_, n_ == 1 ? "" : "s");
    if (!dedicated_ && K_ > n_)
      DSGD_THROW(InputError, "pass --ps-shards at most --workers, or --ps-placement dedicated",
                 "--ps-shards {}: colocated placement serves one shard per rank, and there are {} ranks", K_, n_);
    if (s.total_steps >= (int64_t(1) << 24))
      DSGD_THROW(InputError, "run fewer steps per ps run", "{} steps: ps clocks are float32 (exact below 2^24)",
                 s.total_steps);
    W_ = worker_count(n_);
    worker_ = worker_index(rank_, n_) >= 0;
    count_ = s.count;
    begin_.resize(static_cast<size_t>(K_) + 1);
    server_.resize(static_cast<size_t>(K_));
    for (int k = 0; k <= K_; ++k) begin_[static_cast<size_t>(k)] = Communicator::shard_begin(s.count, K_, k);
    m_ = 0;
    for (int k = 0; k < K_; ++k) {
      m_ = std::max(m_, len(k));
      server_[static_cast<size_t>(k)] = dedicated_ ? n_ - K_ + k : k;
    }
    vel_ = kParams + m_;
    acc_ = vel_ + (sgd_.momentum != 0.0 ? m_ : 0);
    end_ = acc_ + (mode_ == PsMode::ps_sync ? m_ : 0);
    last_region_ = mode_ == PsMode::ps_sync ? acc_ : sgd_.momentum != 0.0 ? vel_ : kParams;
    state_.assign(end_, 0.0f);
    version_.assign(static_cast<size_t>(K_), 0);
    clocks_.assign(static_cast<size_t>(W_), 0.0f);
    eval_.assign(s.count, 0.0f);
    s.comm.window_create(end_);
    for (int k = 0; k < K_; ++k) {
      if (server_[static_cast<size_t>(k)] != rank_) continue;
      std::fill(state_.begin(), state_.end(), 0.0f);
      std::copy(s.params + begin_[k], s.params + begin_[k + 1], state_.begin() + kParams);
      s.comm.window_lock(rank_);
      s.comm.window_put(state_.data(), end_, rank_, 0);
      s.comm.window_unlock(rank_);
    }
    s.comm.untimed_barrier();  // every server holds x_0 (all ranks start from the same seed)
  }

  bool owns_optimizer() const override { return true; }

  // The push of every shard (the trainer's optimizer phase).
  void optimizer_step(TrainState& s) override {
    double stale = 0;
    for (int k = 0; k < K_; ++k) {
      const int server = server_[static_cast<size_t>(k)];
      const size_t b = begin_[k], n = len(k);
      if (mode_ == PsMode::ps_sync && delay_) {
        const uint64_t want = static_cast<uint64_t>(s.step);  // update t−1 applied
        s.comm.window_poll(state_.data(), 1, server, version_at_least, &want);
      }
      uint64_t v = 0;
      const size_t used = last_region_ + n;  // header, params, velocity, accumulator of shard k
      s.comm.window_lock(server);
      s.comm.window_get(state_.data(), used, server, &v);
      stale += double(v - version_[static_cast<size_t>(k)]);
      float* x = state_.data() + kParams;
      float* vel = state_.data() + vel_;
      if (delay_) std::copy(x, x + n, s.params + b);  // x̂ for the next gradient: read before this update
      uint64_t put_version = v + 1;
      if (mode_ == PsMode::ps_sync) {
        float* acc = state_.data() + acc_;
        for (size_t i = 0; i < n; ++i) acc[i] += s.grads[b + i];
        state_[kArrivals] += 1.0f;
        if (state_[kArrivals] >= static_cast<float>(W_)) {
          if (W_ > 1) {
            const float scale = 1.0f / static_cast<float>(W_);
            for (size_t i = 0; i < n; ++i) acc[i] *= scale;
          }
          sgd_update(sgd_, x, vel, acc, n, s.lr);
          std::fill(acc, acc + n, 0.0f);
          state_[kArrivals] = 0.0f;
        } else {
          put_version = v;
        }
      } else {
        sgd_update(sgd_, x, vel, s.grads + b, n, s.lr);
      }
      s.comm.window_put(state_.data(), used, server, put_version);
      s.comm.window_unlock(server);
      if (delay_) version_[static_cast<size_t>(k)] = v;
    }
    s.staleness = stale / K_;
    stale_sum_ += s.staleness;
    stale_max_ = std::max(stale_max_, s.staleness);
    ++pushes_;
  }

  void after_update(TrainState& s) override {
    if (s.step + 1 == s.total_steps) last_done_ = true;
    if (!worker_) return;
    const int64_t clock = s.step + 1;  // steps this worker has completed
    if (mode_ == PsMode::ps_ssp && !last_done_) ssp_wait(s, clock);
    if (delay_ || last_done_) return;  // delay: the push read x̂; last: global_model reads
    for (int k = 0; k < K_; ++k) {
      const int server = server_[static_cast<size_t>(k)];
      const size_t n = len(k);
      uint64_t v = 0;
      if (mode_ == PsMode::ps_sync) {
        const uint64_t want = static_cast<uint64_t>(clock);  // update t applied
        v = s.comm.window_poll(state_.data(), kParams + n, server, version_at_least, &want);
      } else {
        s.comm.window_lock(server);
        s.comm.window_get(state_.data(), kParams + n, server, &v);
        s.comm.window_unlock(server);
      }
      std::copy(state_.begin() + kParams, state_.begin() + static_cast<ptrdiff_t>(kParams + n), s.params + begin_[k]);
      version_[static_cast<size_t>(k)] = v;
    }
  }

  // All ranks: after every push of the interval has landed, read every shard. After the
  // last step also report the staleness and free the window.
  const float* global_model(TrainState& s) override {
    if (finished_) return eval_.data();
    s.comm.untimed_barrier();
    for (int k = 0; k < K_; ++k) {
      const int server = server_[static_cast<size_t>(k)];
      uint64_t v = 0;
      s.comm.window_lock(server);
      s.comm.window_get(state_.data(), kParams + len(k), server, &v);
      s.comm.window_unlock(server);
      std::copy(state_.begin() + kParams, state_.begin() + static_cast<ptrdiff_t>(kParams + len(k)),
                eval_.begin() + static_cast<ptrdiff_t>(begin_[k]));
    }
    if (last_done_) finish(s);
    return eval_.data();
  }

  bool replicas_identical() const override { return true; }  // the model is the servers' (global_model)

  double bytes_sent_per_step(double param_bytes, int n) const override {
    if (n <= 1) return 0.0;
    const int k = ps_shards(cfg_, n);
    const size_t count = static_cast<size_t>(param_bytes / sizeof(float));
    const size_t shard = (count + static_cast<size_t>(k) - 1) / static_cast<size_t>(k);  // ceil(count / k)
    const double m = double(shard);
    const double regions = 1.0 + (cfg_.momentum != 0.0 ? 1.0 : 0.0) + (mode_ == PsMode::ps_sync ? 1.0 : 0.0);
    const double pairs = dedicated_ ? double(worker_count(n)) * k : double(k) * (n - 1);
    return pairs * 4.0 * (double(kParams) + regions * m) / n;
  }
  // Push K + pull or poll K + ssp (clock publish + a poll per other worker) + delay polls K.
  int max_collectives_per_step() const override { return 3 * K_ + W_ + 2; }
  double model_state_bytes(size_t count, int n) const override {
    const int k = ps_shards(cfg_, n);
    const size_t shard = (count + static_cast<size_t>(k) - 1) / static_cast<size_t>(k);  // ceil(count / k)
    const double m = double(shard);
    const double regions = 1.0 + (cfg_.momentum != 0.0 ? 1.0 : 0.0) + (mode_ == PsMode::ps_sync ? 1.0 : 0.0);
    // params, gradient, evaluation copy, and the window plus its staging copy
    return sizeof(float) * (3.0 * double(count) + 2.0 * (double(kParams) + regions * m));
  }

 private:
  static constexpr size_t kClock = 0, kArrivals = 1, kParams = 2;
  size_t len(int k) const { return begin_[k + 1] - begin_[k]; }

  // SSP (Ho et al.): publish this worker's clock c, then wait while a worker is below c − s.
  void ssp_wait(TrainState& s, int64_t clock) {
    uint64_t v = 0;
    s.comm.window_lock(rank_);
    s.comm.window_get(state_.data(), 1, rank_, &v);
    state_[kClock] = static_cast<float>(clock);
    s.comm.window_put(state_.data(), 1, rank_, v);  // the version (shard updates) unchanged
    s.comm.window_unlock(rank_);
    const float need = static_cast<float>(clock - bound_);
    if (need <= 0) return;
    for (int j = 0; j < W_; ++j) {
      if (j == rank_ || clocks_[static_cast<size_t>(j)] >= need) continue;
      s.comm.window_poll(state_.data(), 1, j, clock_at_least, &need);
      clocks_[static_cast<size_t>(j)] = state_[kClock];
      ++ssp_waits_;
    }
    float slowest = static_cast<float>(clock);
    for (int j = 0; j < W_; ++j)
      if (j != rank_) slowest = std::min(slowest, clocks_[static_cast<size_t>(j)]);
    gap_after_max_ = std::max(gap_after_max_, double(clock) - double(slowest));
  }

  void finish(TrainState& s) {
    double mine[4] = {pushes_ > 0 ? stale_sum_ / double(pushes_) : std::nan(""),
                      pushes_ > 0 ? stale_max_ : std::nan(""), gap_after_max_, double(ssp_waits_)};
    std::vector<double> all(static_cast<size_t>(4 * n_));
    s.comm.untimed_gather(mine, 4, all.data(), 0);
    if (rank_ == 0) {
      for (int r = 0; r < n_; ++r) {
        const double* v = all.data() + 4 * static_cast<ptrdiff_t>(r);
        if (r >= W_) {
          std::printf("ps rank %d: server only\n", r);
          continue;
        }
        std::printf("ps staleness rank %d: mean %.3f, max %.3f updates per push", r, v[0], v[1]);
        if (mode_ == PsMode::ps_ssp)
          std::printf("; ssp: clock gap c - min clock at a step start max %.0f (bound %lld), %.0f waits", v[2],
                      static_cast<long long>(bound_), v[3]);
        std::printf("\n");
      }
      std::fflush(stdout);
    }
    s.comm.window_free();
    finished_ = true;
  }

  RunConfig cfg_;
  PsMode mode_;
  int64_t bound_;
  bool dedicated_, delay_;
  SgdOptions sgd_;
  int n_ = 1, rank_ = 0, K_ = 1, W_ = 1;
  bool worker_ = true, last_done_ = false, finished_ = false;
  size_t count_ = 0, m_ = 0, vel_ = 0, acc_ = 0, end_ = 0, last_region_ = 0;
  std::vector<size_t> begin_;
  std::vector<int> server_;
  std::vector<float> state_, eval_;
  std::vector<uint64_t> version_;  // version of each shard x̂ was read at
  std::vector<float> clocks_;      // last seen clock of each worker (ssp)
  double stale_sum_ = 0, stale_max_ = 0, gap_after_max_ = 0;
  int64_t pushes_ = 0, ssp_waits_ = 0;
};

}  // namespace

std::unique_ptr<Algorithm> algorithm_create_ps(const RunConfig& cfg) {
  return std::make_unique<Ps>(cfg);
}

namespace {

void ps_validate(const RunConfig& cfg) {
  const RunConfig def;
  if (cfg.ps_mode != "sync" && cfg.ps_mode != "async" && cfg.ps_mode != "ssp")
    config_fail("ps-mode", fmt::format("unknown mode '{}'", cfg.ps_mode), "available: sync, async, ssp");
  if (cfg.ps_staleness != def.ps_staleness && cfg.ps_mode != "ssp")
    config_fail("ps-staleness", fmt::format("applies to --ps-mode ssp only (got --ps-mode {})", cfg.ps_mode),
                "drop --ps-staleness, or pass --ps-mode ssp");
  if (cfg.ps_mode == "ssp" && cfg.ps_staleness < 0)
    config_fail("ps-staleness",
                cfg.ps_staleness == def.ps_staleness ? "is required with --ps-mode ssp"
                                                     : fmt::format("must be >= 0 (got {})", cfg.ps_staleness),
                "pass the bound in clocks, e.g. --ps-staleness 2 (0: every worker within one step of the slowest)");
  if (cfg.ps_placement != "auto" && cfg.ps_placement != "colocated" && cfg.ps_placement != "dedicated")
    config_fail("ps-placement", fmt::format("unknown placement '{}'", cfg.ps_placement),
                "available: auto (dedicated on more than one worker), colocated, dedicated");
  const bool dedicated = run_config_ps_dedicated(cfg);
  const int64_t k = run_config_ps_shards(cfg, cfg.workers);
  if (dedicated && k >= cfg.workers)
    config_fail(
        "ps-shards",
        fmt::format(
            "--ps-placement dedicated with {} shard(s) on {} rank(s) leaves no worker: the last K ranks only serve", k,
            cfg.workers),
        "use fewer shards or more --workers, or --ps-placement colocated");
  if (!dedicated && k > cfg.workers)
    config_fail("ps-shards",
                fmt::format("{} shards, but colocated placement serves one shard per rank and there are {} ranks", k,
                            cfg.workers),
                "pass --ps-shards at most --workers, or --ps-placement dedicated");
  if (optimizer_resolve_name(cfg) == "adamw")
    config_fail("optimizer",
                "adamw does not apply to --algo ps: its servers apply SGD (momentum, Nesterov, weight decay)",
                "pass --optimizer sgd (or auto) with --algo ps");
}

}  // namespace

const Variant& variant_ps() {
  static const Variant v = [] {
    Variant v;
    v.name = "ps";
    v.description =
        "parameter server: sharded server state in one-sided windows; sync, async or stale-synchronous (SSP)";
    v.knobs = "--ps-mode, --ps-staleness s, --ps-shards K, --ps-placement, --ps-one-step-delay";
    v.flags = {{"ps-mode"},
               {"ps-staleness", "--algo ps --ps-mode ssp"},
               {"ps-shards"},
               {"ps-placement"},
               {"ps-one-step-delay"}};
    v.no_compress = "it pushes to and pulls from server shards in one-sided windows, not by all-reduce";
    v.validate = ps_validate;
    v.create = algorithm_create_ps;
    v.needs = [](const RunConfig&) -> uint32_t { return cap_one_sided_windows; };
    v.host_only = [](const RunConfig&) { return "its servers' shards live in one-sided windows of host memory"; };
    return v;
  }();
  return v;
}

}  // namespace dsgd
