// pdasgd: decoupled forward and backward with bounded weight staleness (PD-ASGD; Fokam et
// al., "Asynchronous Stochastic Gradient Descent with Decoupled Backpropagation and
// Layer-Wise Updates", 2024), on ssgd's gradient all-reduce. With S = --pd-staleness, a forward
// thread runs up to S steps ahead of the backward, and step t computes its forward and
// backward at the weights of step t − min(S, t) (the weights its forward pass read, kept for
// its backward: weight stashing) and updates the current ones:
//   g_i = ∇f(x_{t−min(S,t)}; b_i);   x_{t+1} = x_t − η·opt(avg_i g_i)
// so every layer's weights in the forward pass lag its updates by exactly min(S, t) steps,
// whatever the threads' timing. The forward passes of steps t+1..t+S run on their own thread
// (algorithms/decoupled_forward.hpp: S + 1 workload instances, the rank's data stream) while
// the worker backpropagates step t, all-reduces and updates: the step's exposed forward
// (fwd_s) is only the part the backward, communication and update do not cover. On the sim
// the forward thread is a second core of the worker. S = 0 is ssgd bit for bit (no thread;
// the weights read are the current ones and the all-reduce and optimizer calls are ssgd's).
// The current model lives in this algorithm and is copied to the trainer's between steps
// (what is evaluated), the last S + 1 models in a ring: x_τ in slot τ mod (S+1).
// Bytes sent per step per worker: 2(n−1)/n · 4|x| (ssgd's all-reduce of the gradient).
// Staleness recorded per step (steps.staleness): min(S, t), the steps the weights lag.
// Limits: the staleness is uniform over layers (the bound), not each layer's own lag, and
// the update is applied to the whole model after the all-reduce, not layer by layer as the
// paper's asynchronous updates do; one forward thread per worker (the paper also runs
// several).
#include <algorithm>

#include "algorithms/algorithm.hpp"
#include "algorithms/config_check.hpp"
#include "algorithms/decoupled_forward.hpp"
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
    if (bound_ > 0) forward_.setup(s, bound_, DecoupledForward::Ops{weights_fn, this});
  }
  int forward_instances() const override { return bound_ > 0 ? static_cast<int>(bound_) + 1 : 0; }

  void begin_step(TrainState& s) override {
    s.staleness = double(std::min(bound_, s.step));
    if (bound_ == 0) std::copy(current_.begin(), current_.end(), s.params);  // ssgd: the trainer's forward
  }
  ForwardPass forward(TrainState& s) override { return forward_.wait(s); }
  void reduce_gradients(TrainState& s) override { s.comm.allreduce_average(s.grads, s.count); }
  void optimizer_step(TrainState& s) override { optimizer_->step(current_.data(), s.grads, s.lr); }
  void after_update(TrainState& s) override {
    s.staleness = double(std::min(bound_, s.step));
    if (bound_ > 0) std::copy(current_.begin(), current_.end(), slot(s.step + 1, s.count));
    std::copy(current_.begin(), current_.end(), s.params);  // between steps the replicas hold x_{t+1}
    if (bound_ > 0) forward_.published(s);
  }
  bool replicas_identical() const override { return true; }
  double bytes_sent_per_step(double param_bytes, int n) const override {
    return ring_allreduce_bytes_sent(param_bytes, n);
  }
  int max_collectives_per_step() const override { return 1; }
  // Parameters, gradient, optimizer state, the current model and the ring of S + 1 models
  // (the S + 1 forward instances' activations count with the batch, engine/memory_estimate.cpp).
  double model_state_bytes(size_t count, int n) const override {
    return (4.0 + double(bound_ + 1)) * sizeof(float) * double(count);
  }

 private:
  float* slot(int64_t step, size_t count) { return ring_.data() + static_cast<size_t>(step % (bound_ + 1)) * count; }
  // The weights step u's forward and backward read: x_{u−min(S,u)} (forward thread and worker).
  static const float* weights_fn(void* ctx, int64_t u) {
    auto* self = static_cast<Pdasgd*>(ctx);
    return self->slot(u - std::min(self->bound_, u), self->current_.size());
  }

  RunConfig cfg_;
  int64_t bound_;
  std::unique_ptr<Optimizer> optimizer_;
  std::vector<float> current_, ring_;
  DecoupledForward forward_;  // last: its thread stops before the ring goes
};

// Timing-only rule. S = 0: ssgd's. S ≥ 1: decoupled_forward.hpp's virtual-clock arithmetic.
// Per worker i, step t starting at s_i: the forward runs on the worker's second core from
// f0 = max(f_i(t−1), a_i(t − min(S,t))) (a_i(0) = s_i at step 0) to f_i(t) = f0 + data + fwd
// + δ_i(t, fwd, proportional part); the step waits for it, fwd = max(0, f_i(t) − s_i), then
// backpropagates: arrive_i = s_i + fwd + bwd + δ_i(t, bwd, with the fixed part); ssgd's
// all-reduce (A = max_j arrive_j, comm = model(all-reduce, 4|x|, n)), the update, end_i =
// A + comm + opt, and a_i(t+1) = end_i. data is 0 (the forward thread's).
void pdasgd_timing(const SimTimingPlan& plan, SimTimingState& state, int64_t step, std::vector<double>& clock,
                   SimStepTiming* rows) {
  const int64_t depth = plan.forward_depth;
  if (depth == 0) return timing_step_allreduce(plan, step, clock, rows, true, false);
  const size_t n = clock.size(), k = static_cast<size_t>(depth) + 1;
  if (state.forward_end.empty()) {
    state.forward_end.assign(n, 0.0);
    state.available.assign(n * k, 0.0);
  }
  const SimComputeCost& c = plan.cost;
  const SimTimingCompute compute = sim_timing_compute(c);
  auto delay = [&](size_t i, double compute_s, bool with_fixed) {
    return plan.stragglers.empty() ? 0.0 : plan.stragglers.delay_s(static_cast<int>(i), step, compute_s, with_fixed);
  };
  for (size_t i = 0; i < n; ++i) {
    double& forward_end = state.forward_end[i];
    double* avail = &state.available[i * k];
    const double start = clock[i];
    if (step == 0) avail[0] = start;
    const double f0 = std::max(forward_end, avail[static_cast<size_t>(step - std::min(step, depth)) % k]);
    forward_end = f0 + c.data_s + c.fwd_s + delay(i, c.fwd_s, false);
    SimStepTiming& r = rows[i];
    sim_timing_fill_compute(plan, compute, r);
    r.data = 0;
    r.fwd = std::max(0.0, forward_end - start);
    r.injected = plan.stragglers.empty()
                     ? 0.0
                     : plan.stragglers.delay_s(static_cast<int>(i), step, compute.bwd, true, &r.jitter);
    r.start = start + r.fwd + compute.bwd + r.injected;  // the arrival at the all-reduce
  }
  timing_allreduce_complete(plan, clock, rows, true, false);
  for (size_t i = 0; i < n; ++i) state.available[i * k + static_cast<size_t>(step + 1) % k] = clock[i];
}

void pdasgd_timing_plan(const RunConfig& cfg, SimTimingPlan& plan) {
  plan.forward_depth = cfg.pd_staleness;
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
    v.timing = pdasgd_timing;
    v.timing_plan = pdasgd_timing_plan;
    return v;
  }();
  return v;
}

}  // namespace dsgd
