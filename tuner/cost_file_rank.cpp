// Ranking a cost file's configurations by predicted time (cost_file_rank.hpp).
#include "tuner/cost_file_rank.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

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

// Steps to the target at global batch b from the reference, for a noise scale `noise` (none:
// perfect scaling).
double reference_s_min(const ConvergenceReference& ref, double noise) {
  return ref.steps / (1.0 + noise / ref.global_batch);
}
double reference_steps_at(const ConvergenceReference& ref, std::optional<double> noise, double b) {
  return noise ? reference_s_min(ref, *noise) * (1.0 + *noise / b) : ref.steps * ref.global_batch / b;
}

// Sorts best first (stable: ties keep the space's order) and sets each row's relative score.
void rank_sort(std::vector<CostFileRankRow>& rows) {
  std::stable_sort(rows.begin(), rows.end(),
                   [](const CostFileRankRow& a, const CostFileRankRow& b) { return a.score < b.score; });
  for (CostFileRankRow& r : rows) r.relative = r.score / rows.front().score;
}

// A row's score at another step time (the score is linear in the step).
double score_at(const CostFileRankRow& r, double step_s) {
  return r.step_s > 0 ? r.score * step_s / r.step_s : r.score;
}

// Times the leaders (sorted rows within kCostFileLeaderMargin of the best, at most
// kCostFileLeaders) at kCostFileSeeds seeds, ranks them by their median step, marks the leaders
// that beat or tie the best at a seed, and says so in a note when the seeds moved a step.
void settle_leaders(CostFileRanking& out, Store& read) {
  std::vector<CostFileRankRow>& rows = out.rows;
  double spread = 0;  // the leaders' largest (highest − lowest) / median step over the seeds
  for (size_t i = 0; i < rows.size() && i < kCostFileLeaders && rows[i].relative <= 1 + kCostFileLeaderMargin; ++i) {
    CostFileRankRow& r = rows[i];
    r.seed_steps_s = {r.step_s};
    for (int k = 1; k < kCostFileSeeds; ++k) {
      RunConfig cfg = r.config;
      cfg.seed += k;
      r.seed_steps_s.push_back(trial_step_time_estimate(cfg, read));
    }
    std::vector<double> steps = r.seed_steps_s;
    std::sort(steps.begin(), steps.end());
    r.score = score_at(r, steps[steps.size() / 2]);
    r.step_s = steps[steps.size() / 2];
    r.step_low_s = steps.front();
    r.step_high_s = steps.back();
    r.leader = true;
    if (r.step_s > 0) spread = std::max(spread, (r.step_high_s - r.step_low_s) / r.step_s);
  }
  rank_sort(rows);
  if (!(spread > 0) || !rows.front().leader) return;  // no draws: nothing moved
  // Seed k draws the same compute for every configuration, so the rows are compared seed by seed.
  const CostFileRankRow& best = rows.front();
  size_t ties = 0;
  for (size_t i = 1; i < rows.size(); ++i) {
    CostFileRankRow& r = rows[i];
    if (!r.leader) continue;
    for (size_t k = 0; k < r.seed_steps_s.size() && !r.within_noise; ++k)
      r.within_noise = score_at(r, r.seed_steps_s[k]) <= score_at(best, best.seed_steps_s[k]);
    ties += r.within_noise ? 1 : 0;
  }
  const auto leaders = std::count_if(rows.begin(), rows.end(), [](const CostFileRankRow& r) { return r.leader; });
  const std::string draws =
      fmt::format("{} seeds of the simulator's draws (the cost file's per-iteration step times, a random straggler)",
                  kCostFileSeeds);
  if (leaders == 1) {
    out.notes.push_back(
        fmt::format("the best (no other configuration within {:.0f} %) was timed at {}: its step moved "
                    "by {:.2g} % (the median is ranked)",
                    100 * kCostFileLeaderMargin, draws, 100 * spread));
    return;
  }
  out.notes.push_back(fmt::format(
      "the {} leaders (within {:.0f} % of the best) were timed at {}: their step moved by up to {:.2g} % (ranked by "
      "the median){}",
      leaders, 100 * kCostFileLeaderMargin, draws, 100 * spread,
      ties == 0 ? std::string("; the best is ahead at every seed")
                : fmt::format("; {} marked '~' {} the best at one seed or more: the prediction does not tell {} from "
                              "the best",
                              ties, ties == 1 ? "beats or ties" : "beat or tie", ties == 1 ? "it" : "them")));
}

}  // namespace

ConvergenceReference convergence_reference_parse(const std::string& flag, const std::string& text) {
  const size_t at = text.find('@');
  ConvergenceReference r;
  bool ok = at != std::string::npos && at > 0 && at + 1 < text.size();
  if (ok) {
    try {
      size_t used = 0;
      r.steps = std::stod(text.substr(0, at), &used);
      ok = used == at;
      const std::string batch = text.substr(at + 1);
      r.global_batch = static_cast<double>(std::stoll(batch, &used));
      ok = ok && used == batch.size();
    } catch (const std::exception&) {
      ok = false;
    }
  }
  if (!ok || !(r.steps > 0) || !std::isfinite(r.steps) || !(r.global_batch >= 1))
    DSGD_THROW(InputError,
               "pass STEPS@BATCH: the steps of synchronous SGD your model took to reach your target at that global "
               "batch (batch x workers), e.g. 4000@256",
               "{}: '{}' is not STEPS@BATCH with both positive", flag, text);
  return r;
}

CostFileRanking cost_file_rank(const TuneSpec& spec_in, Store& read, const std::optional<ConvergenceReference>& ref) {
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
  std::vector<std::string> warnings;  // what the simulated runs warned of the file and the network
  for (const Candidate& c : space.feasible) {
    RunConfig cfg = timed_config(spec, c);
    if (!variant_timing_supported(cfg)) {
      out.refused.push_back({c, fmt::format("no timing rule ({} only)", variant_timing_supported_text())});
      continue;
    }
    cost_file_at_batch(file, cfg.batch);  // a batch the file cannot scale to: refused with its range
    CostFileRankRow row;
    row.candidate = c;
    row.step_s = trial_step_time_estimate(cfg, read, &warnings);
    const double global = static_cast<double>(c.batch) * workers;
    row.score = file.noise_scale ? row.step_s * (1.0 + *file.noise_scale / global) : row.step_s / global;
    if (ref) {
      row.steps = reference_steps_at(*ref, file.noise_scale, global);
      if (file.noise_scale) {
        const double a = reference_steps_at(*ref, 0.5 * *file.noise_scale, global);
        const double b = reference_steps_at(*ref, 2.0 * *file.noise_scale, global);
        row.steps_low = std::min(a, b);
        row.steps_high = std::max(a, b);
      } else {
        row.steps_low = std::min(row.steps, ref->steps);
        row.steps_high = std::max(row.steps, ref->steps);
      }
      row.score = row.steps * row.step_s;
    }
    row.step_low_s = row.step_high_s = row.step_s;
    row.config = cfg;
    out.rows.push_back(std::move(row));
  }
  if (out.rows.empty())
    DSGD_THROW(InputError, fmt::format("search variants with a timing rule: {}", variant_timing_supported_text()),
               "no configuration of the space can be timed from a cost file");
  rank_sort(out.rows);
  if (ref) {
    out.seconds = true;
    out.unit = "s to target";
    out.basis = file.noise_scale
                    ? fmt::format(
                          "predicted seconds to your target: step time x S(B), S(B) = S_min (1 + B_noise / B) with "
                          "B_noise = {:.4g} from the cost file and S_min = {:.4g} from your {:.4g} steps at global "
                          "batch {:.0f} (McCandlish et al. 2018)",
                          *file.noise_scale, reference_s_min(*ref, *file.noise_scale), ref->steps, ref->global_batch)
                    : fmt::format(
                          "predicted seconds to your target: step time x S(B), S(B) = {:.4g} x {:.0f} / B from your "
                          "{:.4g} steps at global batch {:.0f}, assuming perfect scaling (the cost file has no "
                          "gradient noise scale; export it with --noise-scale)",
                          ref->steps, ref->global_batch, ref->steps, ref->global_batch);
    out.notes.push_back(
        file.noise_scale
            ? "band: B_noise from half to twice the file's (B_simple estimates the critical batch only to its order); "
              "0 at your reference batch"
            : "band: from perfect scaling (every sample counts) to none (as many steps as at your reference batch)");
  } else if (file.noise_scale) {
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
  for (const std::string& w : warnings) out.notes.push_back("the simulator warned: " + w);
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
  settle_leaders(out, read);
  return out;
}

}  // namespace dsgd
