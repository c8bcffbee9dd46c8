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
// --period-schedule (algorithms/period_schedule.hpp): constant (the rule above), qsr or
// adacomm, where each round of local steps (from K, then after each average) has its own
// length; the average that ends a round is the same. adacomm's F, the training loss of a
// round: each worker's mean minibatch loss over the round's steps (the loss of the forward
// pass at each step's parameters, before its update), averaged over the workers with the
// model: it rides as one more float at the end of the model's all-reduce (a buffer of |x| + 1
// floats; with --compress, whose average goes through the compressor, by a separate one-float
// all-reduce right after it). Every worker then holds the same F, as ssgd's replicas hold the
// same averaged gradient, so every worker picks the same next H; F_0 is that of the first
// round. Bytes per step: qsr counts its averages from its schedule (R·(min(K,T) +
// averages)/T); adacomm cannot know them before the run and reports its first rounds',
// R(|x| + 1)/H_0 (compressed: (R + r₁)/H_0, r₁ the one-float all-reduce's); its stored bytes
// per step are measured.
#include <algorithm>
#include <cmath>

#include "algorithms/algorithm.hpp"
#include "algorithms/compress/compressor.hpp"
#include "algorithms/config_check.hpp"
#include "algorithms/period_schedule.hpp"
#include "algorithms/timing_rules.hpp"
#include "algorithms/variant.hpp"

namespace dsgd {

namespace {

class LocalSgd final : public Algorithm {
 public:
  explicit LocalSgd(const RunConfig& cfg)
      : cfg_(cfg),
        period_(cfg.period),
        post_local_(cfg.post_local),
        seed_(cfg.seed),
        kind_(period_schedule_kind(cfg.period_schedule)) {
    if (!cfg.compress.empty()) {
      model_compressor_ = compressor_create(cfg.compress);
      if (post_local_ > 0) grad_compressor_ = compressor_create(cfg.compress);
    }
  }
  std::string name() const override { return "localsgd"; }
  void setup(TrainState& s) override {
    total_steps_ = s.total_steps;
    if (kind_ == PeriodScheduleKind::schedule_qsr) plan_ = period_plan_make(cfg_, s.optimizer.base_lr(), s.total_steps);
    if (kind_ != PeriodScheduleKind::schedule_constant) next_sync_ = post_local_ + first_period();
    if (kind_ == PeriodScheduleKind::schedule_adacomm) sync_buf_.assign(s.device, model_compressor_ ? 1 : s.count + 1);
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
    if (kind_ == PeriodScheduleKind::schedule_constant) {
      if ((s.step + 1 - post_local_) % period_ != 0) return;
      average(s);
      return;
    }
    if (kind_ == PeriodScheduleKind::schedule_adacomm) {
      round_loss_ += s.loss;
      round_steps_ += 1;
    }
    if (s.step + 1 != next_sync_) return;
    if (kind_ == PeriodScheduleKind::schedule_qsr) {
      average(s);
      next_sync_ = s.step + 1 + plan_.period_at(s.step + 1);
      return;
    }
    next_sync_ = s.step + 1 + adacomm_average(s);
  }
  bool replicas_identical() const override { return kind_ == PeriodScheduleKind::schedule_constant && period_ == 1; }
  double bytes_sent_per_step(double param_bytes, int n) const override {
    const double r = model_compressor_
                         ? model_compressor_->bytes_sent_per_call(static_cast<size_t>(param_bytes / sizeof(float)), n)
                         : ring_allreduce_bytes_sent(param_bytes, n);
    if (kind_ == PeriodScheduleKind::schedule_adacomm)
      return (model_compressor_ ? r + ring_allreduce_bytes_sent(sizeof(float), n)
                                : ring_allreduce_bytes_sent(param_bytes + sizeof(float), n)) /
             static_cast<double>(period_);
    if (total_steps_ <= 0 || (post_local_ == 0 && kind_ == PeriodScheduleKind::schedule_constant))
      return r / static_cast<double>(period_);  // qsr before setup: its shortest period, an upper bound
    const int64_t k = std::min(post_local_, total_steps_);
    const int64_t syncs = k + (kind_ == PeriodScheduleKind::schedule_qsr ? period_plan_syncs(plan_, k, total_steps_)
                                                                         : (total_steps_ - k) / period_);
    return r * static_cast<double>(syncs) / static_cast<double>(total_steps_);
  }
  int max_collectives_per_step() const override {
    if (!model_compressor_) return 1;
    return model_compressor_->collectives_per_call() + (kind_ == PeriodScheduleKind::schedule_adacomm ? 1 : 0);
  }
  double model_state_bytes(size_t count, int n) const override {
    const double adacomm = kind_ == PeriodScheduleKind::schedule_adacomm && !model_compressor_ ? 1.0 : 0.0;
    return (model_compressor_ ? 5.0 : 3.0 + adacomm) * sizeof(float) * double(count);  // + anchor and delta
  }
  std::string details_json() const override {
    if (kind_ == PeriodScheduleKind::schedule_constant) return {};
    nlohmann::json d = {{"period-schedule", cfg_.period_schedule}, {"first-period", first_period()}};
    if (kind_ == PeriodScheduleKind::schedule_qsr) {
      // The whole schedule is known: its averages and the last round's length (the run's end may
      // cut it: then the steps it ran).
      const PeriodRounds rounds = period_plan_rounds(plan_, post_local_, total_steps_);
      d["averages"] = rounds.averages;
      d["last-period"] = rounds.last_steps;
    }
    return d.dump();
  }

 private:
  int64_t first_period() const {
    return kind_ == PeriodScheduleKind::schedule_qsr ? plan_.period_at(post_local_) : period_;
  }
  // x_i ← avg_j x_j (or its compressed form, above).
  void average(TrainState& s) {
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
  // adacomm: the average with F (above), and the length of the next round from it.
  int64_t adacomm_average(TrainState& s) {
    float f = static_cast<float>(round_loss_ / static_cast<double>(round_steps_));
    round_loss_ = 0;
    round_steps_ = 0;
    VectorOps& vec = s.vec();
    const BufferView loss = sync_buf_.view().slice(model_compressor_ ? 0 : s.count, 1);
    vec.copy_from_host(loss, &f);
    if (model_compressor_) {
      average(s);
      s.comm.allreduce_average(loss);
    } else {
      vec.copy(sync_buf_.view().slice(0, s.count), s.param_view());
      s.comm.allreduce_average(sync_buf_.view());
      vec.copy(s.param_view(), sync_buf_.view().slice(0, s.count));
    }
    vec.copy_to_host(&f, loss);
    if (!have_loss0_) {
      loss0_ = f;
      have_loss0_ = true;
    }
    return adacomm_period(f, loss0_, period_);
  }

  RunConfig cfg_;
  int64_t period_;
  int64_t post_local_;
  uint64_t seed_;
  PeriodScheduleKind kind_;
  int64_t total_steps_ = 0;
  PeriodPlan plan_;        // qsr
  int64_t next_sync_ = 0;  // qsr, adacomm: the round ends after the step with step + 1 = next_sync_
  double round_loss_ = 0;  // adacomm: Σ of this worker's minibatch losses in the round
  int64_t round_steps_ = 0;
  double loss0_ = 0;  // adacomm: F_0
  bool have_loss0_ = false;
  DeviceBuffer sync_buf_;  // adacomm: the model and F (with --compress: F), for the all-reduce
  std::unique_ptr<GradientCompressor> model_compressor_, grad_compressor_;
  DeviceBuffer anchor_, delta_;
};

}  // namespace

std::unique_ptr<Algorithm> algorithm_create_localsgd(const RunConfig& cfg) {
  return std::make_unique<LocalSgd>(cfg);
}

namespace {

void localsgd_validate(const RunConfig& cfg) {
  const PeriodScheduleKind kind = period_schedule_kind(cfg.period_schedule);  // names --period-schedule
  if (kind == PeriodScheduleKind::schedule_qsr) {
    if (!(cfg.qsr_alpha > 0) || !std::isfinite(cfg.qsr_alpha))
      config_fail("qsr-alpha",
                  fmt::format("--period-schedule qsr needs alpha > 0 (got {}): H = max(--period, floor((alpha/lr)^2))",
                              cfg.qsr_alpha),
                  "pass e.g. --qsr-alpha 0.2 (the period at lr eta is (alpha/eta)^2: alpha = eta * sqrt(H))");
  } else if (kind == PeriodScheduleKind::schedule_adacomm && cfg.timing_only) {
    config_fail("period-schedule",
                "adacomm cannot run with --timing-only: its period follows the training loss, which a timing-only run "
                "does not compute",
                "drop --timing-only to simulate with numerics, or use --period-schedule constant or qsr");
  }
  if (kind != PeriodScheduleKind::schedule_qsr && config_changed(cfg, "qsr-alpha")) {
    config_fail("qsr-alpha", fmt::format("applies to --period-schedule qsr only (got {})", cfg.period_schedule),
                "drop --qsr-alpha or pass --period-schedule qsr");
  }
}

// Every round's length from the run's learning-rate schedule (qsr; the others are `period`).
void localsgd_timing_plan(const RunConfig& cfg, SimTimingPlan& plan) {
  if (period_schedule_kind(cfg.period_schedule) != PeriodScheduleKind::schedule_qsr) return;
  const PeriodPlan periods = period_plan_make(cfg, plan.workers, plan.steps);
  plan.period_at = [periods](int64_t t) { return periods.period_at(t); };
}

}  // namespace

// Timing-only (plain Local SGD; post-local SGD's first K steps are not modelled): the model
// all-reduce after the update on steps with (t+1) mod H = 0. diloco shares it (its outer
// step has no modelled compute phase).
// With a varying period (plan.period_at, qsr) state.round_end holds step + 1 of the current
// round's last step.
void localsgd_timing(const SimTimingPlan& plan, SimTimingState& state, int64_t step, std::vector<double>& clock,
                     SimStepTiming* rows) {
  bool sync = false;
  if (!plan.period_at) {
    sync = (step + 1) % std::max<int64_t>(1, plan.period) == 0;
  } else {
    if (state.round_end == 0) state.round_end = plan.period_at(0);
    sync = step + 1 == state.round_end;
    if (sync) state.round_end = step + 1 + plan.period_at(step + 1);
  }
  timing_step_allreduce(plan, step, clock, rows, sync, true);
}

const Variant& variant_localsgd() {
  static const Variant v = [] {
    Variant v;
    v.name = "localsgd";
    v.description = "Local SGD: local steps, all-reduce of the model every H steps; post-local SGD";
    v.knobs = "--period H, --post-local K, --period-schedule constant|qsr|adacomm, --qsr-alpha A";
    v.flags = {{"post-local"}, {"period-schedule"}, {"qsr-alpha"}};
    v.takes_period = true;
    v.validate = localsgd_validate;
    v.create = algorithm_create_localsgd;
    v.timing = localsgd_timing;
    v.timing_applies = [](const RunConfig& cfg) { return cfg.period_schedule != "adacomm"; };
    v.timing_text = "localsgd (--period-schedule constant or qsr)";
    v.timing_plan = localsgd_timing_plan;
    return v;
  }();
  return v;
}

}  // namespace dsgd
