// See subset.hpp.
#include "workloads/datasets/subset.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/errors.hpp"

namespace dsgd {

std::vector<size_t> dataset_stratified_rows(const Dataset& ds, size_t n) {
  const size_t classes = static_cast<size_t>(std::max(ds.classes, 1));
  std::vector<std::vector<size_t>> by_class(classes);
  for (size_t i = 0; i < ds.rows; ++i) {
    const int32_t label = i < ds.labels.size() ? ds.labels[i] : 0;
    by_class[label >= 0 && static_cast<size_t>(label) < classes ? static_cast<size_t>(label) : 0].push_back(i);
  }
  // Each class's share of n, floored; the rows left go to the largest remainders (ties: the
  // lower class), so the shares sum to n.
  std::vector<size_t> take(classes);
  std::vector<std::pair<double, size_t>> remainders;
  size_t given = 0;
  for (size_t c = 0; c < classes; ++c) {
    const double share =
        static_cast<double>(n) * static_cast<double>(by_class[c].size()) / static_cast<double>(ds.rows);
    take[c] = static_cast<size_t>(std::floor(share));
    given += take[c];
    remainders.emplace_back(share - std::floor(share), c);
  }
  std::stable_sort(remainders.begin(), remainders.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  for (size_t k = 0; given < n && k < remainders.size(); ++k)
    if (take[remainders[k].second] < by_class[remainders[k].second].size()) {
      ++take[remainders[k].second];
      ++given;
    }
  std::vector<size_t> rows;
  rows.reserve(n);
  for (size_t c = 0; c < classes; ++c) {
    const std::vector<size_t>& all = by_class[c];
    for (size_t k = 0; k < take[c]; ++k) rows.push_back(all[k * all.size() / take[c]]);  // evenly spaced
  }
  std::sort(rows.begin(), rows.end());
  return rows;
}

size_t dataset_eval_windows(const Dataset& ds) {
  if (ds.tokens.empty() || ds.eval_stride == 0) return 0;
  return (ds.rows + ds.eval_stride - 1) / ds.eval_stride;
}

size_t dataset_eval_units(const Dataset& ds) {
  return ds.tokens.empty() ? ds.rows : dataset_eval_windows(ds);
}

namespace {

// n of the evaluation's windows, evenly spaced through the stream, stored end to end.
Dataset text_window_subset(const Dataset& ds, size_t n) {
  const size_t windows = dataset_eval_windows(ds);
  if (windows == 0)
    DSGD_THROW(Error, "load the text with its window set (dataset_set_window)",
               "--eval-subset: text dataset '{}' has no window length", ds.name);
  if (n == 0 || n >= windows)
    DSGD_THROW(InputError, fmt::format("pass --eval-subset below {} (0: the whole test set)", windows),
               "--eval-subset {}: the test text '{}' has {} evaluation windows of {} tokens", n, ds.name, windows,
               ds.window - 1);
  Dataset out;
  out.name = ds.name + fmt::format(" ({} of {} windows, evenly spaced)", n, windows);
  out.classes = ds.classes;
  out.tokens.reserve(n * ds.window);
  for (size_t i = 0; i < n; ++i) {
    const size_t start = (i * windows / n) * ds.eval_stride;
    out.tokens.insert(out.tokens.end(), ds.tokens.begin() + static_cast<std::ptrdiff_t>(start),
                      ds.tokens.begin() + static_cast<std::ptrdiff_t>(start + ds.window));
  }
  out.window = ds.window;
  out.rows = out.tokens.size() - out.window + 1;
  out.eval_stride = ds.window;  // the windows are separate: none shares a token with the next
  return out;
}

}  // namespace

Dataset dataset_stratified_subset(const Dataset& ds, size_t n) {
  if (!ds.tokens.empty()) return text_window_subset(ds, n);
  if (n == 0 || n >= ds.rows)
    DSGD_THROW(InputError, fmt::format("pass --eval-subset below {} (0: the whole test set)", ds.rows),
               "--eval-subset {}: the test set '{}' has {} rows", n, ds.name, ds.rows);
  const std::vector<size_t> rows = dataset_stratified_rows(ds, n);
  Dataset out;
  out.name = ds.name + fmt::format(" (stratified {} of {})", n, ds.rows);
  out.rows = rows.size();
  out.features = ds.features;
  out.classes = ds.classes;
  out.sparse = ds.sparse;
  out.channels = ds.channels;
  out.height = ds.height;
  out.width = ds.width;
  out.labels.reserve(rows.size());
  if (ds.sparse) {
    out.row_ptr.push_back(0);
    for (size_t r : rows) {
      for (int64_t k = ds.row_ptr[r]; k < ds.row_ptr[r + 1]; ++k) {
        out.col_idx.push_back(ds.col_idx[static_cast<size_t>(k)]);
        out.values.push_back(ds.values[static_cast<size_t>(k)]);
      }
      out.row_ptr.push_back(static_cast<int64_t>(out.values.size()));
    }
  } else {
    out.dense.resize(rows.size() * ds.features);
    for (size_t i = 0; i < rows.size(); ++i)
      std::copy_n(ds.dense.data() + rows[i] * ds.features, ds.features, out.dense.data() + i * ds.features);
  }
  for (size_t r : rows) out.labels.push_back(ds.labels[r]);
  return out;
}

double dataset_accuracy_ci95(double p, size_t n) {
  if (n == 0) return 1;
  return 1.959963984540054 * std::sqrt(std::max(0.0, p * (1 - p)) / static_cast<double>(n));
}

}  // namespace dsgd
