// Test helpers shared by the variant and optimizer tests: a small SVM configuration, serial
// training written out by hand (the reference a one-worker variant must equal), and the
// trainer's result for a configuration on one rank.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "algorithms/optimizer.hpp"
#include "cluster/communicator.hpp"
#include "core/run_config.hpp"
#include "engine/batch_sampler.hpp"
#include "engine/trainer.hpp"
#include "workloads/datasets/dataset.hpp"
#include "workloads/workload.hpp"

namespace dsgd::testing {

// SVM on a small synthetic set, 61 steps with H = 4 (not a multiple: the run ends mid-round).
inline RunConfig small_svm_config() {
  RunConfig cfg;
  cfg.workload = "svm";
  cfg.dataset = "synthetic:n=2000,d=50,classes=3,noise=0.0,test=400";
  cfg.batch = 16;
  cfg.steps = 61;
  cfg.lr = 0.05;
  cfg.weight_decay = 1e-3;
  cfg.seed = 7;
  cfg.eval_every = 20;
  cfg.warmup = 2;
  cfg.period = 4;
  return cfg;
}

// Serial training written out: the trainer's batch order on one worker; step(x, g) is the
// update, at_init(x) runs after initialisation, after_step(t, x) after each update.
inline std::vector<float> serial_run(const RunConfig& cfg, const std::function<void(float*, const float*)>& step,
                                     const std::function<void(std::vector<float>&)>& at_init,
                                     const std::function<void(int64_t, std::vector<float>&)>& after_step) {
  DatasetPair data = dataset_load(cfg.dataset, cfg.seed);
  auto wl = workload_create(cfg, data.train);
  wl->reserve(static_cast<size_t>(cfg.batch));
  std::vector<float> x(wl->param_count()), g(wl->param_count());
  wl->init_params(x.data(), cfg.seed);
  at_init(x);
  BatchSampler sampler(data.train.rows, 0, 1, static_cast<size_t>(cfg.batch), cfg.seed);
  for (int64_t t = 0; t < cfg.steps; ++t) {
    wl->load_batch(data.train, sampler.next(), sampler.batch());
    wl->forward(x.data());
    wl->backward(x.data(), g.data(), LayerHook{});
    step(x.data(), g.data());
    after_step(t, x);
  }
  return x;
}

// The same with an optimizer's step as the update.
inline std::vector<float> serial_run(const RunConfig& cfg, Optimizer& opt,
                                     const std::function<void(std::vector<float>&)>& at_init,
                                     const std::function<void(int64_t, std::vector<float>&)>& after_step) {
  return serial_run(
      cfg, [&](float* x, const float* g) { opt.step(x, g); }, at_init, after_step);
}

inline void nothing_at_init(std::vector<float>&) {}
inline void nothing_after(int64_t, std::vector<float>&) {}

// The final parameters of the trainer's run of cfg on one rank.
inline std::vector<float> trained(const RunConfig& cfg) {
  auto comm = communicator_create_self();
  return trainer_run(cfg, *comm, nullptr, {}).final_params;
}

}  // namespace dsgd::testing
