// The HTML report's charts of configurations (results/html_run_groups.hpp), internal to
// results/html_report.cpp: per facet, one bar per configuration at its median with an IQR
// whisker and its n (throughput; time-to-target when a group reached its target), log scale
// where the values span decades; a pivot heatmap when two knobs vary within a facet (one per
// value of any further varying knob);
// the configurations table with only the knobs each algorithm reads; and the time breakdown,
// one stacked bar per configuration.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "results/html_run_groups.hpp"

namespace dsgd {

// The "Configurations" section: the bars, heatmaps and the table.
std::string html_configurations_section(const HtmlRunGrouping& grouping);

// The time-per-step breakdown: a stacked bar per configuration (medians over its completed
// runs with timed steps), with its n.
std::string html_group_breakdown_chart(const HtmlRunGrouping& grouping);

// The facets of a grouping: the group indices of each facet value, in order (one facet holding
// every group when there is no facet knob).
std::vector<std::pair<std::string, std::vector<size_t>>> html_group_facets(const HtmlRunGrouping& grouping);

// A pivot of a facet's groups: the first two knobs that vary within it (in html_group_knobs'
// order, the facet left out; never "other") as the heatmap's rows and columns, and the knobs
// that vary beyond those (one heatmap per combination of their values).
struct HtmlGroupPivot {
  std::string rows, cols;
  std::vector<std::string> rest;
};
// The pivot of these groups, when at least two knobs vary within them.
std::optional<HtmlGroupPivot> html_group_pivot(const HtmlRunGrouping& grouping, const std::vector<size_t>& groups);

}  // namespace dsgd
