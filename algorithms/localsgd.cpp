// localsgd: Local SGD (Stich 2019; Lin et al. 2020 "Don't use large mini-batches, use
// local SGD"), with post-local SGD (Lin et al. 2020, §3: synchronous SGD first, then local).
//   t <  K:  x_i ← x_i − η·opt(avg_j g_j)      (ssgd: one gradient all-reduce per step)
//   t >= K:  x_i ← x_i − η·opt(g_i);  x_i ← avg_j x_j after every step t with (t+1−K) ≡ 0 mod H
// K = --post-local (0: plain Local SGD), H = --period. With H = 1 and plain SGD this equals
// ssgd. Momentum buffers stay local (not averaged). Bytes per step per worker (ring,
// R = 2(n−1)/n·|x|·4): R for t < K, R/H after; averaged over the run of T steps:
//   R·(min(K,T) + ⌊(T − min(K,T))/H⌋) / T.
// --compress KIND (Qsparse-local-SGD, Basu et al. 2019): the average becomes
//   d_i = x_i − x̂;  x_i ← x̂ + C_avg(d_i);  x̂ ← x_i
// with x̂ the last synchronised model (identical on every worker) and C_avg the
// compressor's aggregation with its error feedback (compress/compressor.hpp), so R is the
// compressor's bytes per call; t < K compresses the gradient as ssgd does (a second
// compressor instance, so the two error-feedback memories stay apart). At identity
// settings this equals plain Local SGD to float rounding (x̂ + avg(x_i − x̂) vs avg(x_i)).
#include <algorithm>

#include "algorithms/algorithm.hpp"
#include "algorithms/compress/compressor.hpp"
#include "algorithms/config_check.hpp"
#include "algorithms/timing_rules.hpp"
#include "algorithms/variant.hpp"

namespace dsgd {

namespace {

class LocalSgd final : public Algorithm {
 public:
  LocalSgd(int64_t period, int64_t post_local, const std::string& compress, uint64_t seed)
      : period_(period), post_local_(post_local), seed_(seed) {
    if (!compress.empty()) {
      model_compressor_ = compressor_create(compress);
      if (post_local_ > 0) grad_compressor_ = compressor_create(compress);
    }
  }
  std::string name() const override { return "localsgd"; }
  void setup(TrainState& s) override {
    total_steps_ = s.total_steps;
    if (!model_compressor_) return;
    model_compressor_->setup(s.comm, s.workload.layers(), s.count, seed_);
    if (grad_compressor_) grad_compressor_->setup(s.comm, s.workload.layers(), s.count, seed_ + 1);
    anchor_.assign_copy(s.param_view());
    delta_.assign(s.device, s.count);
  }
  void reduce_gradients(TrainState& s) override {
    if (s.step >= post_local_) return;
    if (grad_compressor_) {
      grad_compressor_->allreduce_average(s.comm, s.grad_view().host_f32("localsgd --compress"), s.count, s.step);
    } else {
      s.comm.allreduce_average(s.grad_view());
    }
  }
  void after_update(TrainState& s) override {
    if (s.step < post_local_) {
      // Replicas are identical until the last synchronous step; the anchor is that model.
      if (model_compressor_ && s.step + 1 == post_local_) s.vec().copy(anchor_.view(), s.param_view());
      return;
    }
    if ((s.step + 1 - post_local_) % period_ != 0) return;
    if (!model_compressor_) {
      s.comm.allreduce_average(s.param_view());
      return;
    }
    VectorOps& vec = s.vec();
    vec.sub(delta_.view(), s.param_view(), anchor_.view());  // d = x_i − x̂
    model_compressor_->allreduce_average(s.comm, delta_.view().host_f32("localsgd --compress"), s.count, s.step);
    vec.add(s.param_view(), anchor_.view(), delta_.view());  // x_i = x̂ + C_avg(d)
    vec.copy(anchor_.view(), s.param_view());
  }
  bool replicas_identical() const override { return period_ == 1; }
  double bytes_sent_per_step(double param_bytes, int n) const override {
    const double r = model_compressor_
                         ? model_compressor_->bytes_sent_per_call(static_cast<size_t>(param_bytes / sizeof(float)), n)
                         : ring_allreduce_bytes_sent(param_bytes, n);
    if (post_local_ == 0 || total_steps_ <= 0) return r / static_cast<double>(period_);
    const int64_t k = std::min(post_local_, total_steps_);
    const int64_t syncs = k + (total_steps_ - k) / period_;
    return r * static_cast<double>(syncs) / static_cast<double>(total_steps_);
  }
  int max_collectives_per_step() const override {
    return model_compressor_ ? model_compressor_->collectives_per_call() : 1;
  }
  double model_state_bytes(size_t count, int n) const override {
    return (model_compressor_ ? 5.0 : 3.0) * sizeof(float) * double(count);  // + anchor and delta
  }

 private:
  int64_t period_;
  int64_t post_local_;
  uint64_t seed_;
  int64_t total_steps_ = 0;
  std::unique_ptr<GradientCompressor> model_compressor_, grad_compressor_;
  DeviceBuffer anchor_, delta_;
};

}  // namespace

std::unique_ptr<Algorithm> algorithm_create_localsgd(const RunConfig& cfg) {
  return std::make_unique<LocalSgd>(cfg.period, cfg.post_local, cfg.compress, cfg.seed);
}

namespace {

void localsgd_validate(const RunConfig& cfg) {
  if (cfg.post_local < 0)
    config_fail("post-local", fmt::format("must be >= 0 (got {})", cfg.post_local), "pass 0 for none");
}

}  // namespace

// Timing-only (plain Local SGD; post-local SGD's first K steps are not modelled): the model
// all-reduce after the update on steps with (t+1) mod H = 0. diloco shares it (its outer
// step has no modelled compute phase).
void localsgd_timing(const SimTimingPlan& plan, int64_t step, std::vector<double>& clock, SimStepTiming* rows) {
  timing_step_allreduce(plan, step, clock, rows, (step + 1) % std::max<int64_t>(1, plan.period) == 0, true);
}

const Variant& variant_localsgd() {
  static const Variant v = [] {
    Variant v;
    v.name = "localsgd";
    v.description = "Local SGD: local steps, all-reduce of the model every H steps; post-local SGD";
    v.knobs = "--period H, --post-local K";
    v.flags = {{"post-local"}};
    v.takes_period = true;
    v.validate = localsgd_validate;
    v.create = algorithm_create_localsgd;
    v.timing = localsgd_timing;
    return v;
  }();
  return v;
}

}  // namespace dsgd
