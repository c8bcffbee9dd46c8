// osp: Overlapped Synchronization Parallel (Chen et al., "OSP: Boosting Distributed Model
// Training with 2-stage Synchronization", ICPP 2023): the gradient is synchronised in two
// stages, the important values before the update and the rest overlapped with the next step's
// computation, with local-gradient-based parameter correction (LGP) in between.
//   step t, after backward (S_t: the k = ⌈f·|x|⌉ stage-1 values, R_t the rest):
//     stage 2 of step t−1 completes:  ḡ_{t−1}[R] = avg_j g_j,t−1[R];  redo step t−1's update of
//       R from the saved x[R] and optimizer state[R] with ḡ_{t−1}[R]  (x[R] becomes ssgd's)
//     stage 1:  ḡ_t[S] = avg_j g_j,t[S]                     (blocking all-reduce of k values)
//     stage 2:  launch avg_j g_j,t[R]                         (non-blocking, in flight during
//               step t+1's forward and backward)
//     update:   x ← x − η·opt(ĝ),  ĝ[S] = ḡ_t[S],  ĝ[R] = g_i,t[R]   (LGP: the local gradient
//               stands in for the average until it arrives; x[R] and state[R] saved first)
//   at the last step stage 2 is waited for and the correction applied in after_update.
// f = --osp-fraction; --osp-select: `magnitude` (S_t = the k largest |ḡ_{t−1}| of the last fully
// averaged gradient, identical on every rank, ties to the lower index; S_0 as static) or
// `static` (the first k values of the flat model). After each correction the model is what
// ssgd's update rule gives for the averaged gradient at the point where it was computed; the
// gradients of step t+1 are computed at the LGP model (x[R] updated with the local gradient),
// which is where OSP departs from ssgd. f = 1: no stage 2, exactly ssgd (the same all-reduce
// of the whole gradient, the same optimizer arithmetic: bit for bit).
// The optimizer is owned here (elementwise SGD/AdamW rules of algorithms/optimizer.hpp on
// packed values, so the redo rounds as an in-place update would).
// Bytes per step per worker (ring, R(c) = 2(n−1)/n·4c): R(k) + R(|x| − k) = R(|x|), ssgd's
// bytes split into the two stages; stage 2 of step t is recorded at step t+1 where it is
// waited for (the first step records R(k) only, the last R(k) + 2·R(|x| − k)).
// Memory: the optimizer state, the saved x[R] and state[R], the packed buffers, the last
// averaged gradient and the index lists (about 5 |x| floats and 2 |x| indices beyond ssgd).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "algorithms/algorithm.hpp"
#include "algorithms/config_check.hpp"
#include "algorithms/variant.hpp"

namespace dsgd {

namespace {

class Osp final : public Algorithm {
 public:
  explicit Osp(const RunConfig& cfg)
      : fraction_(cfg.osp_fraction),
        magnitude_(cfg.osp_select == "magnitude"),
        adamw_(cfg.optimizer == "adamw" || (cfg.optimizer == "auto" && variant_get("osp").optimizer == "adamw")),
        sgd_{0.0, cfg.momentum, cfg.weight_decay, cfg.nesterov},
        adam_{0.0, cfg.beta1, cfg.beta2, cfg.eps, cfg.weight_decay} {}
  std::string name() const override { return "osp"; }
  bool owns_optimizer() const override { return true; }

  void setup(TrainState& s) override {
    n_ = s.count;
    k_ = stage1_count(n_);
    const size_t rest = n_ - k_;
    const bool velocity = !adamw_ && sgd_.momentum != 0.0;
    if (adamw_) {
      m_.assign(n_, 0.0f);
      v_.assign(n_, 0.0f);
    } else if (velocity) {
      m_.assign(n_, 0.0f);
    }
    order_.resize(n_);
    sel_.resize(k_);
    rest_.resize(rest);
    mark_.assign(n_, 0);
    stage1_.assign(k_, 0.0f);
    stage2_.assign(rest, 0.0f);
    saved_x_.assign(rest, 0.0f);
    if (!m_.empty()) saved_m_.assign(rest, 0.0f);
    if (!v_.empty()) saved_v_.assign(rest, 0.0f);
    last_avg_.assign(n_, 0.0f);
    select_static();
  }

  void on_layer_grad_ready(TrainState& s, size_t) override { s.comm.progress(request_); }

  void reduce_gradients(TrainState& s) override {
    finish_stage2(s);
    if (k_ == n_) {  // f = 1: ssgd
      s.comm.allreduce_average(s.grads, n_);
      return;
    }
    if (magnitude_ && s.step > 0) select_magnitude();
    float* g = s.grads;
    for (size_t j = 0; j < k_; ++j) stage1_[j] = g[sel_[j]];
    s.comm.allreduce_average(stage1_.data(), k_);
    for (size_t j = 0; j < k_; ++j) {
      g[sel_[j]] = stage1_[j];
      last_avg_[sel_[j]] = stage1_[j];
    }
    const size_t rest = rest_.size();
    for (size_t j = 0; j < rest; ++j) {
      const size_t i = rest_[j];
      stage2_[j] = g[i];
      saved_x_[j] = s.params[i];
      if (!saved_m_.empty()) saved_m_[j] = m_[i];
      if (!saved_v_.empty()) saved_v_[j] = v_[i];
    }
    s.comm.iallreduce_average(stage2_.data(), rest, request_);
    pending_ = true;
  }

  void optimizer_step(TrainState& s) override {
    ++t_;
    lr_ = s.lr;
    if (adamw_) {
      adamw_update(adam_, s.params, m_.data(), v_.data(), s.grads, n_, s.lr, t_);
    } else {
      sgd_update(sgd_, s.params, m_.data(), s.grads, n_, s.lr);
    }
  }

  void after_update(TrainState& s) override {
    s.comm.progress(request_);
    if (s.step + 1 == s.total_steps) finish_stage2(s);
  }

  bool replicas_identical() const override { return fraction_ >= 1.0; }
  double bytes_sent_per_step(double param_bytes, int n) const override {
    const size_t count = static_cast<size_t>(param_bytes / sizeof(float));
    const size_t k = stage1_count(count);
    return ring_allreduce_bytes_sent(double(k) * sizeof(float), n) +
           ring_allreduce_bytes_sent(double(count - k) * sizeof(float), n);
  }
  int max_collectives_per_step() const override { return 3; }
  double model_state_bytes(size_t count, int n) const override {
    const double states = adamw_ ? 2.0 : (sgd_.momentum != 0.0 ? 1.0 : 0.0);
    // params, grads, states; saved x and states of R; the two packed buffers; the last
    // average; three index lists of size_t (2 floats each).
    return sizeof(float) * double(count) * (2.0 + states + (1.0 + states) + 1.0 + 1.0 + 6.0);
  }
  std::string details_json() const override {
    return fmt::format(R"({{"stage1-values": {}, "stage2-values": {}, "select": "{}"}})", k_, n_ - k_,
                       magnitude_ ? "magnitude" : "static");
  }

 private:
  size_t stage1_count(size_t n) const {
    const double k = std::ceil(fraction_ * static_cast<double>(n));
    return std::min(n, std::max<size_t>(1, static_cast<size_t>(k)));
  }

  // Waits for the stage-2 average of the previous step and redoes that step's update of its
  // values with it (the saved parameters and state, the averaged gradient, the same lr and t).
  void finish_stage2(TrainState& s) {
    if (!pending_) return;
    pending_ = false;
    request_.launch = std::max(request_.launch, s.step_start);  // an evaluation between steps is not compute
    s.comm.wait(request_, s.comm.now());
    const size_t rest = rest_.size();
    if (adamw_) {
      adamw_update(adam_, saved_x_.data(), saved_m_.data(), saved_v_.data(), stage2_.data(), rest, lr_, t_);
    } else {
      sgd_update(sgd_, saved_x_.data(), saved_m_.data(), stage2_.data(), rest, lr_);
    }
    for (size_t j = 0; j < rest; ++j) {
      const size_t i = rest_[j];
      s.params[i] = saved_x_[j];
      if (!saved_m_.empty()) m_[i] = saved_m_[j];
      if (!saved_v_.empty()) v_[i] = saved_v_[j];
      last_avg_[i] = stage2_[j];
    }
  }

  void select_static() {
    for (size_t j = 0; j < k_; ++j) sel_[j] = j;
    for (size_t j = k_; j < n_; ++j) rest_[j - k_] = j;
  }

  // S = the k largest |ḡ| of the last averaged gradient (ties: lower index), both lists ascending.
  void select_magnitude() {
    for (size_t i = 0; i < n_; ++i) order_[i] = i;
    const float* a = last_avg_.data();
    auto larger = [a](size_t x, size_t y) {
      const float ax = std::fabs(a[x]), ay = std::fabs(a[y]);
      return ax > ay || (ax == ay && x < y);
    };
    std::nth_element(order_.begin(), order_.begin() + static_cast<std::ptrdiff_t>(k_ - 1), order_.end(), larger);
    std::fill(mark_.begin(), mark_.end(), 0);
    for (size_t j = 0; j < k_; ++j) mark_[order_[j]] = 1;
    size_t in = 0, out = 0;
    for (size_t i = 0; i < n_; ++i) {
      if (mark_[i]) {
        sel_[in++] = i;
      } else {
        rest_[out++] = i;
      }
    }
  }

  double fraction_;
  bool magnitude_;
  bool adamw_;
  SgdOptions sgd_;
  AdamWOptions adam_;
  size_t n_ = 0, k_ = 0;
  int64_t t_ = 0;
  double lr_ = 0;
  bool pending_ = false;
  std::vector<float> m_, v_;  // SGD: m_ is the velocity (empty without momentum); AdamW: moments
  std::vector<size_t> order_, sel_, rest_;
  std::vector<uint8_t> mark_;
  std::vector<float> stage1_, stage2_, saved_x_, saved_m_, saved_v_, last_avg_;
  CollRequest request_;
};

void osp_validate(const RunConfig& cfg) {
  if (!(cfg.osp_fraction > 0 && cfg.osp_fraction <= 1))
    config_fail("osp-fraction", fmt::format("must be in (0, 1] (got {})", cfg.osp_fraction),
                "pass e.g. --osp-fraction 0.25 (1: everything in stage 1, ssgd)");
  if (cfg.osp_select != "magnitude" && cfg.osp_select != "static")
    config_fail("osp-select", fmt::format("unknown rule '{}'", cfg.osp_select), "available: magnitude, static");
}

}  // namespace

std::unique_ptr<Algorithm> algorithm_create_osp(const RunConfig& cfg) {
  return std::make_unique<Osp>(cfg);
}

const Variant& variant_osp() {
  static const Variant v = [] {
    Variant v;
    v.name = "osp";
    v.description =
        "OSP: two-stage gradient sync, the important share before the update, the rest overlapped with the next "
        "step and corrected (LGP)";
    v.knobs = "--osp-fraction f, --osp-select magnitude|static";
    v.flags = {{"osp-fraction"}, {"osp-select"}};
    v.no_compress = "its two stages split the uncompressed gradient all-reduce by value";
    v.validate = osp_validate;
    v.create = algorithm_create_osp;
    v.host_only = [](const RunConfig&) -> const char* {
      return "its two-stage selection and correction run on the host";
    };
    return v;
  }();
  return v;
}

}  // namespace dsgd
