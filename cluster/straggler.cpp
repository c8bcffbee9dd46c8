// See straggler.hpp.
#include "cluster/straggler.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>

#include "cluster/network_model.hpp"
#include "core/errors.hpp"
#include "core/rng.hpp"
#include "core/text.hpp"

namespace dsgd {

namespace {

constexpr const char* kForms =
    "fixed:rank=R,delay=20ms | fixed:rank=R,factor=2 | random:p=0.05,delay=30ms | lognormal:sigma=0.3 | "
    "pareto:alpha=2,scale=5ms | periodic:rank=R,every=50,delay=200ms (';' between several)";

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    const size_t pos = text.find(sep, start);
    out.push_back(text.substr(start, pos - start));
    if (pos == std::string::npos) break;
    start = pos + 1;
  }
  return out;
}

double parse_number(const std::string& text, const std::string& what) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(v))
    DSGD_THROW(InputError, kForms, "--straggler: {} = '{}' is not a number", what, text);
  return v;
}

// Durations are parsed by the one parser the cluster flags share (--latency too).
double parse_delay(const std::string& text, const std::string& what) {
  return network_parse_duration(text_trim(text), what.c_str(), kStragglerMaxDelayS);
}

// A number in [lo, hi] (a whole one when `whole`), else InputError naming the range.
double parse_bounded(const std::string& text, const std::string& what, double lo, double hi, bool whole,
                     const char* hint) {
  const double v = parse_number(text, what);
  if (v < lo || v > hi || (whole && v != std::floor(v)))
    DSGD_THROW(InputError, hint, "{} = {} must be {} in [{:g}, {:g}]", what, text,
               whole ? "a whole number" : "a number", lo, hi);
  return v;
}

// One model's key=value parameters (`part`: the model's text), taken one by one; what is
// left over is unknown.
struct ModelParams {
  std::string part;
  std::map<std::string, std::string> kv;

  std::optional<std::string> take(const char* key) {
    auto it = kv.find(key);
    if (it == kv.end()) return std::nullopt;
    std::string v = it->second;
    kv.erase(it);
    return v;
  }
  std::string need(const char* key) {
    auto v = take(key);
    if (!v) DSGD_THROW(InputError, kForms, "--straggler '{}': missing {}=", part, key);
    return *v;
  }
  std::string what(const char* key) const { return fmt::format("--straggler '{}': {}", part, key); }
};

// The key=value list after the colon (none without one).
ModelParams params_split(const std::string& part, size_t colon) {
  ModelParams p;
  p.part = part;
  if (colon != std::string::npos) {
    for (const std::string& item : split(part.substr(colon + 1), ',')) {
      const size_t eq = item.find('=');
      if (eq == std::string::npos)
        DSGD_THROW(InputError, kForms, "--straggler '{}': '{}' is not key=value", part, item);
      p.kv[text_trim(item.substr(0, eq))] = text_trim(item.substr(eq + 1));
    }
  }
  return p;
}

void rank_parse(ModelParams& p, int workers, StragglerModel& m) {
  if (auto r = p.take("rank")) {
    const double v = parse_number(*r, "rank");
    if (v != std::floor(v) || v < 0 || v >= workers)
      DSGD_THROW(InputError, fmt::format("ranks are 0..{}", workers - 1),
                 "--straggler '{}': rank {} is out of range for {} workers", p.part, *r, workers);
    m.rank = static_cast<int>(v);
  }
}

// fixed:rank=R,delay=D | fixed:rank=R,factor=F
void fixed_parse(ModelParams& p, StragglerModel& m) {
  m.kind = StragglerKind::straggler_fixed;
  if (m.rank < 0) DSGD_THROW(InputError, kForms, "--straggler '{}': fixed needs rank=", p.part);
  auto delay = p.take("delay");
  auto factor = p.take("factor");
  if (delay.has_value() == factor.has_value())
    DSGD_THROW(InputError, kForms, "--straggler '{}': fixed takes exactly one of delay= and factor=", p.part);
  if (delay) m.delay_s = parse_delay(*delay, p.what("delay"));
  if (factor) {
    m.factor = parse_number(*factor, "factor");
    if (m.factor < 1)
      DSGD_THROW(InputError, "a slowdown factor is >= 1", "{} = {} is below 1", p.what("factor"), *factor);
    m.factor =
        parse_bounded(*factor, p.what("factor"), 1, kStragglerMaxFactor, false, "a slowdown factor is from 1 to 1000");
  }
}

// random:p=P,delay=D
void random_parse(ModelParams& p, StragglerModel& m) {
  m.kind = StragglerKind::straggler_random;
  m.p = parse_number(p.need("p"), "p");
  if (!(m.p >= 0 && m.p <= 1))
    DSGD_THROW(InputError, "p is a probability in [0, 1]", "{} is out of range", p.what("p"));
  m.delay_s = parse_delay(p.need("delay"), p.what("delay"));
}

// lognormal:sigma=S
void lognormal_parse(ModelParams& p, StragglerModel& m) {
  m.kind = StragglerKind::straggler_lognormal;
  const std::string sigma = p.need("sigma");
  m.sigma = parse_number(sigma, "sigma");
  if (!(m.sigma > 0)) DSGD_THROW(InputError, "sigma must be > 0", "{} must be positive", p.what("sigma"));
  m.sigma = parse_bounded(sigma, p.what("sigma"), 0, kStragglerMaxSigma, false, "sigma is in (0, 4]");
}

// pareto:alpha=A,scale=D
void pareto_parse(ModelParams& p, StragglerModel& m) {
  m.kind = StragglerKind::straggler_pareto;
  const std::string alpha = p.need("alpha");
  m.alpha = parse_number(alpha, "alpha");
  if (!(m.alpha > 0)) DSGD_THROW(InputError, "alpha must be > 0", "{} must be positive", p.what("alpha"));
  m.alpha = parse_bounded(alpha, p.what("alpha"), kStragglerMinAlpha, 1e3, false,
                          "alpha is in [0.5, 1000] (below 1 the mean delay is infinite)");
  m.scale_s = parse_delay(p.need("scale"), p.what("scale"));
}

// periodic:rank=R,every=N[,offset=K],delay=D
void periodic_parse(ModelParams& p, StragglerModel& m) {
  m.kind = StragglerKind::straggler_periodic;
  if (m.rank < 0) DSGD_THROW(InputError, kForms, "--straggler '{}': periodic needs rank=", p.part);
  const double every = parse_number(p.need("every"), "every");
  if (every < 1 || every != std::floor(every))
    DSGD_THROW(InputError, "every is a whole number of steps >= 1", "{} = {} is invalid", p.what("every"), every);
  if (every > 1e9)
    DSGD_THROW(InputError, "every is a whole number of steps from 1 to 1e9", "{} = {} is invalid", p.what("every"),
               every);
  m.every = static_cast<int64_t>(every);
  if (auto o = p.take("offset"))
    m.offset = static_cast<int64_t>(parse_bounded(*o, p.what("offset"), 0, 1e9, true, "offset is a step, 0..1e9"));
  m.delay_s = parse_delay(p.need("delay"), p.what("delay"));
}

// One model of the spec ("kind:key=value,...").
StragglerModel model_parse(const std::string& part, int workers) {
  const size_t colon = part.find(':');
  const std::string kind = part.substr(0, colon);
  ModelParams p = params_split(part, colon);
  StragglerModel m;
  rank_parse(p, workers, m);
  if (kind == "fixed") {
    fixed_parse(p, m);
  } else if (kind == "random") {
    random_parse(p, m);
  } else if (kind == "lognormal") {
    lognormal_parse(p, m);
  } else if (kind == "pareto") {
    pareto_parse(p, m);
  } else if (kind == "periodic") {
    periodic_parse(p, m);
  } else {
    DSGD_THROW(InputError, kForms, "--straggler: unknown model '{}'", kind);
  }
  if (!p.kv.empty())
    DSGD_THROW(InputError, kForms, "--straggler '{}': unknown parameter '{}'", part, p.kv.begin()->first);
  return m;
}

}  // namespace

Stragglers Stragglers::parse(const std::string& spec, int workers, uint64_t seed) {
  Stragglers out;
  out.seed_ = seed;
  if (text_trim(spec).empty()) return out;
  for (const std::string& raw : split(spec, ';')) {
    const std::string part = text_trim(raw);
    if (part.empty()) continue;
    out.models_.push_back(model_parse(part, workers));
  }
  return out;
}

void Stragglers::set_jitter(ComputeJitter jitter) {
  double lowest = INFINITY;
  for (const std::vector<double>& f : jitter.factors) {
    bool ok = f.size() >= (jitter.in_step_order ? 1 : 2);
    for (size_t i = 0; ok && i < f.size(); ++i)
      ok = std::isfinite(f[i]) && f[i] >= 1.0 && (jitter.in_step_order || i == 0 || f[i] >= f[i - 1]);
    if (!ok)
      DSGD_THROW(Error, "this is a bug", "compute jitter: each rank's factors must be finite, at least 1{}",
                 jitter.in_step_order ? "" : ", ascending and at least 2");
    lowest = std::min(lowest, *std::min_element(f.begin(), f.end()));
  }
  if (!jitter.factors.empty() && lowest != 1.0)
    DSGD_THROW(Error, "this is a bug", "compute jitter: the lowest factor of all ranks must be 1, got {}", lowest);
  jitter_ = std::move(jitter);
}

double Stragglers::jitter_s(int rank, int64_t step, double compute_s) const {
  if (jitter_.empty()) return 0.0;
  const std::vector<double>& f = jitter_.factors[static_cast<size_t>(rank) % jitter_.factors.size()];
  const auto k_all = static_cast<int64_t>(f.size());
  size_t k = 0;
  if (jitter_.in_step_order) {
    k = static_cast<size_t>(((step - jitter_.first_step) % k_all + k_all) % k_all);
  } else {
    Rng rng(rng_derive_seed(seed_, 0x717E, static_cast<uint64_t>(rank), static_cast<uint64_t>(step)));
    k = std::min(static_cast<size_t>(rng.uniform() * static_cast<double>(f.size())), f.size() - 1);
  }
  return (f[k] - 1.0) * compute_s;
}

double Stragglers::delay_s(int rank, int64_t step, double compute_s, bool with_fixed, double* jitter_part) const {
  double total = jitter_s(rank, step, compute_s);
  if (jitter_part) *jitter_part = total;
  for (size_t i = 0; i < models_.size(); ++i) {
    const StragglerModel& m = models_[i];
    if (m.rank >= 0 && m.rank != rank) continue;
    Rng rng(rng_derive_seed(seed_, 0x57A6 + i, static_cast<uint64_t>(rank), static_cast<uint64_t>(step)));
    switch (m.kind) {
      case StragglerKind::straggler_fixed:
        total += (with_fixed ? m.delay_s : 0.0) + (m.factor - 1.0) * compute_s;
        break;
      case StragglerKind::straggler_random:
        if (with_fixed && rng.uniform() < m.p) total += m.delay_s;
        break;
      case StragglerKind::straggler_lognormal:
        // Draws are truncated at kStragglerMaxDelayS: the far tail would stall the run for days.
        total += std::min(kStragglerMaxDelayS, std::max(0.0, std::exp(m.sigma * rng.normal()) - 1.0) * compute_s);
        break;
      case StragglerKind::straggler_pareto: {
        if (!with_fixed) break;
        const double u = 1.0 - rng.uniform();  // (0, 1]
        total += std::min(kStragglerMaxDelayS, m.scale_s * (std::pow(u, -1.0 / m.alpha) - 1.0));
        break;
      }
      case StragglerKind::straggler_periodic:
        if (with_fixed && ((step - m.offset) % m.every + m.every) % m.every == 0) total += m.delay_s;
        break;
    }
  }
  return total;
}

}  // namespace dsgd
