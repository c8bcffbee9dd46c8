// ssgd: synchronous data-parallel SGD.
//   x ← x − η·opt(avg_i g_i)   every step, one all-reduce of the whole gradient.
// Bytes sent per step per worker (ring): 2(n−1)/n · |x|·4.
// Limits: one blocking all-reduce after backward (bucketing and overlap with backward
// are the next step, see issue "SGD variants").
#include "algorithms/algorithm.hpp"

namespace dsgd {

namespace {

class Ssgd final : public Algorithm {
 public:
  std::string name() const override { return "ssgd"; }
  void reduce_gradients(TrainState& s) override { s.comm.allreduce_average(s.grads, s.count); }
  bool replicas_identical() const override { return true; }
  double bytes_sent_per_step(double param_bytes, int n) const override {
    return ring_allreduce_bytes_sent(param_bytes, n);
  }
  int max_collectives_per_step() const override { return 1; }
};

}  // namespace

std::unique_ptr<Algorithm> algorithm_create_ssgd(const RunConfig&) { return std::make_unique<Ssgd>(); }

}  // namespace dsgd
