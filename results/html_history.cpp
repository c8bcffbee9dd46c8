// The HTML report's history charts (see html_history.hpp). Geometry: each trend chart is a
// 640 x 330 viewBox; commits are equal-width slots along x in the series' order (git or stored).
#include "results/html_history.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "core/stats.hpp"
#include "results/compare_runs.hpp"
#include "results/html_scale.hpp"
#include "results/html_svg.hpp"

namespace dsgd {

using namespace html_detail;

namespace {

constexpr double chart_w = 640, chart_h = 330;
constexpr double margin_l = 64, margin_r = 14, margin_t = 22, margin_b = 72;
constexpr double plot_w = chart_w - margin_l - margin_r, plot_h = chart_h - margin_t - margin_b;
constexpr size_t max_commit_labels = 16;

bool change_is_regression(const HistorySeries& s, const ChangePoint& c) {
  return s.bigger_is_better ? c.relative_change < 0 : c.relative_change > 0;
}

// The x of commit i's slot centre.
double commit_x(size_t i, size_t n) {
  return margin_l + (static_cast<double>(i) + 0.5) / static_cast<double>(std::max<size_t>(n, 1)) * plot_w;
}

// The x of the boundary before commit i (where a change point or an annotation is drawn).
double boundary_x(size_t i, size_t n) {
  return margin_l + static_cast<double>(i) / static_cast<double>(std::max<size_t>(n, 1)) * plot_w;
}

struct SegmentLevel {
  size_t begin = 0, end = 0;  // commits [begin, end)
  double mean = 0, low = 0, high = 0;
};

// The mean of each segment between change points, and mean -/+ its standard deviation, of the
// per-commit medians; geometric on a log scale, as the detector sees them.
std::vector<SegmentLevel> segment_levels(const HistorySeries& s) {
  std::vector<size_t> cuts = {0};
  for (const ChangePoint& c : s.changes) cuts.push_back(c.index);
  cuts.push_back(s.points.size());
  std::vector<SegmentLevel> levels;
  for (size_t k = 0; k + 1 < cuts.size(); ++k) {
    SegmentLevel level;
    level.begin = cuts[k];
    level.end = cuts[k + 1];
    if (level.end <= level.begin) continue;
    std::vector<double> v;
    for (size_t i = level.begin; i < level.end; ++i)
      v.push_back(s.log_scale ? std::log(s.points[i].median) : s.points[i].median);
    double mean = 0;
    for (double x : v) mean += x;
    mean /= static_cast<double>(v.size());
    double var = 0;
    for (double x : v) var += (x - mean) * (x - mean);
    const double sd = v.size() > 1 ? std::sqrt(var / static_cast<double>(v.size() - 1)) : 0.0;
    if (s.log_scale) {
      level.mean = std::exp(mean);
      level.low = std::exp(mean - sd);
      level.high = std::exp(mean + sd);
    } else {
      level.mean = mean;
      level.low = mean - sd;
      level.high = mean + sd;
    }
    levels.push_back(level);
  }
  return levels;
}

std::string commit_title(const HistoryPoint& p) {
  return fmt::format("{} ({})", p.commit.empty() ? "(none)" : p.commit, p.date);
}

void commit_labels(Buffer& out, const HistorySeries& s) {
  const size_t n = s.points.size();
  const size_t every = std::max<size_t>(1, (n + max_commit_labels - 1) / max_commit_labels);
  for (size_t i = 0; i < n; ++i) {
    const bool last_far_enough = i + 1 == n && i % every >= (every + 1) / 2;
    if (i % every != 0 && !last_far_enough) continue;
    const double x = commit_x(i, n), y = margin_t + plot_h + 12;
    put(out,
        "<text class=\"tick\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\" transform=\"rotate(-35 {:.1f} "
        "{:.1f})\">{}<title>{}</title></text>",
        x, y, x, y, html_escape(history_short_commit(s.points[i].commit).substr(0, 8)),
        html_escape(commit_title(s.points[i])));
  }
}

void y_axis(Buffer& out, const HtmlAxisScale& scale, const std::string& label) {
  const std::vector<std::string> texts = html_tick_texts(scale.ticks);
  for (size_t k = 0; k < scale.ticks.size(); ++k) {
    const double t = scale.ticks[k];
    const double y = margin_t + plot_h * (1 - scale.fraction(t));
    put(out, "<line class=\"grid\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\"/>", margin_l, y,
        margin_l + plot_w, y);
    put(out, "<text class=\"tick\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>", margin_l - 5, y + 4,
        html_escape(texts[k]));
  }
  put(out, "<rect class=\"frame\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\"/>", margin_l, margin_t,
      plot_w, plot_h);
  put(out, "<text class=\"axis\" transform=\"translate(14,{:.1f}) rotate(-90)\" text-anchor=\"middle\">{}</text>",
      margin_t + plot_h / 2, html_escape(label));
}

}  // namespace

bool html_history_regressed(const HistorySeries& series) {
  return std::any_of(series.changes.begin(), series.changes.end(),
                     [&](const ChangePoint& c) { return change_is_regression(series, c); });
}

std::string html_history_chart(const HistorySeries& s, const std::vector<Annotation>& annotations,
                               const HistoryOptions& options, const std::string& id) {
  Buffer out;
  const bool regressed = html_history_regressed(s);
  put(out, "<figure class=\"chart hist\" id=\"{}\"><figcaption>{}{}</figcaption>", id,
      html_escape(s.label + " · " + s.metric), regressed ? " <span class=\"badge\">regression</span>" : "");
  const size_t n = s.points.size();
  if (n == 0) {
    put(out, "<p class=\"note\">No commit in this series.</p></figure>");
    return fmt::to_string(out);
  }
  const std::vector<SegmentLevel> levels = segment_levels(s);
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  auto add = [&](double v) {
    if (!std::isfinite(v)) return;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  };
  for (const HistoryPoint& p : s.points) {
    for (double v : p.values) add(v);
    add(p.q25);
    add(p.q75);
  }
  for (const SegmentLevel& l : levels) {
    add(l.low);
    add(l.high);
  }
  const bool all_positive = lo > 0;
  const HtmlAxisScale scale = html_axis_scale(lo, hi, 5, all_positive);
  auto sy = [&](double v) {
    const double f = std::clamp(scale.fraction(v), -0.02, 1.02);
    return margin_t + plot_h * (1 - f);
  };
  put(out, "<svg viewBox=\"0 0 {} {}\" role=\"img\" aria-label=\"{}\" data-scale=\"{}\">", chart_w, chart_h,
      html_escape(s.label), scale.log ? "log" : "linear");
  y_axis(out, scale, s.metric + (scale.log ? " (log scale)" : ""));
  commit_labels(out, s);
  // Segment levels: the band of each segment's spread, then its mean as a step line.
  for (const SegmentLevel& l : levels) {
    const double x0 = boundary_x(l.begin, n), x1 = boundary_x(l.end, n);
    put(out,
        "<rect class=\"band\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\"><title>segment of {} "
        "commit(s): mean {} (spread {} - {})</title></rect>",
        x0, sy(l.high), x1 - x0, std::max(0.5, sy(l.low) - sy(l.high)), l.end - l.begin, number_text(l.mean),
        number_text(l.low), number_text(l.high));
  }
  put(out, "<path class=\"level\" d=\"");
  for (size_t k = 0; k < levels.size(); ++k) {
    const SegmentLevel& l = levels[k];
    put(out, "{}{:.1f},{:.1f} H{:.1f}", k ? " L" : "M", boundary_x(l.begin, n), sy(l.mean), boundary_x(l.end, n));
  }
  put(out, "\"/>");
  // Each commit: its repetitions (faint), its IQR whisker and its median.
  const double band = plot_w / static_cast<double>(n);
  const double r = std::clamp(band * 0.22, 1.2, 3.5);
  for (size_t i = 0; i < n; ++i) {
    const HistoryPoint& p = s.points[i];
    const double x = commit_x(i, n);
    put(out, "<g class=\"rep\">");
    for (double v : p.values)
      if (std::isfinite(v)) put(out, "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"{:.1f}\"/>", x, sy(v), r * 0.6);
    put(out, "</g>");
    put(out, "<line class=\"iqr\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\"/>", x, sy(p.q25), x,
        sy(p.q75));
    put(out,
        "<circle class=\"med\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"{:.1f}\" data-commit=\"{}\"><title>{}\nmedian {} "
        "(IQR {} - {}, n = {})</title></circle>",
        x, sy(p.median), r, html_escape(p.commit), html_escape(commit_title(p)), number_text(p.median),
        number_text(p.q25), number_text(p.q75), p.count);
  }
  // Annotations: a vertical line at the commit, its kind above, its note on hover.
  for (size_t i = 0; i < n; ++i)
    for (const Annotation& a : annotations) {
      if (!annotation_applies(a, s, s.points[i].commit)) continue;
      const double x = commit_x(i, n);
      const char* kind = annotation_kind_text(a.kind);
      put(out,
          "<g class=\"ann ann-{}\" data-commit=\"{}\"><line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" "
          "y2=\"{:.1f}\"/><text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text><title>{} at {}: "
          "{}</title></g>",
          kind, html_escape(s.points[i].commit), x, margin_t, x, margin_t + plot_h, x, margin_t + plot_h - 4, kind,
          kind, html_escape(history_short_commit(s.points[i].commit)), html_escape(a.note));
    }
  // Change points: a line at the boundary, the change and p-value above the plot.
  for (const ChangePoint& c : s.changes) {
    if (c.index == 0 || c.index >= n) continue;
    const double x = boundary_x(c.index, n);
    const bool bad = change_is_regression(s, c);
    const std::string text = fmt::format("{:+.1f} % (p = {:.2g})", 100 * c.relative_change, c.pvalue);
    const double label_x = std::clamp(x, margin_l + 60, margin_l + plot_w - 60);
    put(out,
        "<g class=\"cp {}{}\" data-commit=\"{}\"><line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\"/>"
        "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text><title>at {}: {}</title></g>",
        bad ? "bad" : "good", c.confirmed ? "" : " unconfirmed", html_escape(s.points[c.index].commit), x, margin_t, x,
        margin_t + plot_h, label_x, margin_t - 6, html_escape(text), html_escape(commit_title(s.points[c.index])),
        html_escape(history_change_text(c)));
  }
  put(out,
      "<text class=\"params\" x=\"{:.1f}\" y=\"{:.1f}\" textLength=\"{:.1f}\" "
      "lengthAdjust=\"spacingAndGlyphs\">{}</text>",
      4.0, chart_h - 4, chart_w - 8, html_escape(history_parameters_text(options)));
  put(out, "</svg><p class=\"note\">{} · {} commit(s), {} change point(s)</p></figure>", html_escape(s.machine), n,
      s.changes.size());
  return fmt::to_string(out);
}

std::string html_history_breakdown_chart(const HistorySeries& s, const std::map<int64_t, Summary>& summaries,
                                         const std::string& id) {
  constexpr double h = 150, top = 8, bottom = 22;
  const size_t n = s.points.size();
  struct Parts {
    std::array<double, 3> ms{};  // compute, comm, wait
  };
  std::vector<Parts> parts(n);
  bool any = false;
  double max_total = 0;
  for (size_t i = 0; i < n; ++i) {
    std::array<std::vector<double>, 3> v;
    for (int64_t run : s.points[i].run_ids) {
      const auto it = summaries.find(run);
      if (it == summaries.end() || it->second.timed_steps <= 0) continue;
      v[0].push_back(it->second.compute_s * 1e3);
      v[1].push_back(it->second.comm_s * 1e3);
      v[2].push_back(it->second.wait_s * 1e3);
    }
    if (v[0].empty()) continue;
    double total = 0;
    for (size_t k = 0; k < 3; ++k) {
      const double m = stats_median(v[k]);
      parts[i].ms[k] = std::isfinite(m) ? std::max(0.0, m) : 0.0;
      total += parts[i].ms[k];
    }
    any |= total > 0;
    max_total = std::max(max_total, total);
  }
  if (!any) return "";
  static constexpr std::array<const char*, 3> names = {"compute", "comm", "wait"};
  static constexpr std::array<const char*, 3> colors = {"#4e79a7", "#f28e2b", "#e15759"};
  const HtmlAxisScale scale = html_axis_scale(0, max_total, 4, false, true);
  const double ph = h - top - bottom;
  auto sy = [&](double v) { return top + ph * (1 - scale.fraction(v)); };
  Buffer out;
  put(out,
      "<figure class=\"chart hist-breakdown\" id=\"{}\"><figcaption>Where the time goes, per commit (median "
      "ms per step)</figcaption><svg viewBox=\"0 0 {} {}\" role=\"img\" aria-label=\"compute, comm and wait per "
      "commit\">",
      id, chart_w, h);
  const std::vector<std::string> tick_texts = html_tick_texts(scale.ticks);
  for (size_t tick_index = 0; tick_index < scale.ticks.size(); ++tick_index) {
    const double t = scale.ticks[tick_index];
    put(out, "<line class=\"grid\" x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\"/>", margin_l, sy(t),
        margin_l + plot_w, sy(t));
    put(out, "<text class=\"tick\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>", margin_l - 5, sy(t) + 4,
        html_escape(tick_texts[tick_index]));
  }
  const double band = plot_w / static_cast<double>(std::max<size_t>(n, 1));
  const double bar_w = std::max(1.0, band * 0.7);
  for (size_t i = 0; i < n; ++i) {
    double base = 0;
    for (size_t k = 0; k < 3; ++k) {
      const double v = parts[i].ms[k];
      if (v <= 0) continue;
      put(out,
          "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"{}\"><title>{}: {} {} "
          "ms</title></rect>",
          commit_x(i, n) - bar_w / 2, sy(base + v), bar_w, std::max(0.0, sy(base) - sy(base + v)), colors[k],
          html_escape(history_short_commit(s.points[i].commit)), names[k], number_text(v));
      base += v;
    }
  }
  put(out, "<rect class=\"frame\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\"/>", margin_l, top,
      plot_w, ph);
  put(out,
      "<text class=\"axis\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">commits in {} order (as above)</text>",
      margin_l + plot_w / 2, h - 6, s.order == "stored" ? "stored" : html_escape(s.order));
  put(out, "</svg><div class=\"legend\">");
  for (size_t k = 0; k < 3; ++k) put(out, "<span><i style=\"background:{}\"></i>{}</span>", colors[k], names[k]);
  put(out, "</div></figure>");
  return fmt::to_string(out);
}

std::string html_history_section(const HtmlHistoryInput& input) {
  Buffer out;
  size_t regressed = 0;
  for (const HistorySeries& s : input.series) regressed += html_history_regressed(s);
  const std::string& metric = input.series.empty() ? input.options.metric : input.series.front().metric;
  put(out, "<section id=\"history\"><h2>History: {} across commits ({} series, {} with a regression)</h2>",
      html_escape(metric), input.series.size(), regressed);
  if (input.series.empty()) {
    put(out,
        "<p class=\"note\">No series: no completed run with this metric (and filters) in the database.</p>"
        "</section>");
    return fmt::to_string(out);
  }
  put(out,
      "<input type=\"checkbox\" id=\"regressions-only\" class=\"filter\"><label for=\"regressions-only\"> "
      "regressions only (hide the cases without a change point in the metric's bad direction)</label>"
      "<div class=\"grid cases\">");
  // The cases with a regression first, each kind in the order `history` prints them.
  std::vector<size_t> order(input.series.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_partition(order.begin(), order.end(), [&](size_t i) { return html_history_regressed(input.series[i]); });
  for (size_t i : order) {
    const HistorySeries& s = input.series[i];
    put(out, "<div class=\"case\"{}>", html_history_regressed(s) ? " data-regressed=\"1\"" : "");
    if (s.points.size() < 2) {  // no history yet: a line, not an empty chart
      const HistoryPoint* p = s.points.empty() ? nullptr : &s.points.front();
      put(out,
          "<figure class=\"chart hist\" id=\"history-{}\"><figcaption>{}</figcaption><p class=\"note\">One "
          "commit so far{}: no trend to draw. {}</p></figure>",
          i, html_escape(s.label + " · " + s.metric),
          p ? fmt::format(" ({}, median {}, n = {})", html_escape(history_short_commit(p->commit)),
                          number_text(p->median), p->count)
            : "",
          html_escape(s.machine));
    } else {
      put_text(out, html_history_chart(s, input.annotations, input.options, fmt::format("history-{}", i)));
      put_text(out, html_history_breakdown_chart(s, input.summaries, fmt::format("history-breakdown-{}", i)));
    }
    put(out, "</div>");
  }
  put(out,
      "</div><p class=\"note\">A series is one case × metric × machine, as <code>dsgd-bench history</code> "
      "prints it; the cases with a regression come first. Points: each commit's median, its interquartile range "
      "(whisker) and every repetition (faint). "
      "The step line is each segment's mean between change points, the band its mean ± one standard deviation "
      "(geometric on the log of the medians, where the detector works). Change points are marked with their "
      "change and p-value (red: the metric's bad direction; dashed: not yet confirmed); annotations "
      "(<code>dsgd-bench track annotate</code>) are vertical lines, their note on hover. Change points: {}.</p>"
      "</section>",
      html_escape(history_parameters_text(input.options)));
  return fmt::to_string(out);
}

}  // namespace dsgd
