// pdasgd: decoupled forward and backward with bounded weight staleness (PD-ASGD), on ssgd's
// gradient all-reduce. With S = --pd-staleness, step t computes its forward and backward at
// the weights of step t − min(S, t) and updates the current ones:
//   g_i = ∇f(x_{t−min(S,t)}; b_i);   x_{t+1} = x_t − η·opt(avg_i g_i)
// i.e. every layer's weights in the forward pass lag its updates by exactly min(S, t) steps,
// the bound a forward pass running S steps ahead of the backward pass sees. S = 0 is ssgd bit
// for bit (the weights read are the current ones and the all-reduce and optimizer calls are
// ssgd's). The current model lives in this algorithm and is copied to the trainer's between
// steps (what is evaluated), the last S + 1 models in a ring: x_τ in slot τ mod (S+1).
// Bytes sent per step per worker: 2(n−1)/n · 4|x| (ssgd's all-reduce of the gradient).
// Staleness recorded per step (steps.staleness): min(S, t), the steps the weights lag.
// Limits: only the numerics of the decoupling are modelled. The forward and backward passes
// run one after the other in the trainer's step (no second thread computing the next
// forward pass during this step's backward and all-reduce), so the measured and simulated
// step time is ssgd's plus a model copy; the staleness is uniform over layers (the bound),
// not each layer's own lag.
#include <algorithm>

#include "algorithms/algorithm.hpp"
#include "algorithms/config_check.hpp"
#include "algorithms/optimizer.hpp"
#include "algorithms/timing_rules.hpp"
#include "algorithms/variant.hpp"

namespace dsgd {

namespace {

class Pdasgd final : public Algorithm {
 public:
  explicit Pdasgd(const RunConfig& cfg) : cfg_(cfg), bound_(cfg.pd_staleness) {}
  std::string name() const override { return "pdasgd"; }
  bool owns_optimizer() const override { return true; }

  void setup(TrainState& s) override {
    optimizer_ = optimizer_create(cfg_, s.count, 1);  // the lr comes from the trainer's schedule
    current_.assign(s.params, s.params + s.count);
    ring_.assign(static_cast<size_t>(bound_ + 1) * s.count, 0.0f);
    std::copy(s.params, s.params + s.count, ring_.begin());  // x_0 in slot 0
  }
  void begin_step(TrainState& s) override {
    const int64_t lag = std::min(bound_, s.step);
    const float* x = lag == 0 ? current_.data() : slot(s.step - lag, s.count);
    std::copy(x, x + s.count, s.params);
    s.staleness = double(lag);
  }
  void reduce_gradients(TrainState& s) override { s.comm.allreduce_average(s.grads, s.count); }
  void optimizer_step(TrainState& s) override { optimizer_->step(current_.data(), s.grads, s.lr); }
  void after_update(TrainState& s) override {
    s.staleness = double(std::min(bound_, s.step));
    if (bound_ > 0) std::copy(current_.begin(), current_.end(), slot(s.step + 1, s.count));
    std::copy(current_.begin(), current_.end(), s.params);  // between steps the replicas hold x_{t+1}
  }
  bool replicas_identical() const override { return true; }
  double bytes_sent_per_step(double param_bytes, int n) const override {
    return ring_allreduce_bytes_sent(param_bytes, n);
  }
  int max_collectives_per_step() const override { return 1; }
  // Parameters, gradient, optimizer state, the current model and the ring of S + 1 models.
  double model_state_bytes(size_t count, int n) const override {
    return (4.0 + double(bound_ + 1)) * sizeof(float) * double(count);
  }

 private:
  float* slot(int64_t step, size_t count) { return ring_.data() + static_cast<size_t>(step % (bound_ + 1)) * count; }

  RunConfig cfg_;
  int64_t bound_;
  std::unique_ptr<Optimizer> optimizer_;
  std::vector<float> current_, ring_;
};

void pdasgd_timing(const SimTimingPlan& plan, int64_t step, std::vector<double>& clock, SimStepTiming* rows) {
  timing_step_allreduce(plan, step, clock, rows, true, false);
}

}  // namespace

std::unique_ptr<Algorithm> algorithm_create_pdasgd(const RunConfig& cfg) {
  return std::make_unique<Pdasgd>(cfg);
}

const Variant& variant_pdasgd() {
  static const Variant v = [] {
    Variant v;
    v.name = "pdasgd";
    v.description = "decoupled forward/backward: gradients at weights up to S steps stale; all-reduce every step";
    v.knobs = "--pd-staleness S";
    v.flags = {{"pd-staleness"}};
    v.no_compress = "its gradient all-reduce is not combined with a compressor here";
    v.no_compress_hint = "drop --compress, or use ssgd --compress";
    v.create = algorithm_create_pdasgd;
    v.host_only = [](const RunConfig&) -> const char* { return "its ring of stale weights lives in host memory"; };
    v.timing = pdasgd_timing;  // the trainer's sequence, ssgd's timeline (the decoupling is not timed)
    return v;
  }();
  return v;
}

}  // namespace dsgd
