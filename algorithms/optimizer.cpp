// SGD (momentum, Nesterov, coupled L2 decay) and AdamW (decoupled decay), the learning-rate
// schedule and the batch-size scaling rule; see optimizer.hpp for the formulas.
#include "algorithms/optimizer.hpp"

#include <cmath>

#include "algorithms/variant.hpp"
#include "core/errors.hpp"
#include "core/run_config.hpp"

namespace dsgd {

SgdOptimizer::SgdOptimizer(SgdOptions options, size_t count, Device device)
    : options_(options), count_(count), device_(device), velocity_(device, options.momentum != 0.0 ? count : 0) {}

namespace {

SgdUpdate sgd_constants(const SgdOptions& options, double lr) {
  return SgdUpdate{static_cast<float>(lr), static_cast<float>(options.momentum),
                   static_cast<float>(options.weight_decay), options.nesterov};
}

}  // namespace

void sgd_update(const SgdOptions& options, float* params, float* velocity, const float* grads, size_t n, double lr_d) {
  sgd_update(options, host_view(params, n), host_view(velocity, velocity ? n : 0), host_view(grads, n), lr_d);
}

void sgd_update(const SgdOptions& options, BufferView params, BufferView velocity, ConstBufferView grads, double lr_d) {
  vector_ops_for(params.device).sgd_update(params, velocity, grads, sgd_constants(options, lr_d));
}

void SgdOptimizer::step(float* params, const float* grads, double lr_d) {
  vector_ops_for(device_).sgd_update(device_view(params, count_, device_), velocity_.view(),
                                     device_view(grads, count_, device_), sgd_constants(options_, lr_d));
}

AdamWOptimizer::AdamWOptimizer(AdamWOptions options, size_t count, Device device)
    : options_(options), count_(count), device_(device), m_(device, count), v_(device, count) {}

namespace {

// The per-step constants of the adamw rule at step count t (from 1): bias corrections in
// double, then one step size and one denominator scale per step.
AdamWUpdate adamw_constants(const AdamWOptions& options, double lr_d, int64_t t) {
  const double c1 = 1.0 - std::pow(options.beta1, static_cast<double>(t));
  const double c2 = 1.0 - std::pow(options.beta2, static_cast<double>(t));
  AdamWUpdate u;
  u.beta1 = static_cast<float>(options.beta1);
  u.beta2 = static_cast<float>(options.beta2);
  u.eps = static_cast<float>(options.eps);
  u.decay = static_cast<float>(1.0 - lr_d * options.weight_decay);
  u.step_size = static_cast<float>(lr_d / c1);
  u.inv_sqrt_c2 = static_cast<float>(1.0 / std::sqrt(c2));
  return u;
}

}  // namespace

void adamw_update(const AdamWOptions& options, float* params, float* m, float* v, const float* grads, size_t n,
                  double lr_d, int64_t t) {
  vector_ops_for(kHostDevice)
      .adamw_update(host_view(params, n), host_view(m, n), host_view(v, n), host_view(grads, n),
                    adamw_constants(options, lr_d, t));
}

void AdamWOptimizer::step(float* params, const float* grads, double lr_d) {
  ++t_;
  vector_ops_for(device_).adamw_update(device_view(params, count_, device_), m_.view(), v_.view(),
                                       device_view(grads, count_, device_), adamw_constants(options_, lr_d, t_));
}

std::string optimizer_resolve_name(const RunConfig& cfg) {
  if (cfg.optimizer != "auto") return cfg.optimizer;
  const Variant* v = variant_find(cfg.algo);
  return v ? v->optimizer : "sgd";
}

double optimizer_default_lr(const std::string& name) {
  return name == "adamw" ? 1e-3 : 0.05;
}

double optimizer_base_lr(const RunConfig& cfg) {
  return cfg.lr > 0 ? cfg.lr : optimizer_default_lr(optimizer_resolve_name(cfg));
}

double lr_scaled(double lr, const std::string& rule, int64_t batch, int workers, int64_t base_batch) {
  const double ratio = static_cast<double>(batch) * workers / static_cast<double>(base_batch);
  if (rule == "linear") return lr * ratio;
  if (rule == "sqrt") return lr * std::sqrt(ratio);
  return lr;
}

std::unique_ptr<Optimizer> optimizer_create(const RunConfig& cfg, size_t count, int workers, Device device) {
  const double lr = lr_scaled(optimizer_base_lr(cfg), cfg.lr_scaling, cfg.batch, workers, cfg.lr_base_batch);
  const std::string name = optimizer_resolve_name(cfg);
  if (name == "adamw")
    return std::make_unique<AdamWOptimizer>(AdamWOptions{lr, cfg.beta1, cfg.beta2, cfg.eps, cfg.weight_decay}, count,
                                            device);
  if (name == "sgd")
    return std::make_unique<SgdOptimizer>(SgdOptions{lr, cfg.momentum, cfg.weight_decay, cfg.nesterov}, count, device);
  DSGD_THROW(InputError, "available: sgd, adamw, auto", "--optimizer: unknown optimizer '{}'", cfg.optimizer);
}

double LrSchedule::lr_at(int64_t t) const {
  if (t < warmup) return base_lr * static_cast<double>(t + 1) / static_cast<double>(warmup);
  const int64_t after = t - warmup;
  if (kind == LrScheduleKind::lr_cosine) {
    const int64_t span = total_steps - warmup;
    if (span <= 0) return base_lr;
    const double pi = 3.14159265358979323846;
    return base_lr * 0.5 * (1.0 + std::cos(pi * static_cast<double>(after) / static_cast<double>(span)));
  }
  if (kind == LrScheduleKind::lr_step && step_every > 0) {
    const int64_t drops = after / step_every;  // completed periods (floor)
    return base_lr * std::pow(gamma, static_cast<double>(drops));
  }
  return base_lr;
}

LrSchedule lr_schedule_from_config(const RunConfig& cfg, double base_lr, int64_t total_steps) {
  LrSchedule s;
  s.kind = cfg.lr_schedule == "cosine" ? LrScheduleKind::lr_cosine
           : cfg.lr_schedule == "step" ? LrScheduleKind::lr_step
                                       : LrScheduleKind::lr_constant;
  s.base_lr = base_lr;
  s.warmup = cfg.lr_warmup;
  s.total_steps = total_steps;
  s.step_every = cfg.lr_step_every;
  s.gamma = cfg.lr_step_gamma;
  return s;
}

}  // namespace dsgd
