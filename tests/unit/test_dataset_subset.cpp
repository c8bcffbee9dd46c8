// The class-stratified evaluation subset (workloads/datasets/subset.hpp): each class keeps its
// share, rows spread through the class, the copy holds the same values (dense, sparse,
// images), the same rows every time; text keeps evenly spaced whole windows; a subset as large
// as the set is refused.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "core/errors.hpp"
#include "workloads/datasets/subset.hpp"

namespace dsgd {
namespace {

Dataset dense_set(size_t rows, size_t features, int classes) {
  Dataset d;
  d.name = "t";
  d.rows = rows;
  d.features = features;
  d.classes = classes;
  d.dense.resize(rows * features);
  for (size_t i = 0; i < rows * features; ++i) d.dense[i] = static_cast<float>(i);
  // Unbalanced: class c has (c + 1) parts of every 10 rows (classes 0..3: 10 %, 20 %, 30 %, 40 %).
  for (size_t i = 0; i < rows; ++i) {
    const size_t m = i % 10;
    d.labels.push_back(m < 1 ? 0 : m < 3 ? 1 : m < 6 ? 2 : 3);
  }
  return d;
}

TEST(DatasetSubset, EachClassKeepsItsShareSpreadThroughTheSet) {
  const Dataset d = dense_set(1000, 3, 4);
  const std::vector<size_t> rows = dataset_stratified_rows(d, 100);
  ASSERT_EQ(rows.size(), 100u);
  std::map<int, size_t> per_class;
  for (size_t r : rows) ++per_class[d.labels[r]];
  EXPECT_EQ(per_class[0], 10u);
  EXPECT_EQ(per_class[1], 20u);
  EXPECT_EQ(per_class[2], 30u);
  EXPECT_EQ(per_class[3], 40u);
  EXPECT_TRUE(std::is_sorted(rows.begin(), rows.end()));
  EXPECT_LT(rows.front(), 20u);  // spread: from the start of the file ...
  EXPECT_GT(rows.back(), 950u);  // ... to its end
  // Shares that do not divide: 7 rows of 4 classes still sum to 7.
  EXPECT_EQ(dataset_stratified_rows(d, 7).size(), 7u);
  EXPECT_EQ(dataset_stratified_rows(d, 100), rows) << "the same rows every time";
}

TEST(DatasetSubset, CopiesDenseAndSparseRowsExactly) {
  Dataset d = dense_set(50, 3, 4);
  d.channels = 3;
  d.height = d.width = 1;
  const Dataset s = dataset_stratified_subset(d, 10);
  const std::vector<size_t> rows = dataset_stratified_rows(d, 10);
  ASSERT_EQ(s.rows, 10u);
  EXPECT_EQ(s.channels, 3u);
  EXPECT_EQ(s.classes, 4);
  for (size_t i = 0; i < s.rows; ++i) {
    EXPECT_EQ(s.labels[i], d.labels[rows[i]]);
    for (size_t f = 0; f < 3; ++f) EXPECT_EQ(s.dense[i * 3 + f], d.dense[rows[i] * 3 + f]);
  }
  // Sparse: row r has r % 3 non-zeros.
  Dataset sp;
  sp.name = "sp";
  sp.rows = 30;
  sp.features = 5;
  sp.classes = 2;
  sp.sparse = true;
  sp.row_ptr.push_back(0);
  for (size_t r = 0; r < sp.rows; ++r) {
    for (size_t k = 0; k < r % 3; ++k) {
      sp.col_idx.push_back(static_cast<int32_t>(k));
      sp.values.push_back(static_cast<float>(r * 10 + k));
    }
    sp.row_ptr.push_back(static_cast<int64_t>(sp.values.size()));
    sp.labels.push_back(static_cast<int32_t>(r % 2));
  }
  const Dataset ss = dataset_stratified_subset(sp, 6);
  const std::vector<size_t> srows = dataset_stratified_rows(sp, 6);
  ASSERT_EQ(ss.row_ptr.size(), 7u);
  for (size_t i = 0; i < 6; ++i) {
    const size_t r = srows[i];
    ASSERT_EQ(ss.row_ptr[i + 1] - ss.row_ptr[i], sp.row_ptr[r + 1] - sp.row_ptr[r]);
    for (int64_t k = 0; k < ss.row_ptr[i + 1] - ss.row_ptr[i]; ++k)
      EXPECT_EQ(ss.values[static_cast<size_t>(ss.row_ptr[i] + k)], sp.values[static_cast<size_t>(sp.row_ptr[r] + k)]);
  }
}

TEST(DatasetSubset, RefusesSubsetsAsLargeAsTheSet) {
  const Dataset d = dense_set(50, 3, 4);
  EXPECT_THROW(dataset_stratified_subset(d, 50), InputError);
  EXPECT_THROW(dataset_stratified_subset(d, 0), InputError);
}

// Text: the evaluation predicts the windows at multiples of window - 1; a subset is n of them,
// evenly spaced, copied end to end, and evaluated at a stride of the whole window.
TEST(DatasetSubset, TextKeepsEvenlySpacedWindowsWhole) {
  Dataset text;
  text.name = "text";
  text.classes = 256;
  for (int32_t i = 0; i < 1001; ++i) text.tokens.push_back(i % 251);
  dataset_set_window(text, 11);  // 10 tokens of context and their next tokens
  ASSERT_EQ(text.rows, 991u);
  ASSERT_EQ(dataset_eval_windows(text), 100u);  // starts 0, 10, ..., 990
  const Dataset s = dataset_stratified_subset(text, 7);
  EXPECT_EQ(s.window, 11u);
  EXPECT_EQ(s.eval_stride, 11u);
  ASSERT_EQ(s.tokens.size(), 77u);
  EXPECT_EQ(s.rows, 67u);
  EXPECT_EQ(dataset_eval_windows(s), 7u);
  for (size_t i = 0; i < 7; ++i) {
    const size_t start = i * 100 / 7 * 10;  // 0, 140, 280, ..., 850
    for (size_t k = 0; k < 11; ++k) ASSERT_EQ(s.tokens[i * 11 + k], text.tokens[start + k]) << i << " " << k;
  }
  EXPECT_EQ(s.tokens[6 * 11], text.tokens[850]) << "the last window is near the stream's end";
  EXPECT_THROW(dataset_stratified_subset(text, 100), InputError);  // every window: not a subset
  EXPECT_THROW(dataset_stratified_subset(text, 0), InputError);
  EXPECT_EQ(dataset_eval_windows(dense_set(50, 3, 4)), 0u);
}

TEST(DatasetSubset, AccuracyConfidenceInterval) {
  EXPECT_NEAR(dataset_accuracy_ci95(0.8, 1000), 1.96 * std::sqrt(0.16 / 1000), 1e-4);  // 2.5 points
  EXPECT_NEAR(dataset_accuracy_ci95(0.5, 10000), 0.0098, 1e-4);
  EXPECT_EQ(dataset_accuracy_ci95(1.0, 100), 0.0);
}

}  // namespace
}  // namespace dsgd
