// See straggler.hpp.
#include "cluster/straggler.hpp"

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

}  // namespace

Stragglers Stragglers::parse(const std::string& spec, int workers, uint64_t seed) {
  Stragglers out;
  out.seed_ = seed;
  if (text_trim(spec).empty()) return out;
  for (const std::string& raw : split(spec, ';')) {
    const std::string part = text_trim(raw);
    if (part.empty()) continue;
    const size_t colon = part.find(':');
    const std::string kind = part.substr(0, colon);
    std::map<std::string, std::string> kv;
    if (colon != std::string::npos) {
      for (const std::string& item : split(part.substr(colon + 1), ',')) {
        const size_t eq = item.find('=');
        if (eq == std::string::npos)
          DSGD_THROW(InputError, kForms, "--straggler '{}': '{}' is not key=value", part, item);
        kv[text_trim(item.substr(0, eq))] = text_trim(item.substr(eq + 1));
      }
    }
    StragglerModel m;
    auto take = [&](const char* key) -> std::optional<std::string> {
      auto it = kv.find(key);
      if (it == kv.end()) return std::nullopt;
      std::string v = it->second;
      kv.erase(it);
      return v;
    };
    auto need = [&](const char* key) {
      auto v = take(key);
      if (!v) DSGD_THROW(InputError, kForms, "--straggler '{}': missing {}=", part, key);
      return *v;
    };
    auto what = [&](const char* key) { return fmt::format("--straggler '{}': {}", part, key); };
    if (auto r = take("rank")) {
      const double v = parse_number(*r, "rank");
      if (v != std::floor(v) || v < 0 || v >= workers)
        DSGD_THROW(InputError, fmt::format("ranks are 0..{}", workers - 1),
                   "--straggler '{}': rank {} is out of range for {} workers", part, *r, workers);
      m.rank = static_cast<int>(v);
    }
    if (kind == "fixed") {
      m.kind = StragglerKind::straggler_fixed;
      if (m.rank < 0) DSGD_THROW(InputError, kForms, "--straggler '{}': fixed needs rank=", part);
      auto delay = take("delay");
      auto factor = take("factor");
      if (delay.has_value() == factor.has_value())
        DSGD_THROW(InputError, kForms, "--straggler '{}': fixed takes exactly one of delay= and factor=", part);
      if (delay) m.delay_s = parse_delay(*delay, what("delay"));
      if (factor) {
        m.factor = parse_number(*factor, "factor");
        if (m.factor < 1)
          DSGD_THROW(InputError, "a slowdown factor is >= 1", "{} = {} is below 1", what("factor"), *factor);
        m.factor = parse_bounded(*factor, what("factor"), 1, kStragglerMaxFactor, false,
                                 "a slowdown factor is from 1 to 1000");
      }
    } else if (kind == "random") {
      m.kind = StragglerKind::straggler_random;
      m.p = parse_number(need("p"), "p");
      if (!(m.p >= 0 && m.p <= 1))
        DSGD_THROW(InputError, "p is a probability in [0, 1]", "{} is out of range", what("p"));
      m.delay_s = parse_delay(need("delay"), what("delay"));
    } else if (kind == "lognormal") {
      m.kind = StragglerKind::straggler_lognormal;
      const std::string sigma = need("sigma");
      m.sigma = parse_number(sigma, "sigma");
      if (!(m.sigma > 0)) DSGD_THROW(InputError, "sigma must be > 0", "{} must be positive", what("sigma"));
      m.sigma = parse_bounded(sigma, what("sigma"), 0, kStragglerMaxSigma, false, "sigma is in (0, 4]");
    } else if (kind == "pareto") {
      m.kind = StragglerKind::straggler_pareto;
      const std::string alpha = need("alpha");
      m.alpha = parse_number(alpha, "alpha");
      if (!(m.alpha > 0)) DSGD_THROW(InputError, "alpha must be > 0", "{} must be positive", what("alpha"));
      m.alpha = parse_bounded(alpha, what("alpha"), kStragglerMinAlpha, 1e3, false,
                              "alpha is in [0.5, 1000] (below 1 the mean delay is infinite)");
      m.scale_s = parse_delay(need("scale"), what("scale"));
    } else if (kind == "periodic") {
      m.kind = StragglerKind::straggler_periodic;
      if (m.rank < 0) DSGD_THROW(InputError, kForms, "--straggler '{}': periodic needs rank=", part);
      const double every = parse_number(need("every"), "every");
      if (every < 1 || every != std::floor(every))
        DSGD_THROW(InputError, "every is a whole number of steps >= 1", "{} = {} is invalid", what("every"), every);
      if (every > 1e9)
        DSGD_THROW(InputError, "every is a whole number of steps from 1 to 1e9", "{} = {} is invalid", what("every"),
                   every);
      m.every = static_cast<int64_t>(every);
      if (auto o = take("offset"))
        m.offset = static_cast<int64_t>(parse_bounded(*o, what("offset"), 0, 1e9, true, "offset is a step, 0..1e9"));
      m.delay_s = parse_delay(need("delay"), what("delay"));
    } else {
      DSGD_THROW(InputError, kForms, "--straggler: unknown model '{}'", kind);
    }
    if (!kv.empty())
      DSGD_THROW(InputError, kForms, "--straggler '{}': unknown parameter '{}'", part, kv.begin()->first);
    out.models_.push_back(m);
  }
  return out;
}

double Stragglers::delay_s(int rank, int64_t step, double compute_s, bool with_fixed) const {
  double total = 0;
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
