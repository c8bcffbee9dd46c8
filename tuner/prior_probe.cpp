// See prior_probe.hpp.
#include "tuner/prior_probe.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "algorithms/optimizer.hpp"
#include "algorithms/variant.hpp"
#include "cluster/topology.hpp"
#include "core/clock.hpp"
#include "core/errors.hpp"
#include "core/rng.hpp"
#include "engine/shared_dataset.hpp"
#include "engine/sim_run.hpp"
#include "tuner/recommend.hpp"

namespace dsgd {

namespace {

// Thrown from the evaluation callback to end a probe run at its target.
struct ProbeStop {};

// A probe run: on the simulator, the ideal link, no stragglers, no target (its callback stops it).
RunConfig probe_config(const TuneSpec& spec, const Candidate& c, uint64_t seed) {
  RunConfig cfg = candidate_config(spec, c, seed);
  cfg.backend = "sim";  // on the simulator whatever the trials' backend: steps do not depend on it
  prior_probe_ideal_link(cfg);
  cfg.straggler.clear();
  cfg.target.clear();
  cfg.timing_only = false;
  return cfg;
}

double gap_of(const std::string& topology, int64_t workers, uint64_t seed) {
  return topology_make(topology, static_cast<int>(workers), seed).spectral_gap;
}

struct RunOutcome {
  bool reached = false;
  int64_t steps = 0;
  double virtual_s = 0, wall_s = 0;
  std::vector<float> params;
};

// cfg for `steps` steps (evaluations every `every`), stopped at the target when `target` is set.
RunOutcome probe_train(RunConfig cfg, int64_t steps, int64_t every, const Target* target, const Store& read) {
  cfg.steps = steps;
  cfg.eval_every = std::min(every, steps);
  RunOutcome out;
  TrainerCallbacks cb;
  cb.on_eval = [&](const EvalRow& row) {
    out.steps = row.step;
    out.virtual_s = row.time_s;
    if (target && target_reached(*target, row)) {
      out.reached = true;
      throw ProbeStop{};
    }
  };
  const double t0 = clock_now_s();
  try {
    TrainResult r = sim_run_unstored(cfg, read, cb);
    out.params = std::move(r.final_params);
  } catch (const ProbeStop&) {
  }
  out.wall_s = clock_now_s() - t0;
  return out;
}

}  // namespace

void prior_probe_ideal_link(RunConfig& cfg) {
  cfg.bandwidth = "10Tbps";
  cfg.latency.clear();
  cfg.inter_bandwidth.clear();
  cfg.inter_latency.clear();
  cfg.link_efficiency = "1";
}

std::vector<ProbePoint> prior_probe_points(const TunePlan& plan) {
  const TuneSpec& spec = plan.spec;
  const std::vector<Candidate>& space = plan.space.feasible;
  int64_t b_min = std::numeric_limits<int64_t>::max(), b_max = 0, h_max = 1;
  for (const Candidate& c : space) {
    b_min = std::min(b_min, c.batch);
    b_max = std::max(b_max, c.batch);
    h_max = std::max(h_max, c.period);
  }
  const std::string rule = spec.lr_scalings.empty() ? std::string("none") : spec.lr_scalings.front();
  const auto workers = static_cast<int>(spec.base.workers);
  // The rate the probe run trains with: its optimizer's base rate (--lr, or the default when
  // --lr is not given) scaled by the rule.
  auto lr_of = [&](const Candidate& c) {
    return lr_scaled(optimizer_base_lr(candidate_config(spec, c, spec.base.seed)), rule, c.batch, workers,
                     spec.base.lr_base_batch);
  };
  std::vector<ProbePoint> points;
  auto add = [&](const std::string& role, Candidate c) {
    c.lr_scaling = rule;
    ProbePoint p;
    p.role = role;
    p.candidate = c;
    p.lr = lr_of(c);
    if (!c.topology.empty()) p.spectral_gap = gap_of(c.topology, spec.base.workers, spec.base.seed);
    points.push_back(p);
  };
  add("sync", Candidate{"ssgd", 0, b_min, "", rule, ""});
  if (b_max > b_min) add("sync-batch", Candidate{"ssgd", 0, b_max, "", rule, ""});
  std::vector<std::string> seen;
  for (const Candidate& c : space) {
    if (std::find(seen.begin(), seen.end(), c.algo) != seen.end()) continue;
    seen.push_back(c.algo);
    if (variant_uses_period(c.algo) && h_max > 1) {
      int64_t h = 1;
      for (const Candidate& d : space)
        if (d.algo == c.algo) h = std::max(h, d.period);
      if (h > 1) add("period", Candidate{c.algo, h, b_min, "", rule, ""});
    } else if (tune_algo_is_gossip(c.algo)) {
      std::string sparsest;
      double gap = std::numeric_limits<double>::infinity();
      for (const Candidate& d : space)
        if (d.algo == c.algo && !d.topology.empty()) {
          const double g = gap_of(d.topology, spec.base.workers, spec.base.seed);
          if (g < gap) {
            gap = g;
            sparsest = d.topology;
          }
        }
      if (!sparsest.empty() && gap < 1 - 1e-12) add("gossip", Candidate{c.algo, 0, b_min, sparsest, rule, ""});
    }
  }
  return points;
}

void prior_noise_measure(Workload& w, const Dataset& train, const std::vector<float>& params, int64_t workers,
                         int64_t batch, int draws, uint64_t seed, NoiseScaleAccumulator& acc) {
  const auto n = static_cast<size_t>(workers * batch);
  if (workers < 1 || batch < 1 || n > train.rows || params.size() != w.param_count())
    DSGD_THROW(Error, "", "noise probe: {} workers x batch {} from {} samples, {} parameters (model has {})", workers,
               batch, train.rows, params.size(), w.param_count());
  const size_t count = w.param_count();
  std::vector<float> grad(count);
  std::vector<double> mean(count);
  std::vector<uint32_t> idx(train.rows);
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<uint32_t>(i);
  w.reserve(static_cast<size_t>(batch));
  Rng rng(rng_derive_seed(seed, 0x6e6f6973u));
  for (int d = 0; d < draws; ++d) {
    // A partial Fisher-Yates shuffle: the first n indices are a uniform sample without replacement.
    for (size_t i = 0; i < n; ++i) std::swap(idx[i], idx[i + rng.below(idx.size() - i)]);
    std::fill(mean.begin(), mean.end(), 0.0);
    double small = 0;
    for (int64_t k = 0; k < workers; ++k) {
      w.load_batch(train, idx.data() + k * batch, static_cast<size_t>(batch));
      w.forward(params.data());
      w.backward(params.data(), grad.data(), LayerHook{});
      double sq = 0;
      for (size_t j = 0; j < count; ++j) {
        sq += static_cast<double>(grad[j]) * grad[j];
        mean[j] += grad[j];
      }
      small += sq;
    }
    double big = 0;
    for (size_t j = 0; j < count; ++j) {
      const double m = mean[j] / static_cast<double>(workers);
      big += m * m;
    }
    acc.add(static_cast<double>(batch), small / static_cast<double>(workers), static_cast<double>(workers * batch),
            big);
  }
}

PriorProbe prior_probe_run(const TunePlan& plan, const Store& read, uint64_t seed, int64_t max_steps) {
  const double t0 = clock_now_s();
  PriorProbe probe;
  probe.workers = plan.spec.base.workers;
  probe.seed = seed;
  probe.max_steps = max_steps;
  probe.points = prior_probe_points(plan);
  for (ProbePoint& p : probe.points) {
    const RunConfig cfg = probe_config(plan.spec, p.candidate, seed);
    RunOutcome o;
    try {
      o = probe_train(cfg, max_steps, kProbeEvalEvery, &plan.target, read);
    } catch (const std::exception& e) {
      if (p.role == "sync")
        DSGD_THROW(Error, "", "the prior's probe run {} failed: {}", candidate_key(p.candidate), e.what());
      o.steps = 0;  // a configuration that cannot run: no constant from it
    }
    p.reached = o.reached;
    p.steps = o.reached ? o.steps : max_steps;
    p.virtual_s = o.virtual_s;
    p.wall_s = o.wall_s;
    if (o.steps == 0 && !o.reached) p.steps = 0;
    probe.cost_s += o.virtual_s;
  }

  // The noise scale along the sync run's trajectory: at 0, S/2 and S steps.
  const ProbePoint& sync = probe.points.front();
  const RunConfig cfg = probe_config(plan.spec, sync.candidate, seed);
  const auto data = dataset_load_shared(cfg);
  std::unique_ptr<Workload> w = workload_create(cfg, data->train);
  std::vector<float> params(w->param_count());
  w->init_params(params.data(), cfg.seed);
  probe.noise_batch = sync.candidate.batch;
  const int64_t workers = std::min<int64_t>(
      plan.spec.base.workers, static_cast<int64_t>(data->train.rows) / std::max<int64_t>(1, sync.candidate.batch));
  NoiseScaleAccumulator acc;
  std::vector<int64_t> at{0};
  const int64_t s = std::max<int64_t>(2, sync.steps);
  at.push_back(s / 2);
  at.push_back(s);
  for (size_t k = 0; k < at.size(); ++k) {
    if (at[k] > 0) {
      const RunOutcome o = probe_train(cfg, at[k], at[k], nullptr, read);
      probe.cost_s += o.virtual_s;
      params = o.params;
    }
    NoiseScaleAccumulator here;
    prior_noise_measure(*w, data->train, params, workers, sync.candidate.batch, kProbeNoiseDraws,
                        rng_derive_seed(seed, static_cast<uint64_t>(k)), here);
    const NoiseScaleEstimate e = here.estimate();
    acc.add_estimate(e, here.count());
    probe.noise_at_steps.push_back(at[k]);
    probe.noise_at.push_back(e);
  }
  probe.noise_draws = acc.count();
  probe.noise = acc.estimate();
  probe.wall_s = clock_now_s() - t0;
  return probe;
}

nlohmann::json prior_probe_to_json(const PriorProbe& p) {
  nlohmann::json points = nlohmann::json::array();
  for (const ProbePoint& q : p.points)
    points.push_back({{"role", q.role},
                      {"algo", q.candidate.algo},
                      {"period", q.candidate.period},
                      {"batch", q.candidate.batch},
                      {"topology", q.candidate.topology},
                      {"lr_scaling", q.candidate.lr_scaling},
                      {"reached", q.reached},
                      {"steps", q.steps},
                      {"lr", q.lr},
                      {"spectral_gap", q.spectral_gap},
                      {"virtual_s", q.virtual_s},
                      {"wall_s", q.wall_s}});
  nlohmann::json noise_at = nlohmann::json::array();
  for (const NoiseScaleEstimate& e : p.noise_at) noise_at.push_back({e.grad_sq, e.trace_sigma});
  return {{"workers", p.workers},         {"seed", p.seed},
          {"max_steps", p.max_steps},     {"points", points},
          {"noise_batch", p.noise_batch}, {"noise_at_steps", p.noise_at_steps},
          {"noise_at", noise_at},         {"noise_draws", p.noise_draws},
          {"grad_sq", p.noise.grad_sq},   {"trace_sigma", p.noise.trace_sigma},
          {"cost_s", p.cost_s},           {"wall_s", p.wall_s}};
}

PriorProbe prior_probe_from_json(const nlohmann::json& j) {
  PriorProbe p;
  p.workers = j.at("workers").get<int64_t>();
  p.seed = j.at("seed").get<uint64_t>();
  p.max_steps = j.at("max_steps").get<int64_t>();
  for (const auto& q : j.at("points")) {
    ProbePoint pt;
    pt.role = q.at("role").get<std::string>();
    pt.candidate = Candidate{q.at("algo").get<std::string>(),       q.at("period").get<int64_t>(),
                             q.at("batch").get<int64_t>(),          q.at("topology").get<std::string>(),
                             q.at("lr_scaling").get<std::string>(), ""};
    pt.reached = q.at("reached").get<bool>();
    pt.steps = q.at("steps").get<int64_t>();
    pt.lr = q.at("lr").get<double>();
    pt.spectral_gap = q.at("spectral_gap").get<double>();
    pt.virtual_s = q.at("virtual_s").get<double>();
    pt.wall_s = q.at("wall_s").get<double>();
    p.points.push_back(pt);
  }
  p.noise_batch = j.at("noise_batch").get<int64_t>();
  p.noise_at_steps = j.at("noise_at_steps").get<std::vector<int64_t>>();
  p.noise_draws = j.at("noise_draws").get<int64_t>();
  p.noise = noise_scale_from_estimators(j.at("grad_sq").get<double>(), j.at("trace_sigma").get<double>());
  for (const auto& e : j.at("noise_at"))
    p.noise_at.push_back(noise_scale_from_estimators(e.at(0).get<double>(), e.at(1).get<double>()));
  p.cost_s = j.at("cost_s").get<double>();
  p.wall_s = j.at("wall_s").get<double>();
  return p;
}

std::vector<std::string> prior_probe_describe(const PriorProbe& p) {
  std::vector<std::string> out;
  for (const ProbePoint& q : p.points)
    out.push_back(fmt::format(
        "probe {} ({}): {} in {} steps (lr {:.4g}{})", candidate_key(q.candidate), q.role,
        q.reached ? "reached the target" : "not reached",
        q.reached ? fmt::format("{}", q.steps) : fmt::format(">= {}", q.steps), q.lr,
        q.candidate.topology.empty() ? std::string() : fmt::format(", spectral gap {:.3g}", q.spectral_gap)));
  std::vector<std::string> at;
  for (size_t k = 0; k < p.noise_at.size() && k < p.noise_at_steps.size(); ++k)
    at.push_back(fmt::format("step {}: {:.4g}/{:.4g} = {}", p.noise_at_steps[k], p.noise_at[k].trace_sigma,
                             p.noise_at[k].grad_sq,
                             p.noise_at[k].valid ? fmt::format("{:.4g}", p.noise_at[k].b_simple) : "not positive"));
  out.push_back(fmt::format(
      "probe gradient noise scale B_simple = tr(Sigma)/|G|^2 (per-worker batch {} against {} workers' average, {} "
      "draws each): {}",
      p.noise_batch, p.workers, kProbeNoiseDraws, fmt::join(at, "; ")));
  out.push_back(fmt::format("probe cost: {:.4g} s of evaluation (simulated) time, {:.1f} s real", p.cost_s, p.wall_s));
  return out;
}

}  // namespace dsgd
