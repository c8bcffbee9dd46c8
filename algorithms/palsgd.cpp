// palsgd: pseudo-asynchronous Local SGD (PALSGD; Naganuma et al., "Pseudo-Asynchronous Local
// SGD: Robust and Efficient Data-Parallel Training", TMLR 2025, Algorithm 1): local steps with
// probabilistic pseudo-synchronisation towards the last global model, between full averages
// every H steps that run in the background.
//   every step t, worker i, with probability p (a draw from (seed, rank, t)):
//       x_i ← x_i − α·(x_i − x̄)                      (pseudo-synchronisation: no communication)
//   after every H-th step:  s_i ← x_i;  launch r ← avg_j s_j (non-blocking)
//   d steps later:          x_i ← r + (x_i − s_i);  x̄ ← r
// x̄ = the last applied global model (x_0 before the first); p = --pull-prob, α = --pull-alpha,
// H = --period, d = --delay (0 ≤ d ≤ H; d = 0: the average is applied at once, blocking). The
// background average is delayed averaging (algorithms/delayed_average.hpp, shared with
// cocod/dasgd), so with p = 0 or α = 0 this is dasgd with the same H and d, and with d = 0
// localsgd, bit for bit. On one worker r = s, so x̄ is the model at the last sync point.
// Differences from the paper: the pseudo-synchronisation follows the step's gradient update
// instead of replacing it (the trainer computes a gradient every step), and its rate is α, not
// the paper's η_t·α/p; the outer step is plain averaging (DiLoCo's outer optimizer: diloco).
// The pull is applied after the update and before the step's sync, so at d = 0 a pull on a
// sync step is overwritten by the average.
// Bytes per step per worker (ring): 2(n−1)/n·|x|·4 / H (the pulls communicate nothing);
// --compress KIND: the compressor's bytes per call / H (delayed_average.hpp's rule).
// Memory: x̄, the snapshot and the all-reduce buffer (3·|x| beyond the usual).
#include "algorithms/palsgd.hpp"

#include "algorithms/config_check.hpp"
#include "algorithms/delayed_average.hpp"
#include "algorithms/variant.hpp"
#include "core/rng.hpp"

namespace dsgd {

bool palsgd_pulls_at(uint64_t seed, int rank, int64_t step, double p) {
  if (!(p > 0)) return false;
  Rng rng(rng_derive_seed(seed, 0x70616c736764ULL, static_cast<uint64_t>(rank), static_cast<uint64_t>(step)));
  return rng.uniform() < p;
}

namespace {

class Palsgd final : public Algorithm {
 public:
  explicit Palsgd(const RunConfig& cfg)
      : prob_(cfg.pull_prob),
        alpha_(cfg.pull_alpha),
        seed_(cfg.seed),
        avg_(cfg.period, cfg.delay, cfg.compress, cfg.seed) {
    avg_.keep_applied(&global_);
  }
  std::string name() const override { return "palsgd"; }
  void setup(TrainState& s) override {
    rank_ = s.comm.rank();
    avg_.setup(s);  // x̄ ← x_0
  }
  void on_layer_grad_ready(TrainState& s, size_t) override { avg_.progress(s); }
  void after_update(TrainState& s) override {
    if (alpha_ > 0 && palsgd_pulls_at(seed_, rank_, s.step, prob_)) {
      const float a = static_cast<float>(alpha_);
      const float* g = global_.view().host_f32("palsgd's pull");
      float* x = s.param_view().host_f32("palsgd's pull");
      for (size_t i = 0; i < s.count; ++i) x[i] -= a * (x[i] - g[i]);
    }
    avg_.after_update(s);
  }
  bool replicas_identical() const override { return false; }
  double bytes_sent_per_step(double param_bytes, int n) const override {
    return avg_.bytes_sent_per_step(param_bytes, n);
  }
  int max_collectives_per_step() const override { return 2 * avg_.collectives_per_average(); }
  double model_state_bytes(size_t count, int n) const override { return 6.0 * sizeof(float) * double(count); }

 private:
  double prob_, alpha_;
  uint64_t seed_;
  int rank_ = 0;
  DeviceBuffer global_;  // x̄: the last applied average
  DelayedAverage avg_;
};

void palsgd_validate(const RunConfig& cfg) {
  if (!(cfg.pull_prob >= 0 && cfg.pull_prob <= 1))
    config_fail("pull-prob", fmt::format("must be in [0, 1] (got {})", cfg.pull_prob), "pass e.g. --pull-prob 0.1");
  if (!(cfg.pull_alpha >= 0 && cfg.pull_alpha <= 1))
    config_fail("pull-alpha", fmt::format("must be in [0, 1] (got {})", cfg.pull_alpha), "pass e.g. --pull-alpha 0.5");
  if (cfg.delay < 0 || cfg.delay > cfg.period)
    config_fail("delay", fmt::format("must be in 0..H = 0..{} (got {})", cfg.period, cfg.delay),
                "an average must be applied before the next one starts: pass --delay at most --period");
}

}  // namespace

std::unique_ptr<Algorithm> algorithm_create_palsgd(const RunConfig& cfg) {
  return std::make_unique<Palsgd>(cfg);
}

const Variant& variant_palsgd() {
  static const Variant v = [] {
    Variant v;
    v.name = "palsgd";
    v.description = "PALSGD: local steps, random pulls towards the last global model, background average every H steps";
    v.knobs = "--period H, --pull-prob p, --pull-alpha, --delay d";
    v.flags = {{"pull-prob"}, {"pull-alpha"}, {"delay"}};
    v.takes_period = true;
    v.validate = palsgd_validate;
    v.create = algorithm_create_palsgd;
    v.host_only = [](const RunConfig&) -> const char* { return "its pulls towards the global model run on the host"; };
    return v;
  }();
  return v;
}

}  // namespace dsgd
