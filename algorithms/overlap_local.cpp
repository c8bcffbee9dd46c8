// overlap-local: Overlap Local-SGD (Wang, Liang & Joshi 2020, "Overlap Local-SGD: An
// Algorithmic Approach to Hide Communication Delays in Distributed SGD", ICASSP).
// Local steps; an anchor model z (initially x_0) is refreshed by a background all-reduce.
// After every τ-th step (τ = --period), round k:
//   wait for the all-reduce launched at round k−1 → a = avg_j x_j (pulled models of k−1)
//   anchor:  β = 0: z ← a;   β > 0 (slow momentum): u ← β·u + (z − a);  z ← z − u
//   pull:    x_i ← (1−α)·x_i + α·z          (α = --pull-alpha, β = --slow-momentum)
//   launch a non-blocking all-reduce of the pulled x_i; it overlaps the next τ local steps
// The first round pulls towards x_0. At the last step of the run the all-reduce in flight is
// completed (no pull). α = 0 leaves every x_i untouched: each worker runs its serial optimizer.
// Bytes per step per worker (ring): 2(n−1)/n·|x|·4 / τ. Memory: z, the all-reduce buffer, u.
#include <algorithm>

#include "algorithms/algorithm.hpp"

namespace dsgd {

namespace {

class OverlapLocal final : public Algorithm {
 public:
  OverlapLocal(int64_t period, double alpha, double beta) : period_(period), alpha_(alpha), beta_(beta) {}
  std::string name() const override { return "overlap-local"; }
  void setup(TrainState& s) override {
    anchor_.assign(s.params, s.params + s.count);
    reduced_.assign(s.count, 0.0f);
    if (beta_ > 0) slow_.assign(s.count, 0.0f);
  }
  void on_layer_grad_ready(TrainState& s, size_t) override { s.comm.progress(request_); }
  void after_update(TrainState& s) override {
    const bool last = s.step + 1 == s.total_steps;
    if ((s.step + 1) % period_ != 0) {
      s.comm.progress(request_);
      if (last) complete(s);
      return;
    }
    complete(s);
    const float a = static_cast<float>(alpha_);
    const float keep = 1.0f - a;
    float* x = s.params;
    const float* z = anchor_.data();
    if (a != 0.0f)
      for (size_t i = 0; i < s.count; ++i) x[i] = keep * x[i] + a * z[i];
    if (last) return;
    std::copy(x, x + s.count, reduced_.begin());
    s.comm.iallreduce_average(reduced_.data(), s.count, request_);
  }
  bool replicas_identical() const override { return false; }
  double bytes_sent_per_step(double param_bytes, int n) const override {
    return ring_allreduce_bytes_sent(param_bytes, n) / static_cast<double>(period_);
  }
  int max_collectives_per_step() const override { return 1; }

 private:
  // Waits for the all-reduce in flight (if any) and refreshes the anchor from it.
  void complete(TrainState& s) {
    if (!request_.active()) return;
    s.comm.wait(request_);
    float* z = anchor_.data();
    const float* avg = reduced_.data();
    if (beta_ == 0) {
      std::copy(avg, avg + s.count, z);
      return;
    }
    const float b = static_cast<float>(beta_);
    float* u = slow_.data();
    for (size_t i = 0; i < s.count; ++i) {
      u[i] = b * u[i] + (z[i] - avg[i]);
      z[i] -= u[i];
    }
  }

  int64_t period_;
  double alpha_, beta_;
  std::vector<float> anchor_, reduced_, slow_;
  CollRequest request_;
};

}  // namespace

std::unique_ptr<Algorithm> algorithm_create_overlap_local(const RunConfig& cfg) {
  return std::make_unique<OverlapLocal>(cfg.period, cfg.pull_alpha, cfg.slow_momentum);
}

}  // namespace dsgd
