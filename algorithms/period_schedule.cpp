// See period_schedule.hpp.
#include "algorithms/period_schedule.hpp"

#include <algorithm>
#include <cmath>

#include "core/errors.hpp"

namespace dsgd {

PeriodScheduleKind period_schedule_kind(const std::string& name) {
  if (name == "constant") return PeriodScheduleKind::schedule_constant;
  if (name == "qsr") return PeriodScheduleKind::schedule_qsr;
  if (name == "adacomm") return PeriodScheduleKind::schedule_adacomm;
  DSGD_THROW(InputError, "available: constant, qsr, adacomm", "--period-schedule: unknown schedule '{}'", name);
}

namespace {

int64_t capped(double h) {
  if (!(h < static_cast<double>(kPeriodScheduleMax))) return kPeriodScheduleMax;  // also +inf
  return static_cast<int64_t>(h);
}

}  // namespace

int64_t qsr_period(double alpha, double lr, int64_t h_base) {
  if (!(lr > 0)) return h_base;
  const double r = alpha / lr;
  return std::max(h_base, capped(std::floor(r * r)));
}

int64_t adacomm_period(double loss, double loss0, int64_t h0) {
  if (!std::isfinite(loss) || !std::isfinite(loss0) || !(loss0 > 0)) return h0;
  const double h = std::ceil(std::sqrt(std::max(0.0, loss) / loss0) * static_cast<double>(h0));
  return std::max<int64_t>(1, capped(h));
}

int64_t PeriodPlan::period_at(int64_t t) const {
  if (kind != PeriodScheduleKind::schedule_qsr || t < lr.warmup) return h_base;
  return qsr_period(alpha, lr.lr_at(t), h_base);
}

PeriodPlan period_plan_make(const RunConfig& cfg, double base_lr, int64_t total_steps) {
  PeriodPlan p;
  p.kind = period_schedule_kind(cfg.period_schedule);
  p.h_base = std::max<int64_t>(1, cfg.period);
  p.alpha = cfg.qsr_alpha;
  p.lr = lr_schedule_from_config(cfg, base_lr, total_steps);
  return p;
}

PeriodPlan period_plan_make(const RunConfig& cfg, int workers, int64_t total_steps) {
  const double lr = lr_scaled(optimizer_base_lr(cfg), cfg.lr_scaling, cfg.batch, workers, cfg.lr_base_batch);
  return period_plan_make(cfg, lr, total_steps);
}

PeriodRounds period_plan_rounds(const PeriodPlan& plan, int64_t start, int64_t steps) {
  PeriodRounds r;
  const int64_t first = std::max<int64_t>(0, start);
  r.last_steps = plan.period_at(first);
  for (int64_t t = first; t < steps;) {
    const int64_t h = plan.period_at(t);
    r.last_steps = std::min(h, steps - t);
    if (h <= steps - t) ++r.averages;
    t += h;
  }
  return r;
}

}  // namespace dsgd
