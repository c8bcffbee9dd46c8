// The HTML report's SVG building blocks (internal to the results/html_*.cpp files): the output
// buffer and its writers, the palette, and the line charts the report's sections draw.
#pragma once

#include <fmt/format.h>

#include <cmath>
#include <string>
#include <vector>

#include "results/html_report.hpp"

namespace dsgd::html_detail {

using Buffer = fmt::memory_buffer;

inline constexpr const char* palette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                          "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#8cd17d"};
inline constexpr size_t palette_size = sizeof palette / sizeof palette[0];
inline constexpr size_t legend_max = 24;

inline const char* color_of(size_t index) {
  return palette[index % palette_size];
}

template <typename... Args>
void put(Buffer& out, fmt::format_string<Args...> format, Args&&... args) {
  fmt::format_to(std::back_inserter(out), format, std::forward<Args>(args)...);
}

inline void put_text(Buffer& out, const std::string& text) {
  out.append(text.data(), text.data() + text.size());
}

inline std::string number_text(double v) {
  if (!std::isfinite(v)) return "";
  if (v == 0) return "0";
  return fmt::format("{:.4g}", v);
}

inline std::string run_label(const RunRecord& r) {
  std::string label = fmt::format("run {} {} {}w", r.id, r.algorithm, r.workers);
  if (!r.tag.empty()) label += " [" + r.tag + "]";
  return label;
}

struct Series {
  std::string id;     // data-s attribute: the run id or a group index (series sharing it share a legend entry)
  std::string label;  // hover text, and the legend's unless `legend` is set
  std::string legend;
  const char* color = "#888";
  std::vector<double> x, y;
  bool line = true;  // false: points only
};

struct LineChart {
  std::string id, title, x_label, y_label;
  std::vector<Series> series;
  bool y_from_zero = false;
  bool markers = false;    // dots at each point (short series)
  bool diagonal = false;   // draw y = x (predicted vs measured)
  bool x_integer = false;  // x is a count (workers): integer ticks only
};

// A line chart in a <figure>: axes, lines (downsampled per options), legend.
void line_chart(Buffer& out, LineChart chart, const HtmlReportOptions& options);

}  // namespace dsgd::html_detail
