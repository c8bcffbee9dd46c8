// localsgd: Local SGD (Stich 2019; Lin et al. 2020 "Don't use large mini-batches, use
// local SGD"), with post-local SGD (Lin et al. 2020, §3: synchronous SGD first, then local).
//   t <  K:  x_i ← x_i − η·opt(avg_j g_j)      (ssgd: one gradient all-reduce per step)
//   t >= K:  x_i ← x_i − η·opt(g_i);  x_i ← avg_j x_j after every step t with (t+1−K) ≡ 0 mod H
// K = --post-local (0: plain Local SGD), H = --period. With H = 1 and plain SGD this equals
// ssgd. Momentum buffers stay local (not averaged). Bytes per step per worker (ring,
// R = 2(n−1)/n·|x|·4): R for t < K, R/H after; averaged over the run of T steps:
//   R·(min(K,T) + ⌊(T − min(K,T))/H⌋) / T.
#include <algorithm>

#include "algorithms/algorithm.hpp"

namespace dsgd {

namespace {

class LocalSgd final : public Algorithm {
 public:
  LocalSgd(int64_t period, int64_t post_local) : period_(period), post_local_(post_local) {}
  std::string name() const override { return "localsgd"; }
  void setup(TrainState& s) override { total_steps_ = s.total_steps; }
  void reduce_gradients(TrainState& s) override {
    if (s.step < post_local_) s.comm.allreduce_average(s.grads, s.count);
  }
  void after_update(TrainState& s) override {
    if (s.step >= post_local_ && (s.step + 1 - post_local_) % period_ == 0)
      s.comm.allreduce_average(s.params, s.count);
  }
  bool replicas_identical() const override { return period_ == 1; }
  double bytes_sent_per_step(double param_bytes, int n) const override {
    const double r = ring_allreduce_bytes_sent(param_bytes, n);
    if (post_local_ == 0 || total_steps_ <= 0) return r / static_cast<double>(period_);
    const int64_t k = std::min(post_local_, total_steps_);
    const int64_t syncs = k + (total_steps_ - k) / period_;
    return r * static_cast<double>(syncs) / static_cast<double>(total_steps_);
  }
  int max_collectives_per_step() const override { return 1; }

 private:
  int64_t period_;
  int64_t post_local_;
  int64_t total_steps_ = 0;
};

}  // namespace

std::unique_ptr<Algorithm> algorithm_create_localsgd(const RunConfig& cfg) {
  return std::make_unique<LocalSgd>(cfg.period, cfg.post_local);
}

}  // namespace dsgd
