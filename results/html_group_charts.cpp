// The HTML report's charts of configurations (see html_group_charts.hpp). Geometry: a bar
// chart is 640 wide, 16 units a bar; the breakdown 1240 wide.
#include "results/html_group_charts.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <set>

#include "results/html_scale.hpp"
#include "results/html_svg.hpp"

namespace dsgd {

using namespace html_detail;

namespace {

struct GroupMetric {
  const char* id;
  const char* title;
  const char* unit;
  HtmlGroupStat HtmlRunGroup::*stat;
};

constexpr GroupMetric bar_metrics[] = {
    {"throughput", "Throughput", "samples/s", &HtmlRunGroup::throughput},
    {"ttt", "Time to target", "s", &HtmlRunGroup::time_to_target},
};

// `text` cut to what fits in `width` viewBox units at the tick font (11 units, about 7 a
// character), with an ellipsis; never inside a UTF-8 sequence.
std::string fit_label(const std::string& text, double width) {
  const size_t max_chars = static_cast<size_t>(std::max(4.0, width / 7.0));
  if (text.size() <= max_chars) return text;
  size_t cut = max_chars - 1;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return text.substr(0, cut) + "…";
}

const char* knob_title(const std::string& knob) {
  if (knob == "period") return "H";
  return knob.c_str();
}

std::string status_text(const HtmlRunGroup& g) {
  std::string text;
  for (const auto& [status, count] : g.statuses)
    text += fmt::format("{}{} {}", text.empty() ? "" : ", ", count, status);
  return text;
}

void bar_chart(Buffer& out, const HtmlRunGrouping& grouping, const std::vector<size_t>& groups, const GroupMetric& m,
               const std::string& id) {
  std::vector<size_t> shown;
  double lo = std::numeric_limits<double>::infinity(), hi = 0;
  for (size_t i : groups) {
    const HtmlGroupStat& s = grouping.groups[i].*m.stat;
    if (s.n == 0) continue;
    shown.push_back(i);
    lo = std::min({lo, s.q25, s.median});
    hi = std::max({hi, s.q75, s.median});
  }
  if (shown.empty()) return;
  const HtmlAxisScale scale = html_axis_scale(html_range_spans_decades(lo, hi) ? lo : 0, hi, 5, true, true);
  constexpr double width = 640, label_w = 240, right = 52, top = 6, row = 16, axis_h = 34;
  const double pw = width - label_w - right;
  const double height = top + row * static_cast<double>(shown.size()) + axis_h;
  auto sx = [&](double v) { return label_w + pw * std::clamp(scale.fraction(v), 0.0, 1.0); };
  put(out,
      "<figure class=\"chart\" id=\"{}\"><figcaption>{} ({}): median per configuration, IQR whisker, n "
      "runs{}</figcaption><svg viewBox=\"0 0 {} {:.0f}\" role=\"img\" aria-label=\"{}\" data-scale=\"{}\">",
      id, m.title, m.unit, scale.log ? "; log scale" : "", width, height, m.title, scale.log ? "log" : "linear");
  const double plot_bottom = top + row * static_cast<double>(shown.size());
  const std::vector<std::string> tick_texts = html_tick_texts(scale.ticks);
  for (size_t tick_index = 0; tick_index < scale.ticks.size(); ++tick_index) {
    const double t = scale.ticks[tick_index];
    put(out, "<line class=\"grid\" x1=\"{:.1f}\" y1=\"{}\" x2=\"{:.1f}\" y2=\"{:.1f}\"/>", sx(t), top, sx(t),
        plot_bottom);
    put(out, "<text class=\"tick\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>", sx(t), plot_bottom + 14,
        html_escape(tick_texts[tick_index]));
  }
  put(out, "<text class=\"axis\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{} ({})</text>", label_w + pw / 2,
      height - 4, m.title, m.unit);
  for (size_t k = 0; k < shown.size(); ++k) {
    const HtmlRunGroup& g = grouping.groups[shown[k]];
    const HtmlGroupStat& s = g.*m.stat;
    const double y = top + row * static_cast<double>(k);
    const std::string label = html_group_short_label(g, grouping);
    put(out,
        "<g class=\"gbar\" data-n=\"{}\" data-median=\"{:g}\"><title>{}\nmedian {} {} (IQR {} - {}), n = {}; "
        "{}</title>",
        s.n, s.median, html_escape(g.label), html_compact_text(s.median), m.unit, html_compact_text(s.q25),
        html_compact_text(s.q75), s.n, html_escape(status_text(g)));
    put(out, "<text class=\"tick\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>", label_w - 6, y + 11.5,
        html_escape(fit_label(label, label_w - 8)));
    put(out, "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"11\" fill=\"{}\"/>", label_w, y + 2.5,
        std::max(0.5, sx(s.median) - label_w), color_of(shown[k]));
    if (s.n > 1)
      put(out, "<path class=\"whisk\" d=\"M{:.1f},{:.1f} H{:.1f} M{:.1f},{:.1f} V{:.1f} M{:.1f},{:.1f} V{:.1f}\"/>",
          sx(s.q25), y + 8, sx(s.q75), sx(s.q25), y + 5, y + 11, sx(s.q75), y + 5, y + 11);
    put(out, "<text class=\"tick\" x=\"{:.1f}\" y=\"{:.1f}\">n={}</text></g>", std::max(sx(s.q75), sx(s.median)) + 4,
        y + 11.5, s.n);
  }
  put(out, "</svg></figure>");
}

// A cell's background: light to dark over [lo, hi] (log when it spans decades).
std::string cell_style(double v, double lo, double hi, bool bigger_is_better) {
  double f = 0.5;
  if (hi > lo) f = html_range_spans_decades(lo, hi) ? std::log(v / lo) / std::log(hi / lo) : (v - lo) / (hi - lo);
  if (!bigger_is_better) f = 1 - f;
  f = std::clamp(f, 0.0, 1.0);
  return fmt::format("background:rgba(78,121,167,{:.2f}){}", 0.08 + 0.8 * f, f > 0.6 ? ";color:#fff" : "");
}

void heatmap(Buffer& out, const HtmlRunGrouping& grouping, const std::vector<size_t>& groups,
             const std::pair<std::string, std::string>& knobs, const std::string& where, const GroupMetric& m,
             bool bigger_is_better) {
  std::set<std::string, decltype(&html_knob_less)> rows(&html_knob_less), cols(&html_knob_less);
  std::map<std::pair<std::string, std::string>, const HtmlRunGroup*> cell;
  double lo = std::numeric_limits<double>::infinity(), hi = 0;
  for (size_t i : groups) {
    const HtmlRunGroup& g = grouping.groups[i];
    const auto r = g.knobs.find(knobs.first), c = g.knobs.find(knobs.second);
    if (r == g.knobs.end() || c == g.knobs.end()) continue;
    rows.insert(r->second);
    cols.insert(c->second);
    cell[{r->second, c->second}] = &g;
    const HtmlGroupStat& s = g.*m.stat;
    if (s.n > 0) {
      lo = std::min(lo, s.median);
      hi = std::max(hi, s.median);
    }
  }
  if (!(lo <= hi)) return;
  put(out,
      "<figure class=\"heat\"><figcaption>{} ({}), median: {} × {}{}</figcaption><table class=\"heatmap\" "
      "data-rows=\"{}\" data-cols=\"{}\"><thead><tr><th>{} \\ {}</th>",
      m.title, m.unit, knob_title(knobs.first), knob_title(knobs.second),
      where.empty() ? "" : ", " + html_escape(where), html_escape(knobs.first), html_escape(knobs.second),
      knob_title(knobs.first), knob_title(knobs.second));
  for (const std::string& c : cols) put(out, "<th class=\"num\">{}</th>", html_escape(c));
  put(out, "</tr></thead><tbody>");
  for (const std::string& r : rows) {
    put(out, "<tr><th>{}</th>", html_escape(r));
    for (const std::string& c : cols) {
      const auto it = cell.find({r, c});
      if (it == cell.end() || (it->second->*m.stat).n == 0) {
        put(out, "<td class=\"num empty\">{}</td>", it == cell.end() ? "" : "–");
        continue;
      }
      const HtmlGroupStat& s = it->second->*m.stat;
      put(out, "<td class=\"num\" style=\"{}\" title=\"{}: IQR {} - {}, n = {}\">{}</td>",
          cell_style(s.median, lo, hi, bigger_is_better), html_escape(it->second->label), html_compact_text(s.q25),
          html_compact_text(s.q75), s.n, html_compact_text(s.median));
    }
    put(out, "</tr>");
  }
  put(out, "</tbody></table></figure>");
}

// The heatmaps of a pivot: per metric, one per combination of the further varying knobs' values
// (at most max_heatmaps).
void pivot_heatmaps(Buffer& out, const HtmlRunGrouping& grouping, const std::vector<size_t>& groups,
                    const HtmlGroupPivot& pivot) {
  constexpr size_t max_heatmaps = 8;
  std::vector<std::pair<std::string, std::vector<size_t>>> parts;  // "workers=4" -> its groups, in order
  for (size_t i : groups) {
    std::string where;
    for (const std::string& k : pivot.rest) {
      const auto it = grouping.groups[i].knobs.find(k);
      where += fmt::format("{}{}={}", where.empty() ? "" : " ", knob_title(k),
                           it == grouping.groups[i].knobs.end() ? "·" : it->second);
    }
    auto part = std::find_if(parts.begin(), parts.end(), [&](const auto& p) { return p.first == where; });
    if (part == parts.end()) part = parts.insert(parts.end(), {where, {}});
    part->second.push_back(i);
  }
  for (size_t m = 0; m < 2; ++m)
    for (size_t p = 0; p < parts.size() && p < max_heatmaps; ++p)
      heatmap(out, grouping, parts[p].second, {pivot.rows, pivot.cols}, parts[p].first, bar_metrics[m], m == 0);
  if (parts.size() > max_heatmaps)
    put(out, "<p class=\"note\">{} more heatmaps left out (one per value of {}).</p>", parts.size() - max_heatmaps,
        html_escape(pivot.rest.front()));
}

void configurations_table(Buffer& out, const HtmlRunGrouping& grouping) {
  put(out, "<div class=\"scroll\"><table class=\"groups\"><thead><tr><th>configuration</th>");
  // The knobs that vary, and the workload and algorithm always (every knob when none varies).
  std::vector<std::string> knobs;
  for (const std::string& k : html_group_knobs())
    if (grouping.varying.empty() || k == "workload" || k == "algorithm" ||
        std::find(grouping.varying.begin(), grouping.varying.end(), k) != grouping.varying.end())
      if (k != "other" || !grouping.varying.empty()) knobs.push_back(k);
  for (const std::string& k : knobs) put(out, "<th>{}</th>", knob_title(k));
  put(out,
      "<th class=\"num\">n</th><th>statuses</th><th class=\"num\">throughput (samples/s)</th><th class=\"num\">IQR"
      "</th><th class=\"num\">step (ms)</th><th class=\"num\">time to target (s)</th><th class=\"num\">test "
      "acc</th></tr></thead><tbody>");
  for (size_t i = 0; i < grouping.groups.size(); ++i) {
    const HtmlRunGroup& g = grouping.groups[i];
    put(out, "<tr><td title=\"{}\"><i class=\"sw\" style=\"background:{}\"></i>{}</td>", html_escape(g.label),
        color_of(i), html_escape(html_group_short_label(g, grouping)));
    for (const std::string& k : knobs) {
      const auto it = g.knobs.find(k);
      if (it == g.knobs.end())
        put(out, "<td class=\"na\" title=\"{} does not read it\">·</td>", html_escape(g.knobs.at("algorithm")));
      else
        put(out, "<td>{}</td>", html_escape(it->second));
    }
    auto stat = [&](const HtmlGroupStat& s, double scale) {
      return s.n ? html_compact_text(s.median * scale) : std::string();
    };
    put(out,
        "<td class=\"num\">{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td "
        "class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
        g.members.size(), html_escape(status_text(g)), stat(g.throughput, 1),
        g.throughput.n > 1 ? html_compact_text(g.throughput.q25) + " - " + html_compact_text(g.throughput.q75) : "",
        stat(g.step_time, 1e3), stat(g.time_to_target, 1), stat(g.final_test_acc, 1));
  }
  put(out, "</tbody></table></div>");
}

}  // namespace

std::vector<std::pair<std::string, std::vector<size_t>>> html_group_facets(const HtmlRunGrouping& grouping) {
  std::vector<std::pair<std::string, std::vector<size_t>>> facets;
  for (size_t i = 0; i < grouping.groups.size(); ++i) {
    const std::string value = grouping.facet.empty() ? "" : grouping.groups[i].knobs.at(grouping.facet);
    if (facets.empty() || facets.back().first != value) facets.emplace_back(value, std::vector<size_t>{});
    facets.back().second.push_back(i);
  }
  return facets;
}

std::optional<HtmlGroupPivot> html_group_pivot(const HtmlRunGrouping& grouping, const std::vector<size_t>& groups) {
  std::vector<std::string> varying;
  for (const std::string& k : html_group_knobs()) {
    if (k == grouping.facet) continue;
    std::set<std::string> values;
    for (size_t i : groups)
      if (const auto it = grouping.groups[i].knobs.find(k); it != grouping.groups[i].knobs.end())
        values.insert(it->second);
    if (values.size() > 1) varying.push_back(k);
  }
  // "other" (a list of settings) is no axis: it can only split the heatmaps.
  const auto other = std::find(varying.begin(), varying.end(), "other");
  if (other != varying.end()) std::rotate(other, other + 1, varying.end());
  if (varying.size() < 2 || varying[1] == "other") return std::nullopt;
  return HtmlGroupPivot{varying[0], varying[1], std::vector<std::string>(varying.begin() + 2, varying.end())};
}

std::string html_configurations_section(const HtmlRunGrouping& grouping) {
  Buffer out;
  size_t runs = 0;
  for (const HtmlRunGroup& g : grouping.groups) runs += g.members.size();
  std::string varying;
  for (const std::string& k : grouping.varying) varying += (varying.empty() ? "" : ", ") + std::string(knob_title(k));
  put(out,
      "<section id=\"configurations\"><h2>Configurations ({} of {} runs)</h2><p class=\"note\">Repetitions of one "
      "configuration (every setting but the seed and the tag, on one machine) are one bar: the median of its "
      "completed runs, the interquartile range as a whisker, and n. Varying: {}{}.</p>",
      grouping.groups.size(), runs, varying.empty() ? "nothing" : varying,
      grouping.facet.empty() ? "" : fmt::format("; one chart per {}", knob_title(grouping.facet)));
  const auto facets = html_group_facets(grouping);
  for (size_t f = 0; f < facets.size(); ++f) {
    const auto& [value, groups] = facets[f];
    if (!grouping.facet.empty()) put(out, "<h3>{} {}</h3>", knob_title(grouping.facet), html_escape(value));
    put(out, "<div class=\"grid\">");
    for (const GroupMetric& m : bar_metrics) bar_chart(out, grouping, groups, m, fmt::format("groups-{}-{}", m.id, f));
    if (const auto pivot = html_group_pivot(grouping, groups)) pivot_heatmaps(out, grouping, groups, *pivot);
    put(out, "</div>");
  }
  configurations_table(out, grouping);
  put(out,
      "<p class=\"note\">Columns: the knobs that vary, with the workload and algorithm. A knob shown as · is not read "
      "by that algorithm (ssgd has no period). Statuses count "
      "every run of the configuration; medians count the completed ones.</p></section>");
  return fmt::to_string(out);
}

namespace {

struct Phase {
  const char* label;
  const char* color;
  double HtmlRunGroup::*seconds;
};

constexpr Phase phases[] = {
    {"data", "#9c755f", &HtmlRunGroup::data_s},
    {"compute (fwd+bwd+opt)", "#4e79a7", &HtmlRunGroup::compute_s},
    {"injected delay", "#b07aa1", &HtmlRunGroup::injected_s},
    {"wait", "#e15759", &HtmlRunGroup::wait_s},
    {"comm", "#f28e2b", &HtmlRunGroup::comm_s},
};
constexpr const char* overlap_color = "#59a14f";

}  // namespace

std::string html_group_breakdown_chart(const HtmlRunGrouping& grouping) {
  Buffer out;
  put(out,
      "<figure class=\"chart wide\" id=\"breakdown\"><figcaption>Time per step, by phase (ms; per configuration "
      "the median over its completed runs of each phase's mean over timed rank-steps; n runs). The thin bar under "
      "each is overlap: communication hidden inside compute, not added to the step.</figcaption>");
  std::vector<size_t> shown;
  for (size_t i = 0; i < grouping.groups.size(); ++i)
    if (grouping.groups[i].timed > 0) shown.push_back(i);
  if (shown.empty()) {
    put(out, "<p class=\"note\">No run with timed steps.</p></figure>");
    return fmt::to_string(out);
  }
  const double label_w = 280, right = 60, width = 1240;
  const double bar_h = std::clamp(1800.0 / static_cast<double>(shown.size()), 9.0, 18.0);
  const double row_h = bar_h + std::max(2.0, bar_h * 0.45);
  const double top = 8, axis_h = 40;
  const double height = top + row_h * static_cast<double>(shown.size()) + axis_h;
  double max_ms = 0;
  for (size_t i : shown) {
    const HtmlRunGroup& g = grouping.groups[i];
    double total = 0;
    for (const Phase& p : phases) total += std::isfinite(g.*p.seconds) ? std::max(0.0, g.*p.seconds * 1e3) : 0.0;
    max_ms = std::max({max_ms, total, g.overlap_s * 1e3});
  }
  const HtmlAxisScale scale = html_axis_scale(0, max_ms > 0 ? max_ms : 1, 8, false, true);
  const double pw = width - label_w - right;
  auto sx = [&](double ms) { return label_w + scale.fraction(ms) * pw; };
  put(out, "<svg viewBox=\"0 0 {} {:.0f}\" role=\"img\" aria-label=\"time breakdown per configuration\">", width,
      height);
  const std::vector<std::string> tick_texts = html_tick_texts(scale.ticks);
  for (size_t tick_index = 0; tick_index < scale.ticks.size(); ++tick_index) {
    const double t = scale.ticks[tick_index];
    put(out, "<line class=\"grid\" x1=\"{:.1f}\" y1=\"{}\" x2=\"{:.1f}\" y2=\"{:.1f}\"/>", sx(t), top, sx(t),
        height - axis_h);
    put(out, "<text class=\"tick\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>", sx(t),
        height - axis_h + 16, html_escape(tick_texts[tick_index]));
  }
  put(out, "<text class=\"axis\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">time per step (ms)</text>",
      label_w + pw / 2, height - 6);
  for (size_t k = 0; k < shown.size(); ++k) {
    const HtmlRunGroup& g = grouping.groups[shown[k]];
    const double y = top + row_h * static_cast<double>(k);
    std::string label = html_group_short_label(g, grouping);
    if (!grouping.facet.empty()) label = g.knobs.at(grouping.facet) + " " + label;
    put(out, "<g class=\"gbar\" data-n=\"{}\"><title>{} (n = {})</title>", g.timed, html_escape(g.label), g.timed);
    put(out, "<text class=\"tick\" x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>", label_w - 6,
        y + bar_h * 0.7, html_escape(fit_label(label, label_w - 8)));
    double x_ms = 0;
    for (const Phase& p : phases) {
      const double v = std::isfinite(g.*p.seconds) ? std::max(0.0, g.*p.seconds * 1e3) : 0.0;
      if (v <= 0) continue;
      put(out,
          "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.2f}\" height=\"{:.1f}\" fill=\"{}\"><title>{}: {} {:.4g} "
          "ms</title></rect>",
          sx(x_ms), y, sx(x_ms + v) - sx(x_ms), bar_h * 0.75, p.color, html_escape(g.label), p.label, v);
      x_ms += v;
    }
    put(out, "<text class=\"tick\" x=\"{:.1f}\" y=\"{:.1f}\">n={}</text>", sx(x_ms) + 4, y + bar_h * 0.7, g.timed);
    const double overlap = std::isfinite(g.overlap_s) ? g.overlap_s * 1e3 : 0.0;
    if (overlap > 0)
      put(out,
          "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.2f}\" height=\"{:.1f}\" fill=\"{}\"><title>{}: overlap "
          "{:.4g} ms</title></rect>",
          sx(0), y + bar_h * 0.78, sx(overlap) - sx(0), std::max(1.0, bar_h * 0.22), overlap_color,
          html_escape(g.label), overlap);
    put(out, "</g>");
  }
  put(out, "</svg><div class=\"legend\">");
  for (const Phase& p : phases) put(out, "<span><i style=\"background:{}\"></i>{}</span>", p.color, p.label);
  put(out, "<span><i style=\"background:{}\"></i>overlap (inside compute)</span></div></figure>", overlap_color);
  return fmt::to_string(out);
}

}  // namespace dsgd
