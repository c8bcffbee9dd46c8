// The local optimizer every algorithm applies, behind one small interface, and the
// learning-rate schedule and batch-size scaling rule that feed it. Rules (docs/algorithms.md):
//   sgd   : d = g + λ·x;  v ← μ·v + d;  x ← x − η·(nesterov ? d + μ·v : v)
//           (coupled L2 decay, the SVM's regulariser; μ = 0 is plain x ← x − η·(g + λ·x))
//   adamw : m ← β1·m + (1−β1)·g;  v ← β2·v + (1−β2)·g²;  t ← t + 1
//           x ← x − η·( m/(1−β1^t) / (√(v/(1−β2^t)) + ε) + λ·x )   (decoupled decay,
//           Loshchilov & Hutter 2019; the same arithmetic as torch.optim.AdamW)
// State is allocated once at construction; step() never allocates.
// Limits: float32 state; the schedule is a function of the global step only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/buffer.hpp"
#include "core/vector_ops.hpp"

namespace dsgd {

struct RunConfig;

struct SgdOptions {
  double lr = 0.01;
  double momentum = 0.0;
  double weight_decay = 0.0;
  bool nesterov = false;
};

struct AdamWOptions {
  double lr = 0.001;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  virtual std::string name() const = 0;
  // x ← update(x, g) with learning rate lr; params and grads have count() floats, in the
  // optimizer's device memory (given at construction; its state lives there too).
  virtual void step(float* params, const float* grads, double lr) = 0;
  // Same, at the learning rate given at construction.
  void step(float* params, const float* grads) { step(params, grads, base_lr()); }
  virtual double base_lr() const = 0;
  virtual size_t count() const = 0;
};

// The sgd rule above on caller-owned state (velocity: n floats, unused when μ = 0), for
// algorithms that keep the optimizer state elsewhere (ps: in the server's window).
// SgdOptimizer::step is this function on its own velocity, so both round identically.
void sgd_update(const SgdOptions& options, float* params, float* velocity, const float* grads, size_t n, double lr);
// The same update on views of one device (its VectorOps::sgd_update); velocity may be empty when μ = 0.
void sgd_update(const SgdOptions& options, BufferView params, BufferView velocity, ConstBufferView grads, double lr);

class SgdOptimizer final : public Optimizer {
 public:
  // params, grads and the velocity are in `device`'s memory (the update: its VectorOps).
  SgdOptimizer(SgdOptions options, size_t count, Device device = kHostDevice);
  using Optimizer::step;
  std::string name() const override { return "sgd"; }
  void step(float* params, const float* grads, double lr) override;
  double base_lr() const override { return options_.lr; }
  size_t count() const override { return count_; }
  const SgdOptions& options() const { return options_; }

 private:
  SgdOptions options_;
  size_t count_;
  Device device_;
  DeviceBuffer velocity_;  // empty when μ = 0
};

class AdamWOptimizer final : public Optimizer {
 public:
  AdamWOptimizer(AdamWOptions options, size_t count, Device device = kHostDevice);
  using Optimizer::step;
  std::string name() const override { return "adamw"; }
  void step(float* params, const float* grads, double lr) override;
  double base_lr() const override { return options_.lr; }
  size_t count() const override { return count_; }
  int64_t steps_taken() const { return t_; }

 private:
  AdamWOptions options_;
  size_t count_;
  Device device_;
  DeviceBuffer m_, v_;
  int64_t t_ = 0;
};

// The optimizer a run asks for ("sgd" | "adamw"; "auto": the algorithm's default, adamw
// for diloco, sgd otherwise), with the scaled base learning rate.
std::string optimizer_resolve_name(const RunConfig& cfg);
std::unique_ptr<Optimizer> optimizer_create(const RunConfig& cfg, size_t count, int workers,
                                            Device device = kHostDevice);

// Batch-size scaling of the base learning rate, B = batch · workers (the global batch):
//   none: η;  linear: η·B/B0;  sqrt: η·√(B/B0)   (B0 = --lr-base-batch; Goyal et al. 2017,
// Krizhevsky 2014).
double lr_scaled(double lr, const std::string& rule, int64_t batch, int workers, int64_t base_batch);

// Learning rate at step t (from 0) of a run of T steps, base rate η, warm-up W steps:
//   t < W:              η·(t+1)/W                    (linear warm-up, Goyal et al. 2017)
//   constant:           η
//   cosine:             η·½·(1 + cos(π·(t−W)/(T−W)))  (Loshchilov & Hutter 2017, no restarts)
//   step:               η·γ^⌊(t−W)/every⌋
enum class LrScheduleKind { lr_constant, lr_cosine, lr_step };
struct LrSchedule {
  LrScheduleKind kind = LrScheduleKind::lr_constant;
  double base_lr = 0.01;
  int64_t warmup = 0;
  int64_t total_steps = 1;
  int64_t step_every = 0;
  double gamma = 0.1;
  double lr_at(int64_t t) const;
};

LrSchedule lr_schedule_from_config(const RunConfig& cfg, double base_lr, int64_t total_steps);

}  // namespace dsgd
