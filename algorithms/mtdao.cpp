// mtdao: multi-timescale desynced local optimisation (DES-LOC: Iacob et al., "DES-LOC:
// Desynced Low Communication Adaptive Optimizers for Training Foundation Models", 2025; MT-DAO:
// Iacob et al., "MT-DAO: Multi-Timescale Distributed Adaptive Optimizers with Local Updates",
// 2025). Local steps of the worker's optimizer; the parameters and each optimizer state are
// averaged with their own period:
//   every step:  x_i, m_i,k, v_i ← opt(x_i, g_i)             (local; K momenta, below)
//   (t+1) ≡ 0 mod H_x:  x_i ← avg_j x_j                      (H_x = --period)
//   (t+1) ≡ 0 mod H_m:  m_i,k ← avg_j m_j,k for every k      (H_m = --period-m; 0: never)
//   (t+1) ≡ 0 mod H_v:  v_i ← avg_j v_j                      (H_v = --period-v, AdamW; 0: never)
// Momenta at several time scales (--betas b_1,..,b_K; empty: K = 1 at --beta1 / --momentum):
//   AdamW: m_k ← b_k·m_k + (1−b_k)·g;  v ← β2·v + (1−β2)·g²;  t ← t + 1
//          x ← x − η·( (1/K)·Σ_k m_k/(1−b_k^t) / (√(v/(1−β2^t)) + ε) + λ·x )
//   SGD:   d = g + λ·x;  u_k ← b_k·u_k + d;  x ← x − η·(1/K)·Σ_k u_k   (heavy ball; --nesterov needs
//          --momentum, which --betas replaces: Nesterov only with one time scale)
// K = 1 is the optimizer of algorithms/optimizer.hpp itself (adamw_update / sgd_update, the
// same arithmetic), so H_m = H_v = 0 (states kept local) is localsgd with that optimizer bit for
// bit, and one worker is the serial optimizer bit for bit. With every period 1 and SGD (with
// momentum), averaging x and u every step equals ssgd's update of the averaged gradient (both
// are linear in g) to float rounding; with AdamW it does not (the average of g_i² is not the
// square of the average gradient). Differences from the papers: the first moments share one
// period H_m, and the momenta are combined by their mean (MT-DAO weighs them).
// Bytes per step per worker (ring, R = 2(n−1)/n·4|x|): R/H_x + K·R/H_m + R/H_v, a term
// dropped when its period is 0 or its state does not exist (SGD without momentum: no u; SGD:
// no v). Memory: parameters, gradient, K first moments (+ v for AdamW).
#include <algorithm>
#include <cmath>
#include <sstream>

#include "algorithms/algorithm.hpp"
#include "algorithms/config_check.hpp"
#include "algorithms/variant.hpp"

namespace dsgd {

namespace {

// --betas "0.9,0.99" → {0.9, 0.99}; empty → {}. Refuses, naming --betas, what is not a list of
// 1..8 numbers in [0, 1).
std::vector<double> mtdao_parse_betas(const std::string& text) {
  std::vector<double> out;
  if (text.empty()) return out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    size_t used = 0;
    double b = 0;
    try {
      b = std::stod(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != item.size())
      config_fail("betas", fmt::format("'{}' is not a number (in '{}')", item, text), "pass e.g. --betas 0.9,0.99");
    if (!(b >= 0 && b < 1))
      config_fail("betas", fmt::format("each decay must be in [0, 1) (got {})", item), "pass e.g. --betas 0.9,0.99");
    out.push_back(b);
  }
  if (out.empty() || text.back() == ',')
    config_fail("betas", fmt::format("'{}' is not a comma-separated list", text), "pass e.g. --betas 0.9,0.99");
  if (out.size() > 8)
    config_fail("betas", fmt::format("at most 8 time scales (got {})", out.size()), "pass fewer decays");
  return out;
}

class Mtdao final : public Algorithm {
 public:
  explicit Mtdao(const RunConfig& cfg)
      : adamw_(cfg.optimizer == "adamw" || (cfg.optimizer == "auto" && variant_get("mtdao").optimizer == "adamw")),
        period_x_(cfg.period),
        period_m_(cfg.period_m),
        period_v_(cfg.period_v),
        sgd_{0.0, cfg.momentum, cfg.weight_decay, cfg.nesterov},
        adam_{0.0, cfg.beta1, cfg.beta2, cfg.eps, cfg.weight_decay} {
    betas_ = mtdao_parse_betas(cfg.betas);
    if (betas_.empty()) betas_.push_back(adamw_ ? cfg.beta1 : cfg.momentum);
    if (betas_.size() == 1) {
      sgd_.momentum = betas_[0];
      adam_.beta1 = betas_[0];
    }
    // SGD with one momentum of 0 keeps no velocity (sgd_update's plain rule).
    has_m_ = adamw_ || betas_.size() > 1 || betas_[0] != 0.0;
  }
  std::string name() const override { return "mtdao"; }
  bool owns_optimizer() const override { return true; }
  void setup(TrainState& s) override {
    n_ = s.count;
    const size_t k = betas_.size();
    if (has_m_) m_.assign(k * n_, 0.0f);
    if (adamw_) v_.assign(n_, 0.0f);
  }
  void optimizer_step(TrainState& s) override {
    ++t_;
    float* x = s.params;
    const float* g = s.grads;
    const size_t k = betas_.size();
    if (k == 1) {
      if (adamw_) {
        adamw_update(adam_, x, m_.data(), v_.data(), g, n_, s.lr, t_);
      } else {
        sgd_update(sgd_, x, m_.data(), g, n_, s.lr);
      }
      return;
    }
    const float inv_k = 1.0f / static_cast<float>(k);
    const float lr = static_cast<float>(s.lr);
    if (!adamw_) {
      const float wd = static_cast<float>(sgd_.weight_decay);
      for (size_t i = 0; i < n_; ++i) {
        const float d = g[i] + wd * x[i];
        float sum = 0.0f;
        for (size_t j = 0; j < k; ++j) {
          float& u = m_[j * n_ + i];
          u = static_cast<float>(betas_[j]) * u + d;
          sum += u;
        }
        x[i] -= lr * (sum * inv_k);
      }
      return;
    }
    // AdamW with K first moments: each bias-corrected by its own decay, then averaged.
    float weight[8], b[8];
    for (size_t j = 0; j < k; ++j) {
      weight[j] = static_cast<float>(1.0 / ((1.0 - std::pow(betas_[j], static_cast<double>(t_))) * double(k)));
      b[j] = static_cast<float>(betas_[j]);
    }
    const float b2 = static_cast<float>(adam_.beta2);
    const float eps = static_cast<float>(adam_.eps);
    const float decay = static_cast<float>(1.0 - s.lr * adam_.weight_decay);
    const float inv_sqrt_c2 = static_cast<float>(1.0 / std::sqrt(1.0 - std::pow(adam_.beta2, static_cast<double>(t_))));
    float* v = v_.data();
    for (size_t i = 0; i < n_; ++i) {
      const float gi = g[i];
      float mhat = 0.0f;
      for (size_t j = 0; j < k; ++j) {
        float& m = m_[j * n_ + i];
        m = b[j] * m + (1.0f - b[j]) * gi;
        mhat += weight[j] * m;
      }
      v[i] = b2 * v[i] + (1.0f - b2) * gi * gi;
      const float denom = std::sqrt(v[i]) * inv_sqrt_c2 + eps;
      x[i] = x[i] * decay - lr * mhat / denom;
    }
  }
  void after_update(TrainState& s) override {
    const int64_t t = s.step + 1;
    if (t % period_x_ == 0) s.comm.allreduce_average(s.params, s.count);
    if (has_m_ && period_m_ > 0 && t % period_m_ == 0) s.comm.allreduce_average(m_.data(), m_.size());
    if (adamw_ && period_v_ > 0 && t % period_v_ == 0) s.comm.allreduce_average(v_.data(), v_.size());
  }
  bool replicas_identical() const override { return period_x_ == 1; }
  double bytes_sent_per_step(double param_bytes, int n) const override {
    const double r = ring_allreduce_bytes_sent(param_bytes, n);
    double bytes = r / static_cast<double>(period_x_);
    if (has_m_ && period_m_ > 0) bytes += static_cast<double>(betas_.size()) * r / static_cast<double>(period_m_);
    if (adamw_ && period_v_ > 0) bytes += r / static_cast<double>(period_v_);
    return bytes;
  }
  int max_collectives_per_step() const override { return 3; }
  double model_state_bytes(size_t count, int n) const override {
    const double states = (has_m_ ? double(betas_.size()) : 0.0) + (adamw_ ? 1.0 : 0.0);
    return (2.0 + states) * sizeof(float) * double(count);
  }

 private:
  bool adamw_;
  int64_t period_x_, period_m_, period_v_;
  SgdOptions sgd_;
  AdamWOptions adam_;
  std::vector<double> betas_;
  bool has_m_ = true;
  size_t n_ = 0;
  int64_t t_ = 0;
  std::vector<float> m_;  // K first moments (SGD: velocities), moment k at [k·n, (k+1)·n)
  std::vector<float> v_;  // AdamW's second moment
};

void mtdao_validate(const RunConfig& cfg) {
  const std::vector<double> betas = mtdao_parse_betas(cfg.betas);
  const bool adamw = optimizer_resolve_name(cfg) == "adamw";
  if (!adamw && config_changed(cfg, "period-v"))
    config_fail("period-v", "applies to --optimizer adamw only (SGD has no second moment)",
                "drop --period-v, or pass --optimizer adamw");
  if (!betas.empty()) {
    const char* single = adamw ? "beta1" : "momentum";
    if (config_changed(cfg, single))
      config_fail(single, "is replaced by --betas (each momentum's decay)",
                  fmt::format("drop --{} and list every decay in --betas", single));
  }
}

}  // namespace

std::unique_ptr<Algorithm> algorithm_create_mtdao(const RunConfig& cfg) {
  return std::make_unique<Mtdao>(cfg);
}

const Variant& variant_mtdao() {
  static const Variant v = [] {
    Variant v;
    v.name = "mtdao";
    v.description =
        "MT-DAO / DES-LOC: parameters and each optimizer moment averaged with its own period; momenta at several "
        "time scales";
    v.knobs = "--period H_x, --period-m H_m, --period-v H_v, --betas b1,b2,..";
    v.flags = {{"period-m"}, {"period-v"}, {"betas"}};
    v.takes_period = true;
    v.no_compress = "it averages optimizer states as well as parameters, each by its own uncompressed all-reduce";
    v.optimizer = "adamw";
    v.validate = mtdao_validate;
    v.create = algorithm_create_mtdao;
    v.host_only = [](const RunConfig&) -> const char* { return "its multi-timescale optimizer runs on the host"; };
    return v;
  }();
  return v;
}

}  // namespace dsgd
