// localsgd: Local SGD (Stich 2019; Lin et al. 2020 "Don't use large mini-batches").
//   x_i ← x_i − η·opt(g_i)            every step, no communication
//   x_i ← avg_j x_j                  after every H-th step (t+1 ≡ 0 mod H)
// With H = 1 and plain SGD this equals ssgd. Bytes per step per worker (ring):
// 2(n−1)/n · |x|·4 / H. Momentum buffers stay local (not averaged).
#include "algorithms/algorithm.hpp"

namespace dsgd {

namespace {

class LocalSgd final : public Algorithm {
 public:
  explicit LocalSgd(int64_t period) : period_(period) {}
  std::string name() const override { return "localsgd"; }
  void after_update(TrainState& s) override {
    if ((s.step + 1) % period_ == 0) s.comm.allreduce_average(s.params, s.count);
  }
  bool replicas_identical() const override { return period_ == 1; }
  double bytes_sent_per_step(double param_bytes, int n) const override {
    return ring_allreduce_bytes_sent(param_bytes, n) / static_cast<double>(period_);
  }
  int max_collectives_per_step() const override { return 1; }

 private:
  int64_t period_;
};

}  // namespace

std::unique_ptr<Algorithm> algorithm_create_localsgd(const RunConfig& cfg) {
  return std::make_unique<LocalSgd>(cfg.period);
}

}  // namespace dsgd
