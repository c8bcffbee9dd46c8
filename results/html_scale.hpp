// An axis of the HTML report's charts: linear, or logarithmic when the values are positive and
// span more than a decade (so a 100x spread of throughputs or a step-time jump of several
// orders stays readable), its snapped range, its ticks, and where a value falls on it.
#pragma once

#include <string>
#include <vector>

namespace dsgd {

// Whether [lo, hi] should be drawn on a log axis: both positive and hi > 10 lo.
bool html_range_spans_decades(double lo, double hi);

struct HtmlAxisScale {
  double lo = 0, hi = 1;  // snapped outward to the ticks
  bool log = false;
  std::vector<double> ticks;
  // Where v falls on the axis, 0 at lo, 1 at hi (values <= 0 on a log axis go to 0).
  double fraction(double v) const;
};

// The axis for values in [lo, hi] (non-finite ends: [0, 1]): log when allow_log and the range
// spans decades (ticks at 1, 2, 5 x 10^k, or powers of ten over many decades), else linear
// with about `count` ticks at multiples of 1, 2 or 5 x 10^k; from_zero pulls a linear axis'
// low end to 0.
HtmlAxisScale html_axis_scale(double lo, double hi, int count, bool allow_log, bool from_zero = false);

// The labels of an axis' ticks: the fewest significant digits (at least 1, at most 8) that
// tell every tick from its neighbours ("3.5e-06", "3.6e-06" rather than "3.50000e-06"); from
// 10,000 up in thousands, millions or billions, all with the largest tick's suffix
// ("20M", "40M").
std::vector<std::string> html_tick_texts(const std::vector<double>& ticks);

// A value as a table cell shows it: 4 significant digits, from 10,000 up with k, M or G
// ("13.05M"); "" for a non-finite value.
std::string html_compact_text(double v);

}  // namespace dsgd
