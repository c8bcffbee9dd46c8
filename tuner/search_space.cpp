// See search_space.hpp.
#include "tuner/search_space.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "algorithms/algorithm.hpp"
#include "algorithms/compress/compressor.hpp"
#include "algorithms/config_check.hpp"
#include "algorithms/optimizer.hpp"
#include "algorithms/period_schedule.hpp"
#include "algorithms/variant.hpp"
#include "cluster/network_model.hpp"
#include "core/errors.hpp"
#include "core/rng.hpp"
#include "core/text.hpp"
#include "engine/memory_estimate.hpp"

namespace dsgd {

namespace {

int64_t parse_int(const std::string& flag, const std::string& text, const std::string& whole) {
  size_t used = 0;
  int64_t v = 0;
  try {
    v = std::stoll(text, &used);
  } catch (...) {
    used = 0;
  }
  if (used == 0 || used != text.size() || v < 1)
    DSGD_THROW(InputError, fmt::format("pass {} as MIN..MAX (powers of 2 between) or a list, e.g. 1..64 or 4,16", flag),
               "{} '{}': '{}' is not a positive integer", flag, whole, text);
  return v;
}

}  // namespace

bool tune_algo_is_gossip(const std::string& algo) {
  const Variant* v = variant_find(algo);
  return v && v->gossip_every_step;
}

bool tune_algo_has_period_schedule(const std::string& algo) {
  const Variant* v = variant_find(algo);
  if (!v) return false;
  return std::any_of(v->flags.begin(), v->flags.end(),
                     [](const VariantFlag& f) { return std::string(f.key) == "period-schedule"; });
}

std::vector<std::string> tune_parse_period_schedules(const std::string& text) {
  std::vector<std::string> out = tune_parse_list("--period-schedules", text);
  for (const std::string& s : out) {
    try {
      period_schedule_kind(s);
    } catch (const InputError&) {
      DSGD_THROW(InputError, "available: constant, qsr, adacomm (localsgd's --period-schedule)",
                 "--period-schedules: unknown schedule '{}'", s);
    }
  }
  return out;
}

std::vector<int64_t> tune_parse_int_space(const std::string& flag, const std::string& text) {
  const std::string t = text_trim(text);
  std::vector<int64_t> out;
  const size_t dots = t.find("..");
  if (dots != std::string::npos) {
    const int64_t lo = parse_int(flag, text_trim(t.substr(0, dots)), text);
    const int64_t hi = parse_int(flag, text_trim(t.substr(dots + 2)), text);
    if (lo > hi)
      DSGD_THROW(InputError, fmt::format("pass {} as MIN..MAX with MIN <= MAX", flag), "{} '{}': {} is above {}", flag,
                 text, lo, hi);
    int64_t p = 1;
    while (p < lo) p *= 2;
    for (; p <= hi; p *= 2) out.push_back(p);
    if (out.empty())
      DSGD_THROW(InputError, fmt::format("widen {} to include a power of 2", flag),
                 "{} '{}': no power of 2 in the range: the search space is empty", flag, text);
    return out;
  }
  for (const std::string& item : tune_parse_list(flag, t)) {
    const int64_t v = parse_int(flag, item, text);
    if (std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
  }
  return out;
}

std::vector<std::string> tune_parse_list(const std::string& flag, const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  const std::string t = text_trim(text);
  if (t.empty())
    DSGD_THROW(InputError, fmt::format("pass at least one value to {}", flag), "{} is empty: the search space is empty",
               flag);
  while (start <= t.size()) {
    const size_t comma = t.find(',', start);
    const std::string item = text_trim(t.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (item.empty())
      DSGD_THROW(InputError, fmt::format("separate the values of {} by single commas", flag), "{} '{}': empty item",
                 flag, text);
    if (std::find(out.begin(), out.end(), item) == out.end()) out.push_back(item);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

double tune_parse_duration(const std::string& flag, const std::string& text) {
  const std::string t = text_trim(text);
  const std::string hint =
      fmt::format("pass {} as a duration: 300s, 5min, 1h (virtual seconds of the simulated cluster)", flag);
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(t, &used);
  } catch (...) {
    DSGD_THROW(InputError, hint, "{} '{}' is not a duration", flag, text);
  }
  const std::string unit = text_trim(t.substr(used));
  double scale = 0;
  if (unit.empty() || unit == "s")
    scale = 1;
  else if (unit == "ms")
    scale = 1e-3;
  else if (unit == "min" || unit == "m")
    scale = 60;
  else if (unit == "h")
    scale = 3600;
  else
    DSGD_THROW(InputError, hint, "{} '{}': unknown unit '{}'", flag, text, unit);
  const double s = v * scale;
  if (!std::isfinite(s) || s <= 0)
    DSGD_THROW(InputError, hint, "{} '{}': the budget must be positive (got {} s)", flag, text, s);
  return s;
}

double tune_parse_bytes(const std::string& flag, const std::string& text) {
  const std::string t = text_trim(text);
  const std::string hint = fmt::format("pass {} as bytes with an optional unit: 1e6, 500kB, 64MB, 1MiB", flag);
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(t, &used);
  } catch (...) {
    DSGD_THROW(InputError, hint, "{} '{}' is not a size", flag, text);
  }
  const std::string unit = text_trim(t.substr(used));
  struct U {
    const char* name;
    double bytes;
  };
  static const U units[] = {{"", 1},     {"B", 1},        {"kB", 1e3},        {"KB", 1e3},          {"MB", 1e6},
                            {"GB", 1e9}, {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}};
  for (const U& u : units)
    if (unit == u.name) {
      const double b = v * u.bytes;
      if (!std::isfinite(b) || b <= 0) DSGD_THROW(InputError, hint, "{} '{}': must be positive", flag, text);
      return b;
    }
  DSGD_THROW(InputError, hint, "{} '{}': unknown unit '{}'", flag, text, unit);
}

nlohmann::json tune_spec_to_json(const TuneSpec& s) {
  return {{"base", run_config_to_json(s.base)},
          {"algos", s.algos},
          {"periods", s.periods},
          {"batches", s.batches},
          {"topologies", s.topologies},
          {"lr-scalings", s.lr_scalings},
          {"period-schedules", s.period_schedules},
          {"budget-s", s.budget_s},
          {"trials", s.trials},
          {"trial-time-s", s.trial_time_s},
          {"max-bytes-per-step", s.max_bytes_per_step},
          {"compressors", s.compressors},
          {"max-memory", s.max_memory_bytes},
          {"race-top", s.race_top},
          {"race-seeds", s.race_seeds},
          {"eta", s.eta},
          {"prior", s.prior}};
}

TuneSpec tune_spec_from_json(const nlohmann::json& j) {
  TuneSpec s;
  run_config_apply_json(s.base, j.at("base"), "the stored session");
  s.algos = j.at("algos").get<std::vector<std::string>>();
  s.periods = j.at("periods").get<std::vector<int64_t>>();
  s.batches = j.at("batches").get<std::vector<int64_t>>();
  s.topologies = j.at("topologies").get<std::vector<std::string>>();
  s.lr_scalings = j.at("lr-scalings").get<std::vector<std::string>>();
  // Sessions stored before the schedules searched the constant one.
  s.period_schedules = j.value("period-schedules", std::vector<std::string>{"constant"});
  s.budget_s = j.at("budget-s").get<double>();
  s.trials = j.at("trials").get<int64_t>();
  s.trial_time_s = j.at("trial-time-s").get<double>();
  s.max_bytes_per_step = j.at("max-bytes-per-step").get<double>();
  // Sessions stored before these knobs searched no compression and had no memory constraint.
  s.compressors = j.value("compressors", std::vector<std::string>{""});
  s.max_memory_bytes = j.value("max-memory", 0.0);
  s.race_top = j.at("race-top").get<int64_t>();
  s.race_seeds = j.at("race-seeds").get<int64_t>();
  s.eta = j.at("eta").get<double>();
  s.prior = j.value("prior", false);  // sessions stored before the prior searched without it
  return s;
}

std::string candidate_key(const Candidate& c) {
  std::string k = c.algo;
  if (c.period > 0) k += fmt::format(" H={}", c.period);
  if (!c.period_schedule.empty()) k += " " + c.period_schedule;
  if (!c.topology.empty()) k += " " + c.topology;
  k += fmt::format(" b={} lr={}", c.batch, c.lr_scaling);
  if (!c.compress.empty()) k += " c=" + c.compress;
  return k;
}

RunConfig candidate_config(const TuneSpec& spec, const Candidate& c, uint64_t seed) {
  RunConfig cfg = spec.base;
  cfg.given_keys.clear();  // built in code: knobs of another algorithm are refused only off their default
  cfg.algo = c.algo;
  if (c.period > 0)
    cfg.period = c.period;
  else
    cfg.period = RunConfig{}.period;
  cfg.batch = c.batch;
  if (!c.topology.empty()) cfg.topology = c.topology;
  cfg.lr_scaling = c.lr_scaling;
  cfg.compress = c.compress;
  cfg.period_schedule = c.period_schedule.empty() ? RunConfig{}.period_schedule : c.period_schedule;
  cfg.qsr_alpha = RunConfig{}.qsr_alpha;
  if (c.period_schedule == "qsr") {
    // α = η·√H: (α/η)² = H at the candidate's (scaled) rate, the optimizer's (optimizer_create).
    const double lr =
        lr_scaled(optimizer_base_lr(cfg), cfg.lr_scaling, cfg.batch, static_cast<int>(cfg.workers), cfg.lr_base_batch);
    cfg.qsr_alpha = lr * std::sqrt(static_cast<double>(c.period));
  }
  cfg.seed = seed;
  cfg.backend = "sim";
  return cfg;
}

std::vector<std::string> tune_parse_compressors(const std::string& text) {
  std::vector<std::string> out;
  for (const std::string& item : tune_parse_list("--compress", text)) {
    const std::string spec = item == "none" ? std::string() : item;
    if (!spec.empty()) compressor_create(spec);  // throws InputError naming --compress
    if (std::find(out.begin(), out.end(), spec) == out.end()) out.push_back(spec);
  }
  return out;
}

namespace {

// The checks of the search space's flags before enumerating it.
void space_spec_check(const TuneSpec& spec, const DatasetPair* data) {
  if (spec.max_memory_bytes > 0 && !data)
    DSGD_THROW(Error, "this is a bug", "space_enumerate: --max-memory needs the dataset");
  if (spec.compressors.empty())
    DSGD_THROW(InputError, "pass e.g. --compress none,topk:0.01", "--compress is empty: the search space is empty");
  if (spec.algos.empty())
    DSGD_THROW(InputError, "pass e.g. --algos ssgd,localsgd", "--algos is empty: the search space is empty");
  std::vector<std::string> names;
  for (const Variant* v : variant_all()) names.push_back(v->name);
  for (const std::string& a : spec.algos)
    if (!variant_find(a))
      DSGD_THROW(InputError, fmt::format("pick from: {}", fmt::join(names, ", ")), "--algos: unknown algorithm '{}'",
                 a);
  if (spec.batches.empty() || spec.lr_scalings.empty())
    DSGD_THROW(InputError, "pass at least one batch and one --lr-scaling rule", "the search space is empty");
}

// The axes of one algorithm's part of the space: those of knobs it does not have are one empty
// value ("" or period 0).
struct AlgoAxes {
  std::vector<int64_t> periods;
  std::vector<std::string> topologies;
  std::vector<std::string> compressors;
  std::vector<std::string> schedules;
};

AlgoAxes algo_axes(const TuneSpec& spec, const std::string& algo) {
  std::vector<int64_t> periods = variant_uses_period(algo) ? spec.periods : std::vector<int64_t>{0};
  std::vector<std::string> topologies = tune_algo_is_gossip(algo) ? spec.topologies : std::vector<std::string>{""};
  if (periods.empty() || topologies.empty())
    DSGD_THROW(InputError,
               fmt::format("pass at least one value of {} for {}", periods.empty() ? "--period" : "--topologies", algo),
               "the search space of {} is empty", algo);
  const std::vector<std::string> compressors =
      variant_uses_compress(algo) ? spec.compressors : std::vector<std::string>{""};
  std::vector<std::string> schedules{""};
  if (tune_algo_has_period_schedule(algo)) {
    schedules.clear();
    for (const std::string& name : spec.period_schedules) schedules.push_back(name == "constant" ? "" : name);
  }
  if (schedules.empty())
    DSGD_THROW(InputError, fmt::format("pass at least one value of --period-schedules for {}", algo),
               "the search space of {} is empty", algo);
  return {std::move(periods), std::move(topologies), compressors, std::move(schedules)};
}

// Candidate c into out.feasible (with its bytes per step), or into out.refused with the reason:
// qsr under a constant lr schedule, an invalid configuration, above --max-bytes-per-step or
// above --max-memory. n: the workers; param_bytes: the model's size.
void candidate_place(const TuneSpec& spec, const Candidate& c, size_t param_count, double param_bytes, int n,
                     const DatasetPair* data, SpaceEnumeration& out) {
  const RunConfig cfg = candidate_config(spec, c, spec.base.seed);
  if (c.period_schedule == "qsr" && cfg.lr_schedule == "constant") {
    out.refused.push_back({c, fmt::format("qsr under --lr-schedule constant is the constant schedule at H={} (alpha = "
                                          "lr*sqrt(H)): pass --lr-schedule cosine or step to search it",
                                          c.period)});
    return;
  }
  try {
    config_validate(cfg);
  } catch (const InputError& e) {
    out.refused.push_back({c, e.what()});
    return;
  }
  const auto algorithm = algorithm_create(c.algo, cfg);
  // With a compressor: what the compressor sends (its own formula per call).
  const double bytes = algorithm->bytes_sent_per_step(param_bytes, n);
  if (spec.max_bytes_per_step > 0 && bytes > spec.max_bytes_per_step) {
    out.refused.push_back({c, fmt::format("sends {:.4g} bytes per step per worker, above --max-bytes-per-step {:.4g}",
                                          bytes, spec.max_bytes_per_step)});
    return;
  }
  if (spec.max_memory_bytes > 0) {
    const MemoryEstimate m = memory_estimate(cfg, data->train, data->test, param_count, -1, algorithm.get(), 1, 1);
    if (m.total_bytes > spec.max_memory_bytes) {
      out.refused.push_back(
          {c, fmt::format("needs about {:.4g} MB per worker ({:.4g} MB of model copies and algorithm "
                          "state, {:.4g} MB of batch, {:.4g} MB of dataset), above --max-memory {:.4g} MB",
                          m.total_bytes / 1e6, m.replicas_bytes / 1e6, m.batch_bytes / 1e6, m.dataset_bytes / 1e6,
                          spec.max_memory_bytes / 1e6)});
      return;
    }
  }
  out.feasible.push_back(c);
  out.bytes_per_step.push_back(bytes);
}

}  // namespace

SpaceEnumeration space_enumerate(const TuneSpec& spec, size_t param_count, const DatasetPair* data) {
  space_spec_check(spec, data);
  SpaceEnumeration out;
  const int n = static_cast<int>(spec.base.workers);
  const double param_bytes = static_cast<double>(param_count) * sizeof(float);
  for (const std::string& algo : spec.algos) {
    const AlgoAxes axes = algo_axes(spec, algo);
    for (const std::string& sched : axes.schedules)
      for (int64_t h : axes.periods)
        for (const std::string& topo : axes.topologies)
          for (int64_t b : spec.batches)
            for (const std::string& rule : spec.lr_scalings)
              for (const std::string& comp : axes.compressors) {
                Candidate c{algo, h, b, topo, rule, comp, sched};
                candidate_place(spec, c, param_count, param_bytes, n, data, out);
              }
  }
  return out;
}

std::vector<size_t> space_fill_sample(const std::vector<Candidate>& cands, size_t k, uint64_t seed,
                                      const std::vector<size_t>& start) {
  std::vector<size_t> all(cands.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  if (k >= cands.size()) return all;
  // Scaled coordinates: log2 of H and batch over their ranges in the space; categories apart.
  auto range = [&](auto get) {
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    for (const Candidate& c : cands) {
      const double v = get(c);
      if (v > 0) {
        lo = std::min(lo, std::log2(v));
        hi = std::max(hi, std::log2(v));
      }
    }
    return std::pair<double, double>(lo, hi);
  };
  const auto hr = range([](const Candidate& c) { return static_cast<double>(c.period); });
  const auto br = range([](const Candidate& c) { return static_cast<double>(c.batch); });
  auto scaled = [](double v, std::pair<double, double> r) {
    if (v <= 0 || !(r.second > r.first)) return 0.0;
    return (std::log2(v) - r.first) / (r.second - r.first);
  };
  auto distance = [&](const Candidate& a, const Candidate& b) {
    double d = 0;
    d += a.algo == b.algo ? 0.0 : 1.0;
    d += a.topology == b.topology ? 0.0 : 0.5;
    d += a.lr_scaling == b.lr_scaling ? 0.0 : 0.5;
    d += a.compress == b.compress ? 0.0 : 0.5;
    d += a.period_schedule == b.period_schedule ? 0.0 : 0.5;
    const double dh = scaled(static_cast<double>(a.period), hr) - scaled(static_cast<double>(b.period), hr);
    const double db = scaled(static_cast<double>(a.batch), br) - scaled(static_cast<double>(b.batch), br);
    return d + dh * dh + db * db;
  };
  Rng rng(rng_derive_seed(seed, 0x7E5A));
  std::vector<size_t> order = all;
  for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng.below(i)]);
  std::vector<size_t> chosen = start.empty() ? std::vector<size_t>{order[0]} : start;
  std::vector<double> nearest(cands.size(), std::numeric_limits<double>::infinity());
  for (size_t j = 0; j + 1 < chosen.size(); ++j)
    for (size_t i : order) nearest[i] = std::min(nearest[i], distance(cands[i], cands[chosen[j]]));
  while (chosen.size() < k) {
    const size_t last = chosen.back();
    size_t best = cands.size();
    double best_d = -1;
    for (size_t i : order) {
      nearest[i] = std::min(nearest[i], distance(cands[i], cands[last]));
      if (std::find(chosen.begin(), chosen.end(), i) != chosen.end()) continue;
      if (nearest[i] > best_d) {
        best_d = nearest[i];
        best = i;
      }
    }
    chosen.push_back(best);
  }
  return chosen;
}

}  // namespace dsgd
