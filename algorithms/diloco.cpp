// diloco: DiLoCo (Douillard et al. 2023, "DiLoCo: Distributed Low-Communication Training of
// Language Models", Algorithm 1).
//   inner: x_i ← x_i − η·inner_opt(g_i) for H steps (AdamW by default: --optimizer auto)
//   after every H-th step:  a = avg_j x_j                      (one all-reduce of the model)
//                           Δ = x_g − a                        (the outer pseudo-gradient)
//                           v ← μ·v + Δ;  x_g ← x_g − η_out·(Δ + μ·v)   (outer Nesterov SGD)
//                           x_i ← x_g on every worker
// η_out = --outer-lr (0.7), μ = --outer-momentum (0.9), H = --period. Inner optimizer states
// stay local and persist across rounds, as in the paper. x_g starts at the (identical)
// initial model and its outer state is replicated (every worker computes the same update).
// With η_out = 1 and μ = 0, x_g ← x_g − (x_g − a) = a up to one float32 rounding per round:
// localsgd with the same inner optimizer (docs/algorithms.md: tolerance).
// Bytes per step per worker (ring): 2(n−1)/n · |x|·4 / H. Memory: x_g and v (2·|x|).
// --compress KIND: each worker's pseudo-gradient d_i = x_g − x_i goes through the
// compressor's aggregation (with its error feedback), Δ = C_avg(d_i), in place of
// x_g − avg_j x_j; bytes per step are the compressor's per call / H. At identity settings
// this equals uncompressed DiLoCo to float rounding.
#include <algorithm>
#include <cmath>

#include "algorithms/algorithm.hpp"
#include "algorithms/compress/compressor.hpp"
#include "algorithms/config_check.hpp"
#include "algorithms/variant.hpp"

namespace dsgd {

namespace {

class Diloco final : public Algorithm {
 public:
  Diloco(int64_t period, double outer_lr, double outer_momentum, const std::string& compress, uint64_t seed)
      : period_(period), outer_lr_(outer_lr), outer_momentum_(outer_momentum), seed_(seed) {
    if (!compress.empty()) compressor_ = compressor_create(compress);
  }
  std::string name() const override { return "diloco"; }
  void setup(TrainState& s) override {
    global_.assign_copy(s.param_view());
    outer_ = std::make_unique<SgdOptimizer>(SgdOptions{outer_lr_, outer_momentum_, 0.0, true}, s.count, s.device);
    delta_.assign(s.device, s.count);
    if (compressor_) compressor_->setup(s.comm, s.workload.layers(), s.count, seed_);
  }
  void after_update(TrainState& s) override {
    if ((s.step + 1) % period_ != 0) return;
    VectorOps& vec = s.vec();
    if (compressor_) {
      vec.sub(delta_.view(), global_.view(), s.param_view());  // d_i = x_g − x_i
      compressor_->allreduce_average(s.comm, delta_.view().host_f32("diloco --compress"), s.count,
                                     s.step);  // Δ = C_avg(d_i)
    } else {
      s.comm.allreduce_average(s.param_view());  // a = avg_j x_j
      vec.sub(delta_.view(), global_.view(), s.param_view());
    }
    outer_->step(global_.data(), delta_.data());
    vec.copy(s.param_view(), global_.view());
  }
  bool replicas_identical() const override { return false; }
  double bytes_sent_per_step(double param_bytes, int n) const override {
    const double per_call = compressor_
                                ? compressor_->bytes_sent_per_call(static_cast<size_t>(param_bytes / sizeof(float)), n)
                                : ring_allreduce_bytes_sent(param_bytes, n);
    return per_call / static_cast<double>(period_);
  }
  int max_collectives_per_step() const override { return compressor_ ? compressor_->collectives_per_call() : 1; }

 private:
  int64_t period_;
  double outer_lr_, outer_momentum_;
  uint64_t seed_;
  DeviceBuffer global_, delta_;
  std::unique_ptr<SgdOptimizer> outer_;
  std::unique_ptr<GradientCompressor> compressor_;
};

}  // namespace

std::unique_ptr<Algorithm> algorithm_create_diloco(const RunConfig& cfg) {
  return std::make_unique<Diloco>(cfg.period, cfg.outer_lr, cfg.outer_momentum, cfg.compress, cfg.seed);
}

void localsgd_timing(const SimTimingPlan& plan, SimTimingState& state, int64_t step, std::vector<double>& clock,
                     SimStepTiming* rows);

namespace {}  // namespace

const Variant& variant_diloco() {
  static const Variant v = [] {
    Variant v;
    v.name = "diloco";
    v.description = "DiLoCo: inner optimizer H steps, outer Nesterov SGD on the averaged pseudo-gradient";
    v.knobs = "--period H, --outer-lr, --outer-momentum";
    v.flags = {{"outer-lr"}, {"outer-momentum"}};
    v.takes_period = true;
    v.optimizer = "adamw";
    v.create = algorithm_create_diloco;
    v.timing = localsgd_timing;
    return v;
  }();
  return v;
}

}  // namespace dsgd
