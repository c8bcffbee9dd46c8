// The HTML report's charts (see html_svg.hpp): line charts with snapped axes, hover and a
// legend, and the public html_chart / html_axis_ticks.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "results/html_downsample.hpp"
#include "results/html_scale.hpp"
#include "results/html_svg.hpp"

namespace dsgd {

namespace html_detail {

// ---- line charts -------------------------------------------------------------------------

constexpr double chart_w = 640, chart_h = 340;
constexpr double margin_l = 64, margin_r = 14, margin_t = 12, margin_b = 46;

struct Range {
  double lo = std::numeric_limits<double>::infinity(), hi = -std::numeric_limits<double>::infinity();
  void add(double v) {
    if (!std::isfinite(v)) return;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  bool empty() const { return !(lo <= hi); }
  void widen() {
    if (empty()) {
      lo = 0;
      hi = 1;
    } else if (lo == hi) {
      const double pad = lo == 0 ? 1 : std::fabs(lo) * 0.05;
      lo -= pad;
      hi += pad;
    }
  }
};

void chart_axes(Buffer& out, const Range& xr, const Range& yr, const std::vector<double>& xt,
                const std::vector<double>& yt, const std::string& x_label, const std::string& y_label) {
  const double pw = chart_w - margin_l - margin_r, ph = chart_h - margin_t - margin_b;
  auto sx = [&](double v) { return margin_l + (v - xr.lo) / (xr.hi - xr.lo) * pw; };
  auto sy = [&](double v) { return margin_t + ph - (v - yr.lo) / (yr.hi - yr.lo) * ph; };
  const std::vector<std::string> y_texts = html_tick_texts(yt), x_texts = html_tick_texts(xt);
  for (size_t i = 0; i < yt.size(); ++i) {
    const double y = sy(yt[i]);
    put(out, "<line class=\"grid\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\"/>", margin_l, y,
        margin_l + pw, y);
    put(out, "<text class=\"tick\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>", margin_l - 5, y + 4,
        html_escape(y_texts[i]));
  }
  for (size_t i = 0; i < xt.size(); ++i) {
    const double x = sx(xt[i]);
    put(out, "<line class=\"grid\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\"/>", x, margin_t, x,
        margin_t + ph);
    // A label at the frame's right end ends there (the margin cannot hold half of it).
    const bool at_right = x > margin_l + pw - 20;
    put(out, "<text class=\"tick\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"{}\">{}</text>", x, margin_t + ph + 16,
        at_right ? "end" : "middle", html_escape(x_texts[i]));
  }
  put(out, "<rect class=\"frame\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\"/>", margin_l, margin_t,
      pw, ph);
  put(out, "<text class=\"axis\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>", margin_l + pw / 2,
      chart_h - 8, html_escape(x_label));
  put(out, "<text class=\"axis\" transform=\"translate(14,{:.1f}) rotate(-90)\" text-anchor=\"middle\">{}</text>",
      margin_t + ph / 2, html_escape(y_label));
}

// Snaps a range outward to the ticks' step so lines never touch the frame's ends unevenly.
std::vector<double> snap_ticks(Range& r, int count) {
  r.widen();
  std::vector<double> ticks = html_axis_ticks(r.lo, r.hi, count);
  if (ticks.size() >= 2) {
    const double step = ticks[1] - ticks[0];
    r.lo = std::floor(r.lo / step + 1e-9) * step;
    r.hi = std::ceil(r.hi / step - 1e-9) * step;
    ticks = html_axis_ticks(r.lo, r.hi, count);
  }
  return ticks;
}

// One entry per distinct id that has points (series sharing an id, the runs of one
// configuration, share an entry), at most legend_max.
void legend(Buffer& out, const std::string& chart_id, const std::vector<Series>& series) {
  put(out, "<div class=\"legend\" data-chart=\"{}\">", chart_id);
  std::vector<const Series*> entries;
  for (const Series& s : series) {
    if (s.x.empty()) continue;
    if (std::none_of(entries.begin(), entries.end(), [&](const Series* e) { return e->id == s.id; }))
      entries.push_back(&s);
  }
  const size_t shown = std::min(entries.size(), legend_max);
  for (size_t i = 0; i < shown; ++i) {
    const Series& s = *entries[i];
    put(out,
        "<span class=\"lg\" data-s=\"{}\" title=\"click to hide or show\"><i style=\"background:{}\"></i>{}</span>",
        html_escape(s.id), s.color, html_escape(s.legend.empty() ? s.label : s.legend));
  }
  if (entries.size() > shown)
    put(out, "<span class=\"more\">+{} more (hover a line for its run)</span>", entries.size() - shown);
  put(out, "</div>");
}

void line_chart(Buffer& out, LineChart chart, const HtmlReportOptions& options) {
  put(out, "<figure class=\"chart\" id=\"{}\"><figcaption>{}</figcaption>", chart.id, html_escape(chart.title));
  size_t lines = 0;
  for (const Series& s : chart.series)
    if (!s.x.empty()) ++lines;
  if (lines == 0) {
    put(out, "<p class=\"note\">No data for this chart in the selected runs.</p></figure>");
    return;
  }
  const size_t per_line =
      std::max(options.min_points_per_line, options.max_points_per_chart / std::max<size_t>(lines, 1));
  Range xr, yr;
  for (Series& s : chart.series) {
    const std::vector<size_t> keep = lttb_indices(s.x, s.y, per_line);
    std::vector<double> x, y;
    x.reserve(keep.size());
    y.reserve(keep.size());
    for (size_t i : keep) {
      x.push_back(s.x[i]);
      y.push_back(s.y[i]);
      xr.add(s.x[i]);
      yr.add(s.y[i]);
    }
    s.x = std::move(x);
    s.y = std::move(y);
  }
  if (yr.empty()) {  // every value non-finite (timing-only runs have no loss)
    put(out, "<p class=\"note\">No data for this chart in the selected runs.</p></figure>");
    return;
  }
  if (chart.y_from_zero && !yr.empty()) yr.lo = std::min(yr.lo, 0.0);
  if (chart.diagonal && !xr.empty() && !yr.empty()) {
    xr.lo = yr.lo = std::min(xr.lo, yr.lo);
    xr.hi = yr.hi = std::max(xr.hi, yr.hi);
  }
  std::vector<double> xt = snap_ticks(xr, 6);
  const std::vector<double> yt = snap_ticks(yr, 5);
  if (chart.x_integer) {
    xt.erase(std::remove_if(xt.begin(), xt.end(), [](double t) { return t != std::floor(t); }), xt.end());
    if (xt.size() < 2) {
      xt.clear();
      for (double t = std::ceil(xr.lo); t <= xr.hi; t += 1) xt.push_back(t);
    }
  }
  const double pw = chart_w - margin_l - margin_r, ph = chart_h - margin_t - margin_b;
  auto sx = [&](double v) { return margin_l + (v - xr.lo) / (xr.hi - xr.lo) * pw; };
  auto sy = [&](double v) { return margin_t + ph - (v - yr.lo) / (yr.hi - yr.lo) * ph; };

  put(out, "<svg viewBox=\"0 0 {} {}\" role=\"img\" aria-label=\"{}\">", chart_w, chart_h, html_escape(chart.title));
  chart_axes(out, xr, yr, xt, yt, chart.x_label, chart.y_label);
  if (chart.diagonal) {
    put(out,
        "<line class=\"diag\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\"><title>predicted = "
        "measured</title></line>",
        sx(xr.lo), sy(xr.lo), sx(xr.hi), sy(xr.hi));
  }
  for (const Series& s : chart.series) {
    if (s.x.empty()) continue;
    const std::string id = html_escape(s.id), label = html_escape(s.label);
    if (!chart.diagonal && s.line && s.x.size() > 1) {
      put(out, "<path class=\"ln\" data-s=\"{}\" stroke=\"{}\" d=\"M", id, s.color);
      for (size_t i = 0; i < s.x.size(); ++i) put(out, "{}{:.1f},{:.1f}", i ? " " : "", sx(s.x[i]), sy(s.y[i]));
      put(out, "\"><title>{}</title></path>", label);
    }
    if (chart.markers || chart.diagonal || !s.line || s.x.size() == 1) {
      put(out, "<g class=\"pt\" data-s=\"{}\" fill=\"{}\">", id, s.color);
      for (size_t i = 0; i < s.x.size(); ++i)
        put(out, "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\"><title>{}: ({:g}, {:g})</title></circle>", sx(s.x[i]),
            sy(s.y[i]), label, s.x[i], s.y[i]);
      put(out, "</g>");
    }
  }
  put(out, "</svg>");
  legend(out, chart.id, chart.series);
  put(out, "</figure>");
}

}  // namespace html_detail

using namespace html_detail;

std::string html_chart(const HtmlChart& chart, const HtmlReportOptions& options) {
  LineChart c{chart.id, chart.title, chart.x_label, chart.y_label, {}, chart.y_from_zero, chart.markers};
  c.x_integer = chart.x_integer;
  for (const HtmlSeries& s : chart.series)
    c.series.push_back(Series{s.id, s.label, {}, color_of(s.color), s.x, s.y, s.line});
  Buffer out;
  line_chart(out, std::move(c), options);
  return fmt::to_string(out);
}

std::vector<double> html_axis_ticks(double lo, double hi, int count) {
  std::vector<double> ticks;
  if (!(hi > lo) || !std::isfinite(lo) || !std::isfinite(hi) || count < 1) return ticks;
  const double raw = (hi - lo) / count;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double step = magnitude;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * magnitude;
    if (step >= raw) break;
  }
  const double first = std::ceil(lo / step - 1e-9) * step;
  for (double t = first; t <= hi + step * 1e-9; t += step) {
    ticks.push_back(std::fabs(t) < step * 1e-9 ? 0.0 : t);
    if (ticks.size() > 100) break;
  }
  return ticks;
}

}  // namespace dsgd
