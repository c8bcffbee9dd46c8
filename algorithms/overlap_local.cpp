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
// --compress KIND (Qsparse-local-SGD, Basu et al. 2019, on the background average): the
// pulled model's difference to the last average received, x̂ (identical on every worker;
// x_0 before the first), is compressed with the compressor's error feedback (per worker)
// and aggregated by its non-blocking form:  launch D ← C_avg(x_i − x̂);  at the next round
// a = x̂ + D;  x̂ ← a;  then the anchor update above. A multi-phase compressor (PowerSGD)
// launches its next phase at the first layer hook of step t + 1 + ⌊(τ−1)/2⌋ (that step's
// after_update without layer hooks), the same program point on every rank. At identity
// settings a equals avg_j x_j to float rounding. Bytes per step: the compressor's per call / τ.
#include <algorithm>
#include <memory>

#include "algorithms/algorithm.hpp"
#include "algorithms/background_poll.hpp"
#include "algorithms/compress/compressor.hpp"
#include "algorithms/config_check.hpp"
#include "algorithms/timing_rules.hpp"
#include "algorithms/variant.hpp"

namespace dsgd {

namespace {

class OverlapLocal final : public Algorithm {
 public:
  OverlapLocal(int64_t period, double alpha, double beta, const std::string& compress, uint64_t seed)
      : period_(period), alpha_(alpha), beta_(beta), seed_(seed) {
    if (!compress.empty()) compressor_ = compressor_create(compress);
  }
  std::string name() const override { return "overlap-local"; }
  void setup(TrainState& s) override {
    anchor_.assign_copy(s.param_view());
    reduced_.assign(s.device, s.count);
    if (beta_ > 0) slow_.assign(s.device, s.count);
    if (compressor_) {
      compressor_->setup(s.comm, s.workload.layers(), s.count, seed_);
      base_.assign_copy(s.param_view());
    }
  }
  void on_layer_grad_ready(TrainState& s, size_t) override { poll(s); }
  void after_update(TrainState& s) override {
    const bool last = s.step + 1 == s.total_steps;
    if ((s.step + 1) % period_ != 0) {
      poll(s);
      if (last) complete(s);
      return;
    }
    complete(s);
    const float a = static_cast<float>(alpha_);
    const float keep = 1.0f - a;
    VectorOps& vec = s.vec();
    const BufferView x = s.param_view();
    if (a != 0.0f) vec.blend(x, keep, a, anchor_.view());  // x ← (1−α)·x + α·z
    if (last) return;
    if (compressor_) {
      vec.sub(reduced_.view(), x, base_.view());
      compressor_->start(s.comm, reduced_.view().host_f32("overlap-local --compress"), s.count, s.step);
      advance_step_ = s.step + 1 + (period_ - 1) / 2;
      return;
    }
    vec.copy(reduced_.view(), x);
    s.comm.iallreduce_average(reduced_.view(), request_);
  }
  bool replicas_identical() const override { return false; }
  double bytes_sent_per_step(double param_bytes, int n) const override {
    const double per_call = compressor_ ? compressor_->bytes_sent_per_call(static_cast<size_t>(param_bytes / 4.0), n)
                                        : ring_allreduce_bytes_sent(param_bytes, n);
    return per_call / static_cast<double>(period_);
  }
  int max_collectives_per_step() const override { return compressor_ ? compressor_->collectives_per_call() : 1; }

 private:
  // Polls the average in flight; a compressor's next phase is launched at advance_step_
  // (the first call in that step: a layer hook, or after_update without hooks).
  void poll(TrainState& s) { background_average_poll(s, compressor_.get(), request_, advance_step_); }

  // Waits for the all-reduce in flight (if any) and refreshes the anchor from it.
  void complete(TrainState& s) {
    const BufferView avg = reduced_.view();
    VectorOps& vec = s.vec();
    if (compressor_) {
      if (!compressor_->in_flight()) return;
      compressor_->finish(s.comm);  // D = C_avg(x_i − x̂)
      advance_step_ = -1;
      vec.add(avg, avg, base_.view());  // a = x̂ + D
      vec.copy(base_.view(), avg);      // x̂ ← a
    } else {
      if (!request_.active()) return;
      s.comm.wait(request_);
    }
    const BufferView z = anchor_.view();
    if (beta_ == 0) {
      vec.copy(z, avg);
      return;
    }
    // u ← β·u + (z − a); z ← z − u, elementwise as one loop would (avg is free until the next start).
    const float b = static_cast<float>(beta_);
    vec.sub(avg, z, avg);
    vec.scale_add(slow_.view(), b, avg);
    vec.sub(z, z, slow_.view());
  }

  int64_t period_;
  double alpha_, beta_;
  uint64_t seed_;
  DeviceBuffer anchor_, reduced_, slow_;
  CollRequest request_;
  std::unique_ptr<GradientCompressor> compressor_;
  DeviceBuffer base_;          // x̂: the last average received (compressed only)
  int64_t advance_step_ = -1;  // step whose first poll launches the compressor's next phase
};

}  // namespace

std::unique_ptr<Algorithm> algorithm_create_overlap_local(const RunConfig& cfg) {
  return std::make_unique<OverlapLocal>(cfg.period, cfg.pull_alpha, cfg.slow_momentum, cfg.compress, cfg.seed);
}

namespace {

void overlap_local_validate(const RunConfig& cfg) {
  if (!(cfg.pull_alpha >= 0 && cfg.pull_alpha <= 1))
    config_fail("pull-alpha", fmt::format("must be in [0, 1] (got {})", cfg.pull_alpha), "pass e.g. 0.5");
  if (!(cfg.slow_momentum >= 0 && cfg.slow_momentum < 1))
    config_fail("slow-momentum", fmt::format("must be in [0, 1) (got {})", cfg.slow_momentum), "pass e.g. 0.5");
}

}  // namespace

const Variant& variant_overlap_local() {
  static const Variant v = [] {
    Variant v;
    v.name = "overlap-local";
    v.description = "Overlap Local-SGD: pull towards an anchor from a background all-reduce";
    v.knobs = "--period tau, --pull-alpha, --slow-momentum";
    v.flags = {{"pull-alpha"}, {"slow-momentum"}};
    v.takes_period = true;
    v.validate = overlap_local_validate;
    v.create = algorithm_create_overlap_local;
    // Timing-only: the average launched every τ steps (not at the last) and waited for at the
    // next round (the pull is not a modelled compute phase).
    v.timing = [](const SimTimingPlan& plan, SimTimingState& state, int64_t step, std::vector<double>& clock,
                  SimStepTiming* rows) { timing_step_background(plan, state, step, clock, rows, plan.period, false); };
    return v;
  }();
  return v;
}

}  // namespace dsgd
