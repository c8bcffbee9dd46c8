// The sync-period schedules of localsgd (--period-schedule): how long each round of local
// steps lasts before the model average that ends it. A round starts at the first local step
// (post-local K, else 0) and after every average.
//   constant: H = --period every round.
//   qsr (Gu, Lyu, Arora, Zhang, "Why (and when) does local SGD generalize better than SGD?",
//        ICLR 2024: the Quadratic Synchronization Rule): a round starting at step t lasts
//          H_t = max(H_base, ⌊(α/η_t)²⌋)
//        with η_t the learning-rate schedule's rate at t (--lr-schedule, after --lr-scaling),
//        H_base = --period and α = --qsr-alpha: H grows as the rate decays. During the linear
//        warm-up (t < --lr-warmup) a round lasts H_base (the paper applies the rule after
//        warm-up; a tiny warm-up rate would otherwise give one round for the whole run).
//   adacomm (Wang & Joshi, "Adaptive Communication Strategies to Achieve the Best
//        Error-Runtime Trade-off in Local-Update SGD", MLSys 2019): the first round lasts
//        H_0 = --period; after each round the next one lasts
//          H = max(1, ⌈√(F/F_0) · H_0⌉)
//        with F the training loss of the round just ended and F_0 that of the first round
//        (what F is exactly: algorithms/localsgd.cpp). It depends on the loss, so it is not
//        known before the run.
// Every period is capped at kPeriodScheduleMax steps (a rate near 0 would overflow).
#pragma once

#include <cstdint>
#include <string>

#include "algorithms/optimizer.hpp"
#include "core/run_config.hpp"

namespace dsgd {

enum class PeriodScheduleKind { schedule_constant, schedule_qsr, schedule_adacomm };

constexpr int64_t kPeriodScheduleMax = 1'000'000'000;

// "constant" | "qsr" | "adacomm"; InputError naming --period-schedule otherwise.
PeriodScheduleKind period_schedule_kind(const std::string& name);

// max(H_base, ⌊(α/η)²⌋), capped at kPeriodScheduleMax; H_base when η is not positive.
int64_t qsr_period(double alpha, double lr, int64_t h_base);
// max(1, ⌈√(F/F_0) · H_0⌉), capped at kPeriodScheduleMax; H_0 when F or F_0 is not finite
// or F_0 is not positive (nothing to compare with).
int64_t adacomm_period(double loss, double loss0, int64_t h0);

// A schedule known before the run (constant, qsr): the length of a round starting at step t.
struct PeriodPlan {
  PeriodScheduleKind kind = PeriodScheduleKind::schedule_constant;
  int64_t h_base = 1;
  double alpha = 0;
  LrSchedule lr;  // the trainer's schedule (lr_schedule_from_config with the scaled base rate)
  int64_t period_at(int64_t t) const;
};
// The plan of cfg for a run of total_steps at the (scaled) base rate base_lr.
PeriodPlan period_plan_make(const RunConfig& cfg, double base_lr, int64_t total_steps);
// The same with the base rate the optimizer of cfg on `workers` trains at (optimizer_create's).
PeriodPlan period_plan_make(const RunConfig& cfg, int workers, int64_t total_steps);
// The rounds a plan runs in steps [start, steps): how many end with an average (a round cut off
// by the end of the run has none) and how many steps the last one ran.
struct PeriodRounds {
  int64_t averages = 0;
  int64_t last_steps = 0;  // the last round's steps (its period unless the run's end cut it)
};
PeriodRounds period_plan_rounds(const PeriodPlan& plan, int64_t start, int64_t steps);
inline int64_t period_plan_syncs(const PeriodPlan& plan, int64_t start, int64_t steps) {
  return period_plan_rounds(plan, start, steps).averages;
}

}  // namespace dsgd
