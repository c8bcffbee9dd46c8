// adpsgd: asynchronous decentralised parallel SGD (AD-PSGD; Lian, Zhang, Zhang & Liu,
// "Asynchronous Decentralized Parallel Stochastic Gradient Descent", ICML 2018).
// Workers are split into a bipartite graph: even ranks are active, odd ranks passive. Only an
// active worker starts an averaging, and only with a passive neighbour, so a pair averages
// atomically without any cycle of waits (no deadlock). Each worker exposes its model in a
// one-sided window (Communicator::window_*: MPI RMA, passive-target exclusive lock).
// Step of an active worker a (gradient g at its model x̂_a, read at the step's start):
//   lock(p); x_p ← window of p;  avg = (x̂_a + x_p)/2;  window of p ← avg (version_p + 1);
//   unlock(p);  x_a ← avg − η·opt(g)
// with p a neighbour of opposite parity drawn uniformly from (seed, rank, step).
// Step of a passive worker p (gradient at x̂_p, its model when the step started):
//   lock(p); x_p ← window of p (including the averages actives wrote meanwhile);
//   x_p ← x_p − η·opt(g(x̂_p)); window ← x_p; unlock(p)
// i.e. the optimizer's update δ = −η·opt(g) computed by the trainer on x̂ is applied to the
// current shared model. Staleness seen by a passive step = the averages applied to its
// model while it computed (version difference); printed at the end (mean, max per rank).
// Staleness recorded per step (TrainState::staleness, steps.staleness; docs/metrics.md):
// passive: that version difference; active: the version lag of the neighbour model it read,
// i.e. the averages other actives wrote into p since this active last wrote p (0 when it
// never did: versions before its first visit count from 0).
// No barrier inside the loop: ranks drift apart by up to one evaluation interval (the
// harness synchronises at evaluations). After the last step all ranks meet at a barrier and
// passives reload their final shared model.
// Bytes sent per step: an active sends 4|x| (the put); a passive 0; mean over ranks
// ⌊(n+1)/2⌋/n · 4|x| (n ≥ 2). n = 1: plain SGD, no window.
// Counts printed at the end: averagings done by the actives and applied in the passives'
// windows (the sum of their final versions; equal unless an update was lost), and each
// active's own window version (0: nobody writes it after setup).
// Limits: the recorded event of a step is its locked epoch (kind one-sided: all comm, no
// cross-rank wait split); the consensus at an evaluation uses each passive's last read model.
#include <algorithm>
#include <cstdio>

#include "algorithms/algorithm.hpp"
#include "algorithms/config_check.hpp"
#include "algorithms/variant.hpp"
#include "cluster/backends.hpp"
#include "cluster/topology.hpp"
#include "core/errors.hpp"
#include "core/rng.hpp"

namespace dsgd {

namespace {

class Adpsgd final : public Algorithm {
 public:
  Adpsgd(std::string topology, uint64_t seed) : spec_(std::move(topology)), seed_(seed) {}
  std::string name() const override { return "adpsgd"; }

  void setup(TrainState& s) override {
    n_ = s.comm.size();
    rank_ = s.comm.rank();
    if (n_ == 1) return;
    const Topology topo = topology_make(spec_, n_, seed_);
    if (topo.time_varying)
      DSGD_THROW(InputError, "use a static topology: complete, ring (even n), torus, exp, hier",
                 "--topology {}: adpsgd picks its own random neighbour; a time-varying topology does not apply", spec_);
    for (int r = 0; r < n_; r += 2) {
      size_t passive = 0;
      for (int j : topo.neighbors[static_cast<size_t>(r)]) passive += (j % 2 == 1);
      if (passive == 0)
        DSGD_THROW(
            InputError, "use a topology in which every even rank has an odd neighbour (complete, ring with even n)",
            "--topology {}: active rank {} has no passive (odd) neighbour, adpsgd's bipartite split cannot pair it",
            spec_, r);
    }
    if (active()) {
      for (int j : topo.neighbors[static_cast<size_t>(rank_)])
        if (j % 2 == 1) passive_peers_.push_back(j);
      seen_version_.assign(static_cast<size_t>(n_), 0);
    }
    const float* x0 = s.param_view().host_f32("adpsgd");  // host only (Variant::host_only)
    before_.assign(x0, x0 + s.count);
    peer_.assign(s.count, 0.0f);
    s.comm.window_create(s.count);
    s.comm.window_lock(rank_);
    s.comm.window_put(s.params, s.count, rank_, 0);
    s.comm.window_unlock(rank_);
    s.comm.untimed_barrier();
  }

  void after_update(TrainState& s) override {
    if (n_ == 1) return;
    float* x = s.param_view().host_f32("adpsgd");
    if (active()) {
      Rng rng(rng_derive_seed(seed_, static_cast<uint64_t>(rank_), static_cast<uint64_t>(s.step), 0xad95ULL));
      const int p = passive_peers_[rng.below(passive_peers_.size())];
      uint64_t version = 0;
      s.comm.window_lock(p);
      s.comm.window_get(peer_.data(), s.count, p, &version);
      uint64_t& seen = seen_version_[static_cast<size_t>(p)];
      s.staleness = double(version - seen);
      seen = version + 1;
      for (size_t i = 0; i < s.count; ++i) peer_[i] = 0.5f * (before_[i] + peer_[i]);  // avg
      s.comm.model_passes_done(1);  // inside the epoch: the passive's window stays locked meanwhile
      s.comm.window_put(peer_.data(), s.count, p, version + 1);
      s.comm.window_unlock(p);
      for (size_t i = 0; i < s.count; ++i) x[i] = peer_[i] + (x[i] - before_[i]);  // avg + δ
      s.comm.model_passes_done(1);
      ++averages_;
    } else {
      uint64_t version = 0;
      s.comm.window_lock(rank_);
      s.comm.window_get(peer_.data(), s.count, rank_, &version);
      for (size_t i = 0; i < s.count; ++i) x[i] = peer_[i] + (x[i] - before_[i]);  // shared + δ
      s.comm.model_passes_done(1);
      s.comm.window_put(x, s.count, rank_, version);
      s.comm.window_unlock(rank_);
      const uint64_t stale = version - last_version_;
      last_version_ = version;
      s.staleness = double(stale);
      stale_sum_ += double(stale);
      stale_max_ = std::max(stale_max_, stale);
      ++stale_steps_;
    }
    std::copy(x, x + s.count, before_.begin());
    s.comm.model_passes_done(1);
  }

  bool replicas_identical() const override { return false; }
  double bytes_sent_per_step(double param_bytes, int n) const override {
    const int active = (n + 1) / 2;  // ranks that send in a step: ceil(n / 2)
    return n <= 1 ? 0.0 : double(active) / n * param_bytes;
  }
  int max_collectives_per_step() const override { return 1; }  // one access epoch

 private:
  bool active() const { return rank_ % 2 == 0; }

  // After the last step, untimed: all ranks meet; passives reload the shared model (averages
  // written after their last step); the staleness seen is printed by rank 0 for every rank;
  // the window is freed.
  void end_run(TrainState& s) override {
    if (n_ == 1) return;
    s.comm.untimed_barrier();
    // Every rank reads its own window (the same events on every rank); passives keep it.
    uint64_t version = 0;
    s.comm.window_lock(rank_);
    s.comm.window_get(peer_.data(), s.count, rank_, &version);
    s.comm.window_unlock(rank_);
    if (!active()) std::copy(peer_.begin(), peer_.end(), s.params);
    double mine[4] = {stale_steps_ > 0 ? stale_sum_ / double(stale_steps_) : 0.0, double(stale_max_), double(averages_),
                      double(version)};
    std::vector<double> all(static_cast<size_t>(4 * n_));
    s.comm.untimed_gather(mine, 4, all.data(), 0);
    if (rank_ == 0) {
      double done = 0, applied = 0;
      for (int r = 0; r < n_; ++r) {
        const double* v = all.data() + 4 * static_cast<ptrdiff_t>(r);
        if (r % 2 == 1) {
          std::printf("adpsgd staleness rank %d (passive): mean %.3f, max %.0f averages applied during one step\n", r,
                      v[0], v[1]);
          applied += v[3];
        } else {
          // Nobody writes an active's window after setup: its version stays 0.
          std::printf("adpsgd rank %d (active): %.0f averagings, own window version %.0f\n", r, v[2], v[3]);
          done += v[2];
        }
      }
      // Every averaging increments its passive's version exactly once under the window lock,
      // and a passive's step writes back the version it read: equal unless an update was lost.
      std::printf("adpsgd averagings: %.0f done by actives, %.0f applied in passive windows\n", done, applied);
      std::fflush(stdout);
    }
    s.comm.window_free();
  }

  std::string spec_;
  uint64_t seed_;
  int n_ = 1, rank_ = 0;
  std::vector<int> passive_peers_;
  std::vector<uint64_t> seen_version_;  // active: version of each passive after this rank's last put
  std::vector<float> before_, peer_;
  uint64_t last_version_ = 0, stale_max_ = 0, stale_steps_ = 0, averages_ = 0;
  double stale_sum_ = 0;
};

}  // namespace

std::unique_ptr<Algorithm> algorithm_create_adpsgd(const RunConfig& cfg) {
  return std::make_unique<Adpsgd>(cfg.topology, cfg.seed);
}

const Variant& variant_adpsgd() {
  static const Variant v = [] {
    Variant v;
    v.name = "adpsgd";
    v.gossip_every_step = true;
    v.reads_topology = true;
    v.model_passes = true;
    v.description = "AD-PSGD: asynchronous; active (even) ranks average atomically with a random passive neighbour";
    v.knobs = "--topology";
    v.no_compress = "it exchanges models point-to-point with its neighbours (gossip), not by all-reduce";
    v.create = algorithm_create_adpsgd;
    v.needs = [](const RunConfig&) -> uint32_t { return cap_one_sided_windows; };
    v.host_only = [](const RunConfig&) { return "its one-sided windows expose host memory"; };
    return v;
  }();
  return v;
}

}  // namespace dsgd
