// The HTML report's configurations: the selected runs grouped so that the repetitions of one
// configuration (every setting but the seed and the tag, on one machine) are one group with
// the median, quartiles and count of its completed runs; the knobs that vary among the groups
// (workload, algorithm, period H, batch, workers, network, machine, and "other": any further
// setting that differs, such as "compute-scale=1.3"), each group's value of
// each knob (none where the group's algorithm does not read it: ssgd has no period), the facet
// (the knob the charts are split by) and the groups' order (facet, then the varying knobs,
// numbers numerically). Drawn by results/html_group_charts.cpp.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "results/store.hpp"

namespace dsgd {

// Whether `algorithm` reads `knob` ("period", "topology"); null: every knob applies. The
// report's caller fills it from the algorithm registry (results does not link it).
using HtmlKnobApplies = std::function<bool(const std::string& algorithm, const std::string& knob)>;

// The knobs a group is described by, in the order they sort and facet.
const std::vector<std::string>& html_group_knobs();

struct HtmlGroupStat {
  size_t n = 0;  // completed runs with a finite value
  double median = 0, q25 = 0, q75 = 0;
};

struct HtmlRunGroup {
  std::string label;                         // compare's case label ("svm ssgd w2 b64 60steps (fashion-mnist)")
  std::vector<size_t> members;               // indices into the runs, in their order
  std::map<std::string, std::string> knobs;  // knob -> value; absent: the algorithm does not read it
  std::map<std::string, size_t> statuses;    // status text -> runs
  HtmlGroupStat throughput, step_time, time_to_target, final_test_acc;
  // Medians over the completed runs with timed steps, in seconds per step.
  double data_s = 0, compute_s = 0, injected_s = 0, wait_s = 0, comm_s = 0, overlap_s = 0;
  size_t timed = 0;  // runs behind those medians
};

struct HtmlRunGrouping {
  std::vector<HtmlRunGroup> groups;  // facet, then the varying knobs, in order
  std::vector<std::string> varying;  // knobs with more than one value among the groups
  std::string facet;                 // the knob the charts are split by (empty: one facet)
};

HtmlRunGrouping html_group_runs(const std::vector<RunWithSummary>& runs, const HtmlKnobApplies& applies);

// The value of a knob as a sort key: numbers numerically, then text.
bool html_knob_less(const std::string& a, const std::string& b);

// The text of a group's varying knobs other than the facet ("H=16 batch=64"); the label when
// none varies.
std::string html_group_short_label(const HtmlRunGroup& group, const HtmlRunGrouping& grouping);

}  // namespace dsgd
