// See recommend.hpp.
#include "tuner/recommend.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <set>

#include "algorithms/algorithm.hpp"
#include "algorithms/config_check.hpp"
#include "cluster/backends.hpp"
#include "core/clock.hpp"
#include "core/errors.hpp"
#include "core/memory_info.hpp"
#include "core/system_info.hpp"
#include "engine/compute_profile.hpp"
#include "engine/preflight.hpp"
#include "engine/shared_dataset.hpp"
#include "engine/sim_run.hpp"
#include "tuner/evaluator.hpp"
#include "tuner/prior.hpp"
#include "tuner/prior_store.hpp"
#include "tuner/proposals.hpp"
#include "tuner/resolution.hpp"
#include "tuner/successive_halving.hpp"
#include "tuner/trial.hpp"
#include "tuner/trial_mpi.hpp"
#include "tuner/trial_pool.hpp"
#include "tuner/trial_runner.hpp"
#include "tuner/tune_validate.hpp"
#include "workloads/cost_file.hpp"
#include "workloads/datasets/dataset.hpp"
#include "workloads/datasets/subset.hpp"
#include "workloads/workload.hpp"

namespace dsgd {

using namespace tune_detail;

namespace {

constexpr double kDefaultTrialTimeS = 60;   // R with --trials alone
constexpr double kTrialShareOfBudget = 20;  // R = budget / 20 by default
// Adaptive capping (Hutter et al., ParamILS, JAIR 2009, for runtime minimisation), with a
// slack for the seed-to-seed spread of a time-to-target (10-30 % on the grids of docs/tuner.md):
// once a configuration has reached the target at t*, a leader is one within kLeaderMargin x t*.
// Later rungs run at most that long (a configuration that has not reached the target by then
// is no leader, whatever it does later), such a configuration is not promoted, and the final
// race takes the leaders only.
constexpr double kLeaderMargin = 1.5;
// A race trial on a new seed runs at most kRaceCap x the slowest leader's first time: the
// leaders' order may change from seed to seed, not by that factor.
constexpr double kRaceCap = 2;

// On MPI successive halving promotes, beside the best 1/eta, the trials within 10 % of the
// last promoted one (about the run-to-run spread of a real step time, docs/tuner.md
// "Validation on MPI").
constexpr double kMpiPromoteMargin = 0.1;

// The evaluation subset a session takes when the user gives none: for a workload whose one
// evaluation of the whole test set costs more than kSubsetAboveFlop of forward passes (a deep
// model: ResNet on Fashion-MNIST ~10^11, the small GPT on Fortunes ~2 10^11; the SVM ~10^7),
// 1,000 class-stratified rows (an accuracy within +-3.1 points, 95 %) or 256 windows of text.
// A trial evaluates every first rung / 40 of virtual time, so on such a workload evaluations
// cost as much as training.
constexpr double kSubsetAboveFlop = 1e10;
constexpr int64_t kDefaultSubsetRows = 1000;
constexpr int64_t kDefaultSubsetWindows = 256;

// The checks of the spec before anything is loaded (the backend, the target, the budget, the
// configuration and its names), with the note and the promotion margin of --backend mpi.
void plan_check_spec(const TuneSpec& spec, int64_t max_trial_steps, TunePlan& plan) {
  const RunConfig& base = spec.base;
  if (cost_file_workload(base.workload))
    DSGD_THROW(InputError,
               "rank its configurations with dsgd-tune recommend (by predicted time; docs/tuner.md, \"A cost "
               "file\")",
               "--workload {}: a cost file has no numerics, so no time to the target can be measured", base.workload);
  plan.backend = trial_backend_parse(base.backend);
  if (plan.backend == TrialBackend::trial_mpi) {
    // Real ranks on this machine (the tuner owns --hostfile): the run path's oversubscription rule.
    const std::string warning = tune_validate_check_workers(
        base.workers, base.hostfile, "--backend mpi",
        "pass fewer --workers, or --backend sim to simulate them (a virtual clock, the same numerics)");
    if (!warning.empty()) plan.notes.push_back(warning);
    plan.promote_margin = kMpiPromoteMargin;
  }
  if (base.target.empty())
    DSGD_THROW(InputError, "pass e.g. --target acc=0.80 or --target loss=0.5",
               "--target is required: the objective is the time to reach it");
  plan.target = *target_parse(base.target);
  if (base.timing_only)
    DSGD_THROW(InputError, "drop --timing-only",
               "--target {} cannot be measured with --timing-only (no numerics, no evaluations)", base.target);
  if (!(spec.budget_s > 0) && spec.trials <= 0)
    DSGD_THROW(InputError, "pass --budget 5min (evaluation time, virtual seconds) or --trials K",
               "no budget: the search needs --budget or --trials");
  if (max_trial_steps < 1)
    DSGD_THROW(InputError, "pass e.g. --max-trial-steps 20000", "--max-trial-steps must be positive (got {})",
               max_trial_steps);
  {
    RunConfig check = base;
    check.given_keys.clear();
    config_validate(check);
  }
  preflight_check_names(base);
}

// The evaluation set: --eval-subset as given (0: the whole test set), else the default subset
// for a workload whose whole-set evaluation is expensive; with its note.
void plan_eval_set(TunePlan& plan, double flops_per_sample) {
  RunConfig& base = plan.spec.base;
  const Dataset& test = plan.data->test;
  const bool text = !test.tokens.empty();
  const size_t units = dataset_eval_units(test);
  const char* unit = text ? "windows" : "rows";
  const double whole_flop = static_cast<double>(units) * flops_per_sample / 3;  // forward passes only
  const int64_t n = text ? kDefaultSubsetWindows : kDefaultSubsetRows;
  const bool expensive = whole_flop > kSubsetAboveFlop && units > static_cast<size_t>(n);
  // A stored session's base marks no key as given: its subset is stored as a number, and the
  // whole set chosen on an expensive workload as every unit (0 would take the default on
  // --resume).
  if (base.given("eval-subset") || base.eval_subset > 0) {
    if (base.eval_subset > 0 && static_cast<size_t>(base.eval_subset) < units)
      plan.notes.push_back(
          fmt::format("evaluations on {} of the {} test {} (--eval-subset)", base.eval_subset, units, unit));
    else if (expensive)
      base.eval_subset = static_cast<int64_t>(units);
    return;
  }
  if (!expensive) return;
  base.eval_subset = n;
  plan.notes.push_back(
      fmt::format("evaluations on {} of the {} test {}{}: one on the whole set costs {:.3g} GFLOP (--eval-subset 0 for "
                  "the whole set)",
                  n, units, unit,
                  text ? " (evenly spaced)"
                       : fmt::format(" (class-stratified: an accuracy within +-{:.1f} points, 95 %)",
                                     100 * dataset_accuracy_ci95(0.5, static_cast<size_t>(n))),
                  whole_flop * 1e-9));
}

// The dataset's bytes and each feasible trial's (tune_jobs_for_memory).
void plan_memory(TunePlan& plan, const Workload& model) {
  plan.trial_memory_each.clear();
  plan.dataset_memory_bytes = 0;
  for (const Candidate& c : plan.space.feasible) {
    const RunConfig cfg = candidate_config(plan.spec, c, plan.spec.base.seed);
    const auto algorithm = algorithm_create(c.algo, cfg);
    const SimMemory m = sim_memory_estimate(cfg, plan.data->train, plan.data->test, plan.param_count,
                                            model.reserve_bytes(static_cast<size_t>(cfg.batch)), algorithm.get());
    plan.dataset_memory_bytes = m.dataset_bytes;
    plan.trial_memory_each.push_back(m.total_bytes - m.dataset_bytes);
  }
}

// A live session (not a replay of a stored grid): the configurations whose trial alone would
// not fit in MemAvailable are refused, as a run of them would be (sim: every worker in this
// process; on MPI the run's own check applies).
void plan_refuse_beyond_memory(TunePlan& plan) {
  const double available = memory_available_bytes();
  if (plan.backend == TrialBackend::trial_mpi || !(available > 0)) return;
  SpaceEnumeration kept;
  kept.refused = plan.space.refused;
  std::vector<double> kept_memory;
  for (size_t i = 0; i < plan.space.feasible.size(); ++i) {
    const double need = plan.dataset_memory_bytes + plan.trial_memory_each[i];
    if (need > available) {
      kept.refused.push_back(
          {plan.space.feasible[i], fmt::format("its {} simulated workers need about {:.3g} GB, more than the {:.3g} GB "
                                               "available (fewer --workers or a smaller --batch)",
                                               plan.spec.base.workers, need / 1e9, available / 1e9)});
      continue;
    }
    kept.feasible.push_back(plan.space.feasible[i]);
    kept.bytes_per_step.push_back(plan.space.bytes_per_step[i]);
    kept_memory.push_back(plan.trial_memory_each[i]);
  }
  const size_t dropped = plan.space.feasible.size() - kept.feasible.size();
  if (dropped > 0 && !kept.feasible.empty())
    plan.notes.push_back(fmt::format("{} configuration{} refused for memory (the last, {}: {})", dropped,
                                     dropped == 1 ? "" : "s", candidate_key(kept.refused.back().candidate),
                                     kept.refused.back().reason));
  plan.space = std::move(kept);
  plan.trial_memory_each = std::move(kept_memory);
}

// The model's size, for the bytes-per-step formula (the dataset is loaded once, shared by the
// plan), and the search space; throws when every configuration is refused or the target needs
// a test set the dataset lacks.
void plan_space(TunePlan& plan, bool live) {
  const TuneSpec& spec = plan.spec;
  const RunConfig& base = spec.base;
  const auto data = dataset_load_shared(base);
  plan.data = data;
  const std::unique_ptr<Workload> model = workload_create(base, data->train);
  plan.param_count = model->param_count();
  plan_eval_set(plan, model->flops_per_sample());
  plan.space = space_enumerate(spec, plan.param_count, data.get());
  plan_memory(plan, *model);
  if (live) plan_refuse_beyond_memory(plan);
  if (plan.space.feasible.empty()) {
    std::string why;
    for (size_t i = 0; i < plan.space.refused.size() && i < 4; ++i)
      why += fmt::format("; {}: {}", candidate_key(plan.space.refused[i].candidate), plan.space.refused[i].reason);
    DSGD_THROW(InputError, "relax the constraint or widen the search space",
               "every one of the {} configurations of the search space is refused{}{}", plan.space.refused.size(), why,
               plan.space.refused.size() > 4 ? fmt::format("; ... ({} more)", plan.space.refused.size() - 4) : "");
  }
  if (plan.target.metric == TargetMetric::target_test_acc && !(data->test.rows > 0))
    DSGD_THROW(InputError, "use a dataset with a test set",
               "--target {}: dataset '{}' has no test set to measure it on", base.target, base.dataset);
}

// R, the trial budget: --trial-time, a share of --budget, or at most kDefaultTrialTimeS from a
// pilot trial; with its note.
void plan_trial_time(TunePlan& plan) {
  const TuneSpec& spec = plan.spec;
  if (spec.trial_time_s > 0) {
    plan.trial_time_s = spec.trial_time_s;
    plan.notes.push_back(fmt::format("trial budget R = {} (--trial-time)", fmt_s(plan.trial_time_s)));
  } else if (spec.budget_s > 0) {
    plan.trial_time_s = spec.budget_s / kTrialShareOfBudget;
    plan.notes.push_back(
        fmt::format("trial budget R = budget / {:.0f} = {}", kTrialShareOfBudget, fmt_s(plan.trial_time_s)));
  } else {
    plan.trial_time_s = kDefaultTrialTimeS;
    plan.notes.push_back(
        fmt::format("trial budget R: from a pilot trial (at most {}; leaders it cannot tell apart are "
                    "re-measured at a finer R)",
                    fmt_s(plan.trial_time_s)));
  }
}

// The final race's trials beyond the first seed's (which is the last rung's): race_top x
// (race_seeds - 1).
double race_extra_trials(const TuneSpec& spec) {
  return static_cast<double>(spec.race_top * (spec.race_seeds - 1));
}

// What one configuration of the initial design costs through every rung at most: each rung's
// budget (capped at `cap`: adaptive capping, SearchState::capped) times the share of
// configurations that get there (1, 1/eta, 1/eta²), in trials and in evaluation seconds.
struct HalvingCost {
  double trials = 0, seconds = 0;
};
HalvingCost halving_cost_per_config(const TunePlan& plan, double cap = std::numeric_limits<double>::infinity()) {
  HalvingCost c;
  for (size_t i = 0; i < plan.rungs.size(); ++i) {
    const double share = 1.0 / std::pow(plan.spec.eta, static_cast<double>(i));
    c.trials += share;
    c.seconds += std::min(plan.rungs[i], cap) * share;
  }
  return c;
}

// The design: 3 rungs of R/eta², R/eta, R, the initial design n0 (less a quarter for the GP
// proposals) and the planned trial count. SH with 3 rungs costs at most n0 * R / eta (eta 3:
// each rung's budget times the share that gets there); the race adds race_top x (race_seeds - 1)
// trials (its first seed is the top rung's), set aside at R/eta each: they are capped at
// kRaceCap x the leaders' times, which successive halving has found within its rungs. What the
// first pass leaves goes to further passes (further_pass_size).
void plan_design(TunePlan& plan) {
  const TuneSpec& spec = plan.spec;
  const double eta = spec.eta;
  const double race_extra = race_extra_trials(spec);
  const int rungs = 3;
  for (int i = rungs - 1; i >= 0; --i) plan.rungs.push_back(plan.trial_time_s / std::pow(eta, i));
  const HalvingCost per_config = halving_cost_per_config(plan);
  double n0 = static_cast<double>(plan.space.feasible.size());
  if (spec.budget_s > 0)
    n0 = std::min(n0, std::floor((spec.budget_s - race_extra * plan.rungs[1]) / per_config.seconds));
  if (spec.trials > 0)
    n0 = std::min(n0, std::floor((static_cast<double>(spec.trials) - race_extra) / per_config.trials));
  n0 = std::max(n0,
                static_cast<double>(std::min<size_t>(plan.space.feasible.size(), static_cast<size_t>(spec.race_top))));
  plan.initial_design = static_cast<size_t>(n0);
  if (plan.initial_design < plan.space.feasible.size() && plan.initial_design >= 4) {
    // A quarter of the first rung for surrogate proposals once the design has been seen.
    plan.proposals = plan.initial_design / 4;
    plan.initial_design -= plan.proposals;
  }
  int64_t planned = 0;
  double alive = n0;
  for (int i = 0; i < rungs; ++i) {
    planned += static_cast<int64_t>(alive);
    alive = std::ceil(alive / eta);
  }
  plan.planned_trials = planned + static_cast<int64_t>(race_extra);
}

// The note describing the design: feasible and refused counts, the initial design, the
// proposals and the rungs.
void plan_design_note(TunePlan& plan) {
  const TuneSpec& spec = plan.spec;
  const double eta = spec.eta;
  plan.notes.push_back(fmt::format(
      "{} configurations feasible ({} refused by formula); initial design {} ({}{}); rungs {}",
      plan.space.feasible.size(), plan.space.refused.size(), plan.initial_design,
      plan.initial_design >= plan.space.feasible.size() ? "all of them"
      : spec.prior ? "the prior's best per algorithm and next best, a third space-filling"
                   : "seeded space-filling sample",
      plan.proposals > 0 ? fmt::format(", then {} proposed by GP + weighted EI after rung 0", plan.proposals)
                         : std::string(),
      spec.trial_time_s > 0 || spec.budget_s > 0 ? fmt::format("{:.4g} s", fmt::join(plan.rungs, " s, "))
                                                 : fmt::format("R/{:.0f}, R/{:.0f}, R", eta * eta, eta)));
}

}  // namespace

bool tune_objective_better(const TrialScore& a, const TrialScore& b) {
  return objective_better(a, b);
}

int tune_jobs_for_memory(TunePlan& plan, int jobs, bool given) {
  const double available = memory_available_bytes();
  double largest = 0;
  for (double m : plan.trial_memory_each) largest = std::max(largest, m);
  if (plan.backend == TrialBackend::trial_mpi || !(available > 0) || !(largest > 0)) return jobs;
  const double usable = 0.9 * available;
  const auto needs = [&](int k) { return plan.dataset_memory_bytes + k * largest; };
  if (needs(jobs) <= usable) return jobs;
  // Fewer than `jobs` (needs(jobs) is above usable), at least one.
  const int fit = std::max(1, static_cast<int>(std::floor((usable - plan.dataset_memory_bytes) / largest)));
  const std::string figures =
      fmt::format("the largest trial needs about {:.3g} GB beside the {:.3g} GB dataset; {:.3g} GB available",
                  largest / 1e9, plan.dataset_memory_bytes / 1e9, available / 1e9);
  if (given) {
    plan.notes.push_back(
        fmt::format("warning: --jobs {} may not fit in memory ({}): --jobs {} fits", jobs, figures, fit));
    return jobs;
  }
  plan.notes.push_back(fmt::format("{} trial{} at a time instead of {} (one per core): {}{}", fit, fit == 1 ? "" : "s",
                                   jobs, figures, needs(fit) > usable ? "; even one may not fit" : ""));
  return fit;
}

std::vector<int64_t> tune_missing_profiles(const TunePlan& plan, const Store& store) {
  if (plan.spec.base.profile_from > 0) return {};
  std::vector<int64_t> batches;
  for (const Candidate& c : plan.space.feasible) batches.push_back(c.batch);
  return compute_profile_missing(store, system_info_read().host, plan.spec.base, batches);
}

TunePlan tune_plan(const TuneSpec& spec, int64_t max_trial_steps, bool live) {
  TunePlan plan;
  plan.spec = spec;
  plan.max_trial_steps = max_trial_steps;
  plan_check_spec(spec, max_trial_steps, plan);
  plan_space(plan, live);
  plan_trial_time(plan);
  plan_design(plan);
  plan_design_note(plan);
  return plan;
}

namespace {

// What the search knows while it runs its phases: the plan, the runner and the result it
// fills, and each candidate's best standing so far.
struct SearchState {
  const TunePlan& plan;
  Runner& runner;
  TuneResult& result;
  const std::vector<Candidate>& all;
  uint64_t seed0;
  // Best standing per candidate: (rung index reached, its trial).
  std::map<size_t, std::pair<int, TrialRow>> standing;

  // The best time-to-target reached so far (+inf when none has reached the target).
  double incumbent_s() const {
    double t = std::numeric_limits<double>::infinity();
    for (const auto& [i, s] : standing)
      if (s.second.reached) t = std::min(t, s.second.time_s);
    return t;
  }
  // A trial's budget capped at kLeaderMargin x the incumbent (adaptive capping), at most `budget`.
  double capped(double budget) const { return std::min(budget, kLeaderMargin * incumbent_s()); }
  // No leader, not worth a longer trial: reached the target later than the cap, or censored at
  // or past it.
  bool dominated(const TrialRow& t) const {
    const double cap = kLeaderMargin * incumbent_s();
    return t.reached ? t.time_s > cap : t.budget_s >= cap * (1 - 1e-9);
  }

  // The censored order: a reached trial by its time whatever its rung (its time-to-target is
  // final: the same schedule at any budget), before every censored one; censored ones by the
  // longer budget, then the better progress; then the index.
  bool before(size_t a, size_t b) const {
    const TrialRow& ta = standing.at(a).second;
    const TrialRow& tb = standing.at(b).second;
    if (ta.reached != tb.reached) return ta.reached;
    if (!ta.reached && ta.budget_s != tb.budget_s) return ta.budget_s > tb.budget_s;
    const TrialScore x = score_of(ta), y = score_of(tb);
    if (tune_objective_better(x, y)) return true;
    if (tune_objective_better(y, x)) return false;
    return a < b;
  }
};

// Runs the `alive` candidates at rung `rung`'s budget; returns those that ran (the budget may
// stop it early).
std::vector<size_t> rung_run(SearchState& st, size_t rung, const std::vector<size_t>& alive) {
  const double budget = st.capped(st.plan.rungs[rung]);
  std::vector<size_t> ran;
  std::vector<TrialRequest> reqs;
  reqs.reserve(alive.size());
  for (size_t i : alive) reqs.push_back({st.all[i], st.seed0, budget, fmt::format("rung {}", rung)});
  const auto got = st.runner.trials(reqs, true);
  for (size_t k = 0; k < alive.size() && got[k]; ++k) {
    st.standing[alive[k]] = {static_cast<int>(rung), *got[k]};
    ran.push_back(alive[k]);
  }
  return ran;
}

// After rung 0: the GP + weighted EI proposals, run at rung 0's budget and added to `ran`.
void proposals_run(SearchState& st, std::vector<size_t>& ran) {
  const TunePlan& plan = st.plan;
  const double budget = plan.rungs[0];
  std::vector<std::pair<size_t, TrialScore>> observed;
  observed.reserve(ran.size());
  for (size_t i : ran) observed.emplace_back(i, score_of(st.standing.at(i).second));
  const std::set<size_t> tried(ran.begin(), ran.end());
  std::vector<Proposal> props;
  try {
    props = proposals_weighted_ei(st.all, observed, tried, plan.proposals, st.seed0, plan.prior_log_time);
  } catch (const Error& e) {
    st.result.notes.push_back(fmt::format("GP proposals skipped: {}", e.what()));
  }
  std::vector<std::string> names;
  std::vector<TrialRequest> reqs;
  reqs.reserve(props.size());
  for (const Proposal& p : props) reqs.push_back({st.all[p.index], st.seed0, budget, "rung 0 ei"});
  const auto got = st.runner.trials(reqs, true);
  for (size_t k = 0; k < props.size() && got[k]; ++k) {
    const Proposal& p = props[k];
    st.standing[p.index] = {0, *got[k]};
    ran.push_back(p.index);
    names.push_back(fmt::format("{} (P(reach) {:.2f}, predicted {:.3g} s)", candidate_key(st.all[p.index]), p.p_reach,
                                std::exp(p.mean_log_time)));
  }
  if (!names.empty())
    st.result.notes.push_back(fmt::format("GP + weighted EI after rung 0 proposed: {}", fmt::join(names, "; ")));
  else if (props.empty())
    st.result.notes.push_back("GP + weighted EI after rung 0: fewer than 2 trials reached the target, no proposals");
}

// successive_halving_promote: the best ceil(n/eta) of `ran` (sorted) in the censored order (and
// those within the plan's margin of the last of them: 0 on sim, where a trial is deterministic),
// and at least race_top so the final race has its candidates at the full budget; never one
// censored at or past the cap (SearchState::dominated).
std::vector<size_t> rung_promote(const SearchState& st, const std::vector<size_t>& ran) {
  const TuneSpec& spec = st.plan.spec;
  std::vector<RungEntry> entries;
  for (size_t i : ran) {
    const TrialScore sc = score_of(st.standing.at(i).second);
    entries.push_back({static_cast<int64_t>(i), sc.reached, sc.time_s, sc.progress});
  }
  std::vector<size_t> next;
  for (int64_t id : successive_halving_promote(entries, spec.eta, st.plan.promote_margin))
    if (!st.dominated(st.standing.at(static_cast<size_t>(id)).second)) next.push_back(static_cast<size_t>(id));
  for (size_t i : ran)
    if (next.size() < std::min<size_t>(ran.size(), static_cast<size_t>(spec.race_top)) &&
        std::find(next.begin(), next.end(), i) == next.end() && !st.dominated(st.standing.at(i).second))
      next.push_back(i);
  return next;
}

// Successive halving over the plan's rungs from `alive` (with the plan's proposals after rung 0
// when with_proposals), until the last rung or the budget.
void rungs_run(SearchState& st, std::vector<size_t> alive, bool with_proposals) {
  const TunePlan& plan = st.plan;
  for (size_t rung = 0; rung < plan.rungs.size() && !alive.empty(); ++rung) {
    std::vector<size_t> ran = rung_run(st, rung, alive);
    if (rung == 0 && with_proposals && plan.proposals > 0 && !st.runner.exhausted && ran.size() == alive.size()) {
      proposals_run(st, ran);
      alive = ran;
    }
    if (ran.size() < alive.size())
      st.result.notes.push_back(
          fmt::format("the budget ran out in rung {} after {} of {} configurations", rung, ran.size(), alive.size()));
    std::sort(ran.begin(), ran.end(), [&](size_t a, size_t b) { return st.before(a, b); });
    if (rung + 1 == plan.rungs.size() || st.runner.exhausted) break;
    alive = rung_promote(st, ran);
  }
}

// What the race is expected to cost, in evaluation seconds: race_top x (race_seeds - 1) trials,
// each about a leader's time-to-target (at most kLeaderMargin x the incumbent); R each while
// none has reached the target. A leader slower on the new seed costs up to kRaceCap x that: the
// race then runs out and says so.
double race_cost_estimate_s(const SearchState& st) {
  const TuneSpec& spec = st.plan.spec;
  const double each = std::min(st.plan.trial_time_s, kLeaderMargin * st.incumbent_s());
  return race_extra_trials(spec) * each;
}

// How many untried configurations one more pass of successive halving can take from what the
// budget has left once the race is set aside: capping and trials answered by shorter ones cost
// less than the plan's bound, which sized the first pass; 0 when the budget is spent.
size_t further_pass_size(const SearchState& st) {
  const TunePlan& plan = st.plan;
  const TuneSpec& spec = plan.spec;
  if (st.runner.exhausted || st.standing.size() >= st.all.size()) return 0;
  const HalvingCost per_config = halving_cost_per_config(plan, kLeaderMargin * st.incumbent_s());
  double n = static_cast<double>(st.all.size() - st.standing.size());
  if (spec.budget_s > 0)
    n = std::min(n, std::floor((spec.budget_s - st.result.used_s - race_cost_estimate_s(st)) / per_config.seconds));
  if (spec.trials > 0)
    n = std::min(n, std::floor((static_cast<double>(spec.trials - st.runner.trials_counted) - race_extra_trials(spec)) /
                               per_config.trials));
  return n >= 1 ? static_cast<size_t>(n) : 0;
}

// The next pass's configurations: GP + weighted EI over every trial so far (tuner/proposals.hpp),
// then untried ones in space-filling order when it proposes fewer (too few reached the target).
std::vector<size_t> further_pass_design(SearchState& st, size_t n, size_t pass) {
  std::vector<std::pair<size_t, TrialScore>> observed;
  std::set<size_t> tried;
  for (const auto& [i, s] : st.standing) {
    observed.emplace_back(i, score_of(s.second));
    tried.insert(i);
  }
  std::vector<size_t> next;
  try {
    for (const Proposal& p : proposals_weighted_ei(st.all, observed, tried, n, st.seed0 + pass, st.plan.prior_log_time))
      next.push_back(p.index);
  } catch (const Error&) {  // the GP could not be fitted: space-filling below
  }
  if (next.size() < n) {  // the points farthest from those tried and proposed
    std::vector<size_t> start(tried.begin(), tried.end());
    start.insert(start.end(), next.begin(), next.end());
    const size_t k = std::min(st.all.size(), start.size() + (n - next.size()));
    for (size_t i : space_fill_sample(st.all, k, st.seed0 + pass, start))
      if (next.size() < n && !tried.count(i) && std::find(next.begin(), next.end(), i) == next.end()) next.push_back(i);
  }
  return next;
}

// Successive halving from the initial design, then further passes while the budget left allows
// (each from the proposals of everything seen), keeping the race's share.
void passes_run(SearchState& st) {
  const TunePlan& plan = st.plan;
  const TuneSpec& spec = plan.spec;
  rungs_run(st,
            plan.prior_log_time.empty()
                ? space_fill_sample(st.all, plan.initial_design, spec.base.seed)
                : prior_design(st.all, plan.prior_log_time, plan.initial_design, spec.base.seed),
            true);
  size_t more = 0;
  for (size_t pass = 1; (more = further_pass_size(st)) > 0; ++pass) {
    const std::vector<size_t> design = further_pass_design(st, more, pass);
    if (design.empty()) break;
    st.result.notes.push_back(fmt::format("budget left after pass {}: a further pass of {} configuration{}", pass,
                                          design.size(), design.size() == 1 ? "" : "s"));
    rungs_run(st, design, false);
  }
}

// The race's leaders: of the first race_top of `ranked`, those that reached the target within
// kLeaderMargin of the best, and the runner-up when it reached it too (the best's first seed may
// have been a lucky one); all of the first race_top when none reached it.
std::vector<size_t> race_leaders(const SearchState& st, const std::vector<size_t>& ranked) {
  const size_t top = std::min<size_t>(ranked.size(), static_cast<size_t>(st.plan.spec.race_top));
  const double best = st.incumbent_s();
  std::vector<size_t> leaders;
  for (size_t k = 0; k < top; ++k) {
    const TrialRow& t = st.standing.at(ranked[k]).second;
    if (!std::isfinite(best) || (t.reached && (k < 2 || t.time_s <= kLeaderMargin * best)))
      leaders.push_back(ranked[k]);
  }
  return leaders;
}

// Final race: the leaders (race_leaders) over race_seeds seeds, seed by seed, as one list of
// independent trials: on the first seed at R (answered by the trial each has), on a new seed
// capped; every seed's dataset held meanwhile (one copy for all of them unless the dataset is
// generated from the seed). Returns each raced candidate's trials.
std::map<size_t, std::vector<TrialRow>> race_run(SearchState& st, const std::vector<size_t>& leaders,
                                                 const std::shared_ptr<const DatasetPair>& data) {
  const TuneSpec& spec = st.plan.spec;
  const double R = st.plan.trial_time_s;
  std::map<size_t, std::vector<TrialRow>> race;
  st.runner.exhausted = false;                                      // the race may use what successive halving left
  std::vector<std::shared_ptr<const DatasetPair>> seed_data{data};  // empty against an evaluator
  std::vector<TrialRequest> reqs;
  std::vector<size_t> which;
  // On a new seed, capped at kRaceCap x the slowest leader's first time (R when one has not
  // reached the target).
  double slowest = 0;
  for (size_t i : leaders)
    slowest = std::max(slowest, st.standing.at(i).second.reached ? st.standing.at(i).second.time_s : R);
  const double new_seed_budget = std::min(R, kRaceCap * slowest);
  for (int64_t s = 0; s < spec.race_seeds; ++s) {
    RunConfig seeded = spec.base;
    seeded.seed = st.seed0 + static_cast<uint64_t>(s);
    if (s > 0 && st.runner.serial) st.runner.serial->begin_seed(seeded.seed);
    if (s > 0 && !st.runner.serial) seed_data.push_back(dataset_load_shared(seeded));
    for (size_t i : leaders) {
      reqs.push_back({st.all[i], seeded.seed, s == 0 ? R : new_seed_budget, "race"});
      which.push_back(i);
    }
  }
  const auto got = st.runner.trials(reqs, false);
  for (size_t k = 0; k < reqs.size(); ++k)
    if (got[k]) race[which[k]].push_back(*got[k]);
  return race;
}

// The ranking: raced configurations by median, then the others by their best standing.
void ranking_make(SearchState& st, const std::vector<size_t>& ranked,
                  const std::map<size_t, std::vector<TrialRow>>& race) {
  const TunePlan& plan = st.plan;
  TuneResult& result = st.result;
  for (size_t k = 0; k < ranked.size(); ++k) {
    const size_t i = ranked[k];
    auto it = race.find(i);
    if (it != race.end() && !it->second.empty())
      result.ranking.push_back(ranked_make(plan, st.all[i], it->second, plan.trial_time_s, true));
    else
      result.ranking.push_back(
          ranked_make(plan, st.all[i], {st.standing.at(i).second}, st.standing.at(i).second.budget_s, false));
  }
  // Raced first; then a reached time-to-target whatever its budget (it is final), before the
  // censored ones, which go by the longer budget.
  std::stable_sort(result.ranking.begin(), result.ranking.end(), [&](const RankedConfig& a, const RankedConfig& b) {
    if (a.raced != b.raced) return a.raced;
    if (a.median.reached != b.median.reached) return a.median.reached;
    if (!a.median.reached && a.fidelity_s != b.fidelity_s) return a.fidelity_s > b.fidelity_s;
    return tune_objective_better(a.median, b.median);
  });
}

// Still limited (R given by --trial-time, the budget spent, or no finer R possible): say so.
void note_resolution_limit(TuneResult& result) {
  if (const double interval = resolution_limit_s(result); interval > 0) {
    const RankedConfig& w = result.ranking.front();
    result.notes.push_back(fmt::format(
        "resolution: the winner reached the target at its evaluation {} (one every {:.3g} s of virtual time); "
        "configurations reaching it sooner are not told apart: rerun with --trial-time {:.3g}s for a finer "
        "measurement",
        static_cast<int64_t>(std::llround(w.median.time_s / interval)), interval,
        std::max(w.median.time_s * 10, 1e-3)));
  }
}

// The search (successive halving, GP proposals, the final race, the ranking and the verdict)
// through `runner`: the live pool or an evaluator. `data`: the base seed's dataset, held (null
// against an evaluator).
void search(const TunePlan& plan, Runner& runner, TuneResult& result, const std::shared_ptr<const DatasetPair>& data) {
  SearchState st{plan, runner, result, plan.space.feasible, plan.spec.base.seed, {}};
  passes_run(st);
  std::vector<size_t> ranked;
  ranked.reserve(st.standing.size());
  for (const auto& [i, s] : st.standing) ranked.push_back(i);
  std::sort(ranked.begin(), ranked.end(), [&](size_t a, size_t b) { return st.before(a, b); });
  const auto race = race_run(st, race_leaders(st, ranked), data);
  if (runner.exhausted) result.notes.push_back("the budget ran out during the final race: some seeds are missing");
  ranking_make(st, ranked, race);
  verdict_make(plan, result);
  refine_resolution(plan, runner, result);
  note_resolution_limit(result);
}

}  // namespace

namespace {

void note_leftovers(const TrialPool& pool, TuneResult& result) {
  if (pool.leftovers_removed() > 0)
    result.notes.push_back(fmt::format(
        "removed {} private trial database{} that a killed earlier run of this session left in the temporary "
        "directory",
        pool.leftovers_removed(), pool.leftovers_removed() == 1 ? "" : "s"));
}

}  // namespace

double tune_profiles_measure(const TunePlan& plan, Store& store, int64_t session_id, std::vector<std::string>& notes) {
  const TuneSpec& spec = plan.spec;
  const ComputeProfileFill fill = compute_profile_fill_missing(store, spec.base, plan.missing_profiles,
                                                               fmt::format("dsgd-tune session {}", session_id));
  if (!fill.batches.empty())
    notes.push_back(fmt::format(
        "no compute profile of {} on {} for batch {} on this host: measured it ({} iterations, {:.2g} s) and "
        "stored it as calibration {}",
        workload_profile_key(spec.base), spec.base.dataset, fmt::join(fill.batches, ", "), fill.iters, fill.wall_s,
        fill.calibration_id));
  return fill.wall_s;
}

TuneResult tune_run(const TunePlan& plan, Store& store, int64_t session_id,
                    const std::function<void(const TuneProgress&)>& progress) {
  TuneResult result;
  result.session_id = session_id;
  const TuneSpec& spec = plan.spec;
  // Held: every trial of this seed shares it (tune_plan loaded it; the same copy).
  const auto data = plan.data ? plan.data : dataset_load_shared(spec.base);

  if (!plan.missing_profiles.empty())
    result.profile_wall_s = tune_profiles_measure(plan, store, session_id, result.notes);
  if (backend_get(spec.base.backend).has(cap_virtual_clock) && spec.base.profile_from <= 0) {
    std::vector<int64_t> batches;
    for (const Candidate& c : plan.space.feasible) batches.push_back(c.batch);
    result.profile_warnings = compute_profile_warnings_stored(store, system_info_read().host, spec.base, batches);
  }

  // The theory prior (--prior on): its probe run once per session (stored; --resume reads it),
  // its cost charged to the budget like a trial's.
  TunePlan searched = plan;
  if (spec.prior) {
    std::optional<PriorProbe> probe = prior_probe_load(store, session_id);
    try {
      if (!probe) {
        probe = prior_probe_run(plan, store, spec.base.seed);
        prior_probe_store(store, session_id, *probe);
        result.probe_wall_s = probe->wall_s;
      } else {
        result.notes.push_back("prior: the probe stored with the session (not run again)");
      }
      const TunePrior prior = prior_build(plan, store, *probe);
      searched.prior_log_time = prior.log_time;
      result.probe_s = probe->cost_s;
      result.used_s += probe->cost_s;
      for (const std::string& n : prior_describe(plan, prior)) result.notes.push_back(n);
    } catch (const Error& e) {  // the probe's synchronous run failed: search without the prior
      result.notes.push_back(fmt::format("prior skipped (the search goes on without it): {}", e.what()));
    }
  }

  TrialPool pool(store, std::max(1, plan.jobs), session_id);  // after the profiles: the slots copy them
  note_leftovers(pool, result);
  Runner runner{searched, &store, session_id, progress, result, &pool, nullptr, {}, {}, {}, {}};
  for (const TrialRow& t : tune_trials_get(store, session_id)) runner.stored[t.trial_key] = t;
  const TunePlan piloted = pilot_trial_time(searched, runner, result);
  Runner search_runner = runner_at(piloted, runner);
  result.trial_time_s = piloted.trial_time_s;
  result.rungs_s = piloted.rungs;

  search(piloted, search_runner, result, data);
  result.busy_wall_s = pool.busy_s();
  result.jobs = pool.jobs();
  std::vector<ExplainRanked> explain_ranking;
  for (const RankedConfig& rc : result.ranking)
    explain_ranking.push_back({rc.candidate, rc.representative, rc.bytes_per_step, rc.raced});
  std::vector<TrialRow> session_trials;
  for (const auto& [key, t] : search_runner.stored) session_trials.push_back(t);
  result.explanation = tune_explain(spec, plan.space.feasible, explain_ranking, session_trials);
  return result;
}

std::vector<TrialRow> tune_trials_run(const TunePlan& plan, Store& store, int64_t session_id,
                                      const std::vector<TuneTrialRequest>& requests,
                                      const std::function<void(const TuneProgress&)>& progress, TuneResult& result) {
  TrialPool pool(store, std::max(1, plan.jobs), session_id);
  note_leftovers(pool, result);
  Runner runner{plan, &store, session_id, progress, result, &pool, nullptr, {}, {}, {}, {}};
  for (const TrialRow& t : tune_trials_get(store, session_id)) runner.stored[t.trial_key] = t;
  std::vector<TrialRequest> reqs;
  reqs.reserve(requests.size());
  for (const TuneTrialRequest& r : requests) reqs.push_back({r.candidate, r.seed, r.budget_s, r.phase});
  std::vector<TrialRow> out;
  for (const auto& t : runner.trials(reqs, false))
    if (t) out.push_back(*t);
  result.busy_wall_s += pool.busy_s();
  result.jobs = pool.jobs();
  return out;
}

void tune_search(const TunePlan& plan, TrialEvaluator& eval, const std::vector<TrialRow>& stored,
                 const std::function<void(const TuneProgress&)>& progress, TuneResult& result) {
  Runner runner{plan, nullptr, 0, progress, result, nullptr, &eval, {}, {}, {}, {}};
  for (const TrialRow& t : stored) runner.stored[t.trial_key] = t;
  search(plan, runner, result, nullptr);
}

nlohmann::json tune_result_json(const TunePlan& plan, const TuneResult& result) {
  nlohmann::json ranking = nlohmann::json::array();
  for (size_t k = 0; k < result.ranking.size(); ++k) {
    const RankedConfig& rc = result.ranking[k];
    nlohmann::json seeds = nlohmann::json::array();
    for (const TrialRow& t : rc.trials)
      seeds.push_back({{"seed", t.seed},
                       {"run_id", t.run_id},
                       {"reached", t.reached},
                       {"time_s", t.time_s},
                       {"stop_reason", t.stop_reason}});
    const TrialRow& t = rc.representative;
    ranking.push_back({{"rank", k + 1},
                       {"config", rc.key},
                       {"algo", rc.candidate.algo},
                       {"period", rc.candidate.period},
                       {"batch", rc.candidate.batch},
                       {"topology", rc.candidate.topology},
                       {"lr_scaling", rc.candidate.lr_scaling},
                       {"raced", rc.raced},
                       {"fidelity_s", rc.fidelity_s},
                       {"reached", rc.median.reached},
                       {"time_to_target_s", rc.median.reached ? nlohmann::json(rc.median.time_s) : nlohmann::json()},
                       {"censored_at_s", rc.median.reached ? nlohmann::json() : nlohmann::json(rc.median.time_s)},
                       {"spread_s", {rc.spread_lo, rc.spread_hi}},
                       {"spread_censored", rc.spread_censored},
                       {"step_s", t.step_s},
                       {"compute_s", t.compute_s},
                       {"comm_s", t.comm_s},
                       {"wait_s", t.wait_s},
                       {"bytes_per_step", t.bytes_per_step},
                       {"bytes_per_step_formula", rc.bytes_per_step},
                       {"run_id", t.run_id},
                       {"seeds", seeds}});
  }
  nlohmann::json refused = nlohmann::json::array();
  for (const Refusal& r : plan.space.refused)
    refused.push_back({{"config", candidate_key(r.candidate)}, {"reason", r.reason}});
  return {{"session", result.session_id},
          {"target", target_format(plan.target)},
          {"budget_s", plan.spec.budget_s},
          {"trials_max", plan.spec.trials},
          {"trial_time_s", result.trial_time_s > 0 ? result.trial_time_s : plan.trial_time_s},
          {"rungs_s", result.rungs_s.empty() ? plan.rungs : result.rungs_s},
          {"initial_design", plan.initial_design},
          {"feasible", plan.space.feasible.size()},
          {"used_s", result.used_s},
          {"trials_run", result.trials_run},
          {"trials_resumed", result.trials_resumed},
          {"trials_reused", result.trials_reused},
          {"trials_dropped", result.trials_dropped},
          {"backend", plan.spec.base.backend},
          {"verdict", result.verdict},
          {"top_two_overlap", result.top_two_overlap},
          {"notes", result.notes},
          {"profile_warnings", result.profile_warnings},
          {"network_warnings", result.network_warnings},
          {"ranking", ranking},
          {"explanation", explain_json(result.explanation)},
          {"refused", refused}};
}

}  // namespace dsgd
