// The live trial runner behind tuner/evaluator.hpp: each trial is trained on the simulated
// cluster (tuner/trial.hpp trial_run) with a schedule fixed per (candidate, R) — its step
// count (enough for 1.25 R at the step time of a short timing-only probe, capped by
// max_trial_steps) and evaluation interval (the first rung / 40) — so a shorter trial is an
// exact prefix of a longer one, and stored as a trial row of the session before it returns.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "results/store.hpp"
#include "tuner/evaluator.hpp"
#include "tuner/recommend.hpp"

namespace dsgd {

class LiveTrialEvaluator : public TrialEvaluator {
 public:
  LiveTrialEvaluator(const TunePlan& plan, Store& store, int64_t session_id)
      : plan_(plan), store_(store), session_id_(session_id) {}
  TrialRow evaluate(const Candidate& c, uint64_t seed, double budget_s, const std::string& phase) override;
  void begin_seed(uint64_t seed) override;
  double trial_wall_s() const { return trial_wall_s_; }  // real seconds inside trial runs

 private:
  std::pair<int64_t, int64_t> steps_of(const Candidate& c, const std::string& key);

  const TunePlan& plan_;
  Store& store_;
  int64_t session_id_;
  std::map<std::string, std::pair<int64_t, int64_t>> steps_cache_;  // config -> (steps, eval_every)
  std::shared_ptr<const void> seed_data_;                           // the current seed's dataset, held
  double trial_wall_s_ = 0;
};

}  // namespace dsgd
