// Where the HTML history section's data comes from (see html_history.hpp): the series as
// `dsgd-bench history` loads them (runs or imported series, in git order where it applies),
// the stored annotations, and the summaries of their runs.
#include "results/html_history.hpp"

namespace dsgd {

HtmlHistoryInput html_history_load(const Store& store, const HistoryOptions& options) {
  HtmlHistoryInput input;
  input.options = options;
  const std::vector<RunWithSummary> runs = store.runs_list(0);
  input.series = history_load(store, options);
  input.annotations = annotations_list(store);
  for (const RunWithSummary& r : runs)
    if (r.summary) input.summaries.emplace(r.run.id, *r.summary);
  return input;
}

}  // namespace dsgd
