// The HTML report's axis scales (see html_scale.hpp).
#include "results/html_scale.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "results/html_report.hpp"

namespace dsgd {

bool html_range_spans_decades(double lo, double hi) {
  return std::isfinite(lo) && std::isfinite(hi) && lo > 0 && hi > 10 * lo;
}

double HtmlAxisScale::fraction(double v) const {
  if (log) {
    if (!(v > 0)) return 0;
    return (std::log10(v) - std::log10(lo)) / (std::log10(hi) - std::log10(lo));
  }
  return (v - lo) / (hi - lo);
}

namespace {

HtmlAxisScale log_scale(double lo, double hi) {
  HtmlAxisScale s;
  s.log = true;
  const double first = std::floor(std::log10(lo) + 1e-9), last = std::ceil(std::log10(hi) - 1e-9);
  s.lo = std::pow(10.0, first);
  s.hi = std::pow(10.0, last);
  const double decades = last - first;
  // Few decades: 1, 2, 5 per decade; many: every decade, or every k-th over very many.
  const int every = decades > 8 ? static_cast<int>(std::ceil(decades / 8)) : 1;
  for (int e = static_cast<int>(first); e <= static_cast<int>(last); e += every) {
    const double base = std::pow(10.0, e);
    s.ticks.push_back(base);
    if (decades <= 3 && e < static_cast<int>(last)) {
      s.ticks.push_back(2 * base);
      s.ticks.push_back(5 * base);
    }
  }
  return s;
}

}  // namespace

HtmlAxisScale html_axis_scale(double lo, double hi, int count, bool allow_log, bool from_zero) {
  if (!std::isfinite(lo) || !std::isfinite(hi) || lo > hi) {
    lo = 0;
    hi = 1;
  }
  if (allow_log && html_range_spans_decades(lo, hi)) return log_scale(lo, hi);
  HtmlAxisScale s;
  if (from_zero) lo = std::min(lo, 0.0);
  if (hi - lo <= 1e-9 * std::max(std::fabs(lo), std::fabs(hi))) {  // one value (up to rounding)
    const double pad = lo == 0 ? 1 : std::fabs(lo) * 0.05;
    lo -= pad;
    hi += pad;
  }
  std::vector<double> ticks = html_axis_ticks(lo, hi, count);
  if (ticks.size() >= 2) {
    const double step = ticks[1] - ticks[0];
    lo = std::floor(lo / step + 1e-9) * step;
    hi = std::ceil(hi / step - 1e-9) * step;
    ticks = html_axis_ticks(lo, hi, count);
  }
  s.lo = lo;
  s.hi = hi;
  s.ticks = std::move(ticks);
  return s;
}

namespace {

// The divisor and suffix for values up to `magnitude`: 1 below 10,000.
std::pair<double, const char*> compact_unit(double magnitude) {
  if (magnitude >= 1e10) return {1e9, "G"};
  if (magnitude >= 1e7) return {1e6, "M"};
  if (magnitude >= 1e4) return {1e3, "k"};
  return {1, ""};
}

}  // namespace

std::vector<std::string> html_tick_texts(const std::vector<double>& ticks) {
  double magnitude = 0, smallest = std::numeric_limits<double>::infinity();
  for (double t : ticks) {
    magnitude = std::max(magnitude, std::fabs(t));
    if (t != 0) smallest = std::min(smallest, std::fabs(t));
  }
  // A suffix only when every tick but 0 is a whole count of it (not 1e-06k on a log axis).
  const auto unit = compact_unit(magnitude);
  const auto [divisor, suffix] = smallest >= unit.first ? unit : std::pair<double, const char*>{1, ""};
  std::vector<std::string> texts(ticks.size());
  // At least the integer digits of the largest ("20M", not "2e+01M").
  const int integer_digits =
      magnitude / divisor >= 1 ? static_cast<int>(std::floor(std::log10(magnitude / divisor))) + 1 : 1;
  for (int digits = std::min(integer_digits, 8); digits <= 8; ++digits) {
    for (size_t i = 0; i < ticks.size(); ++i)
      texts[i] = std::fabs(ticks[i]) < 1e-300 ? "0" : fmt::format("{:.{}g}{}", ticks[i] / divisor, digits, suffix);
    bool distinct = true;
    for (size_t i = 1; i < texts.size(); ++i) distinct &= texts[i] != texts[i - 1];
    if (distinct) break;
  }
  return texts;
}

std::string html_compact_text(double v) {
  if (!std::isfinite(v)) return "";
  const auto [divisor, suffix] = compact_unit(std::fabs(v));
  return fmt::format("{:.4g}{}", v / divisor, suffix);
}

}  // namespace dsgd
