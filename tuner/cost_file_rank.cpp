// Ranking a cost file's configurations by predicted time (cost_file_rank.hpp).
#include "tuner/cost_file_rank.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "algorithms/variant.hpp"
#include "core/errors.hpp"
#include "tuner/trial.hpp"
#include "workloads/cost_file.hpp"

namespace dsgd {

namespace {

constexpr int64_t kCostFileRankSteps = 100;  // the steps of the written configuration (-o)

// The space without the learning-rate rule (it changes no time): one rule, the first.
TuneSpec timing_space(const TuneSpec& spec) {
  TuneSpec s = spec;
  if (s.lr_scalings.size() > 1) s.lr_scalings.resize(1);
  s.base.backend = "sim";
  s.base.timing_only = true;
  s.base.target.clear();
  if (s.base.steps <= 0) s.base.steps = kCostFileRankSteps;  // a cost file's run needs a step count
  return s;
}

// The candidate's configuration as timed: timing-only on the simulator, a few steps.
RunConfig timed_config(const TuneSpec& spec, const Candidate& c) {
  RunConfig cfg = candidate_config(spec, c, spec.base.seed);
  cfg.backend = "sim";
  cfg.timing_only = true;
  cfg.target.clear();
  return cfg;
}

}  // namespace

CostFileRanking cost_file_rank(const TuneSpec& spec_in, Store& read) {
  const TuneSpec spec = timing_space(spec_in);
  const CostFile file = cost_file_load(spec.base.workload);
  if (file.batches.size() == 1 && file.batches.front().batch == kCostBatchUnknown && spec.batches.size() > 1)
    DSGD_THROW(InputError, "pass the batch the trace was recorded at, as one --batch",
               "--workload {}: the trace records no batch size, so its times cannot be compared across batches "
               "(got {} batches to search)",
               spec.base.workload, spec.batches.size());
  size_t floats = 0;
  for (const CostFileLayer& l : cost_file_layers(file)) floats += l.floats;
  const SpaceEnumeration space = space_enumerate(spec, floats);
  CostFileRanking out;
  out.refused = space.refused;
  const double workers = static_cast<double>(spec.base.workers);
  for (const Candidate& c : space.feasible) {
    RunConfig cfg = timed_config(spec, c);
    if (!variant_timing_supported(cfg)) {
      out.refused.push_back({c, fmt::format("no timing rule ({} only)", variant_timing_supported_text())});
      continue;
    }
    cost_file_at_batch(file, cfg.batch);  // a batch the file cannot scale to: refused with its range
    CostFileRankRow row;
    row.candidate = c;
    row.step_s = trial_step_time_estimate(cfg, read);
    const double global = static_cast<double>(c.batch) * workers;
    row.score = file.noise_scale ? row.step_s * (1.0 + *file.noise_scale / global) : row.step_s / global;
    row.config = cfg;
    out.rows.push_back(std::move(row));
  }
  if (out.rows.empty())
    DSGD_THROW(InputError, fmt::format("search variants with a timing rule: {}", variant_timing_supported_text()),
               "no configuration of the space can be timed from a cost file");
  std::stable_sort(out.rows.begin(), out.rows.end(),
                   [](const CostFileRankRow& a, const CostFileRankRow& b) { return a.score < b.score; });
  for (CostFileRankRow& r : out.rows) r.relative = r.score / out.rows.front().score;
  if (file.noise_scale) {
    out.basis = fmt::format(
        "predicted time to a fixed target relative to the best: step time x (1 + B_noise / (batch x workers)), "
        "B_noise = {:.4g} from the cost file (McCandlish et al. 2018: steps to a target S = S_min (1 + B_noise / B))",
        *file.noise_scale);
    out.unit = "relative";
  } else {
    out.basis = std::string("time per epoch at equal statistical efficiency: step time / (batch x workers) ") +
                (file.source == CostSource::cost_source_chakra
                     ? "(a Chakra trace has no gradient noise scale, so no time to a target is predicted)"
                     : "(the cost file has no gradient noise scale: export it with --noise-scale to rank by "
                       "predicted time to a target)");
    out.unit = "s per sample";
  }
  out.notes.push_back(
      "a prediction from the cost file's times and the network model, not a measurement: no configuration was trained");
  out.notes.push_back(
      "the periodic variants' H is taken as statistically free (steps to a target as synchronous SGD's at the same "
      "global batch): optimistic for large H");
  if (spec_in.lr_scalings.size() > 1)
    out.notes.push_back("--lr-scaling is not searched: a learning-rate rule changes no time");
  if (spec_in.trials > 0 || spec_in.budget_s > 0)
    out.notes.push_back(
        "--trials and --budget are not used: every configuration is timed (a timing-only run is cheap)");
  if (!spec_in.base.target.empty())
    out.notes.push_back(fmt::format("--target {} is not used: a cost file has no accuracy", spec_in.base.target));
  return out;
}

}  // namespace dsgd
