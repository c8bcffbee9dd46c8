// Change-point detection (results/change_points.hpp): the t distribution's tail against values
// integrated independently (and closed forms), the t test by hand, and the detector on series
// whose shifts are known: one step, two steps, none, a shift too small to keep, a shift at the
// very end (unconfirmed), a one-commit spike (a transient, not a change), serially correlated
// noise; deterministic, bad options refused; and a real series, TigerBeetle's benchmark as
// Apache Otava's tests ship it, found at the indices Otava finds.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "core/errors.hpp"
#include "results/change_points.hpp"
#include "results/history_import.hpp"

namespace dsgd {
namespace {

// Deterministic noise of a given relative size around `level` (a fixed pseudo-random sequence).
std::vector<double> flat(size_t n, double level, double noise, uint32_t seed) {
  std::vector<double> v(n);
  uint32_t x = seed * 2654435761u + 1;
  for (size_t i = 0; i < n; ++i) {
    x = x * 1664525u + 1013904223u;
    const double u = (x >> 8) / double(1 << 24) - 0.5;  // [-0.5, 0.5)
    v[i] = level * (1 + noise * u);
  }
  return v;
}

// The values of a history CSV file in tests/data/history, read by `track import`'s parser.
std::vector<double> history_csv_values(const std::string& name) {
  std::ifstream in(std::string(DSGD_TEST_DATA_DIR) + "/history/" + name);
  EXPECT_TRUE(in.good()) << name;
  std::stringstream text;
  text << in.rdbuf();
  std::vector<double> values;
  for (const ImportedPoint& p : history_import_parse(text.str(), name, {})) values.push_back(p.value);
  return values;
}

std::vector<double> join(std::vector<std::vector<double>> parts) {
  std::vector<double> v;
  for (const auto& p : parts) v.insert(v.end(), p.begin(), p.end());
  return v;
}

TEST(ChangePoints, StudentTTailMatchesReferenceValues) {
  // Two-sided p-values integrated numerically from the t density (midpoint rule, 2e5 points).
  EXPECT_NEAR(student_t_two_sided_p(2.0, 5), 0.10193947882994815, 1e-9);
  EXPECT_NEAR(student_t_two_sided_p(2.228138851986274, 10), 0.05, 1e-9);
  EXPECT_NEAR(student_t_two_sided_p(1.0, 3), 0.3910022189562019, 1e-9);
  EXPECT_NEAR(student_t_two_sided_p(3.5, 20), 0.002255123153055607, 1e-9);
  // df = 1 is the Cauchy distribution: p = 1 - 2 atan(t) / pi.
  EXPECT_NEAR(student_t_two_sided_p(0.5, 1), 1 - 2 * std::atan(0.5) / M_PI, 1e-12);
  EXPECT_NEAR(student_t_two_sided_p(-0.5, 1), 1 - 2 * std::atan(0.5) / M_PI, 1e-12);
  // Large df: the normal's 1.96.
  EXPECT_NEAR(student_t_two_sided_p(1.959963984540054, 1e7), 0.05, 1e-6);
  EXPECT_DOUBLE_EQ(student_t_two_sided_p(0, 7), 1.0);
  EXPECT_EQ(student_t_two_sided_p(INFINITY, 7), 0.0);
}

TEST(ChangePoints, StudentTTestByHand) {
  // a: mean 2, var 1; b: mean 5, var 1; pooled var 1, t = -3 / sqrt(2/3) = -3.674, df 4.
  const double p = student_t_test({1, 2, 3}, {4, 5, 6});
  EXPECT_NEAR(p, student_t_two_sided_p(3.0 / std::sqrt(2.0 / 3.0), 4), 1e-15);
  EXPECT_NEAR(p, 0.021311641128756, 1e-6);
  EXPECT_EQ(student_t_test({}, {1, 2}), 1.0);
  EXPECT_EQ(student_t_test({1}, {2}), 1.0);           // no degrees of freedom
  EXPECT_EQ(student_t_test({1, 1}, {2, 2}), 0.0);     // no spread, different means
  EXPECT_EQ(student_t_test({1, 1}, {1, 1, 1}), 1.0);  // no spread, same means
}

TEST(ChangePoints, OneStepIsFoundWhereItIs) {
  const auto v = join({flat(30, 1.0, 0.02, 1), flat(30, 1.1, 0.02, 2)});
  const auto cps = change_points_detect(v, ChangePointOptions{});
  ASSERT_EQ(cps.size(), 1u);
  EXPECT_EQ(cps[0].index, 30u);
  EXPECT_NEAR(cps[0].relative_change, 0.1, 0.01);
  EXPECT_LT(cps[0].pvalue, 1e-6);
  EXPECT_TRUE(cps[0].confirmed);
  EXPECT_EQ(cps[0].n_before, 30u);
  EXPECT_EQ(cps[0].n_after, 30u);
}

TEST(ChangePoints, TwoStepsInALongSeriesAcrossWindows) {
  // 150 points, windows of 50: a rise at 60 and a fall back at 110.
  const auto v = join({flat(60, 1.0, 0.02, 3), flat(50, 1.2, 0.02, 4), flat(40, 1.0, 0.02, 5)});
  const auto cps = change_points_detect(v, ChangePointOptions{});
  ASSERT_EQ(cps.size(), 2u);
  EXPECT_EQ(cps[0].index, 60u);
  EXPECT_EQ(cps[1].index, 110u);
  EXPECT_GT(cps[0].relative_change, 0.15);
  EXPECT_LT(cps[1].relative_change, -0.15);
}

TEST(ChangePoints, NoiseAloneHasNone) {
  for (uint32_t seed = 10; seed < 20; ++seed)
    EXPECT_TRUE(change_points_detect(flat(120, 1.0, 0.05, seed), ChangePointOptions{}).empty()) << seed;
  EXPECT_TRUE(change_points_detect({}, ChangePointOptions{}).empty());
  EXPECT_TRUE(change_points_detect({1.0}, ChangePointOptions{}).empty());
  EXPECT_TRUE(change_points_detect(std::vector<double>(40, 3.0), ChangePointOptions{}).empty());
}

TEST(ChangePoints, MinimumMagnitudeDropsASmallButSignificantShift) {
  const auto v = join({flat(40, 1.0, 0.002, 6), flat(40, 1.01, 0.002, 7)});  // +1 %, tiny noise
  ASSERT_EQ(change_points_detect(v, ChangePointOptions{}).size(), 1u);
  ChangePointOptions o;
  o.min_magnitude = 0.05;
  EXPECT_TRUE(change_points_detect(v, o).empty());
}

TEST(ChangePoints, AShiftAtTheEndIsUnconfirmed) {
  auto v = flat(40, 1.0, 0.01, 8);
  v.push_back(2.0);
  v.push_back(2.01);
  const auto cps = change_points_detect(v, ChangePointOptions{});
  ASSERT_EQ(cps.size(), 1u);
  EXPECT_EQ(cps[0].index, 40u);
  EXPECT_FALSE(cps[0].confirmed);  // 2 values after it, min_segment 3
  ChangePointOptions o;
  o.min_segment = 2;
  EXPECT_TRUE(change_points_detect(v, o)[0].confirmed);
}

TEST(ChangePoints, LogValuesReportTheRatio) {
  std::vector<double> v = join({flat(30, 1.0, 0.02, 9), flat(30, 2.0, 0.02, 10)});
  for (double& x : v) x = std::log(x);
  ChangePointOptions o;
  o.log_values = true;
  const auto cps = change_points_detect(v, o);
  ASSERT_EQ(cps.size(), 1u);
  EXPECT_NEAR(cps[0].relative_change, 1.0, 0.03);  // doubled
}

TEST(ChangePoints, AOneCommitSpikeIsATransientNotAChange) {
  // 60 commits at 1.0 with 2 % noise, one commit at 1.5 in the middle: the detector's split
  // finds the spike's two edges, and both are significant, but they are 1 commit apart.
  std::vector<double> v = flat(60, 1.0, 0.02, 21);
  v[30] = 1.5;
  EXPECT_TRUE(change_points_detect(v, ChangePointOptions{}).empty());
  // A level that lasts 4 commits (more than min_segment) is two changes, 4 apart.
  std::vector<double> w = join({flat(30, 1.0, 0.02, 22), flat(4, 1.5, 0.02, 23), flat(30, 1.0, 0.02, 24)});
  const auto cps = change_points_detect(w, ChangePointOptions{});
  ASSERT_EQ(cps.size(), 2u);
  EXPECT_EQ(cps[0].index, 30u);
  EXPECT_EQ(cps[1].index, 34u);
}

TEST(ChangePoints, SeriallyCorrelatedNoiseCountsFewerIndependentValues) {
  // AR(1) noise with phi = 0.9 and no change: wanders in long excursions, which the plain t
  // test takes for shifts; allowing for the autocorrelation keeps the p-values honest.
  std::vector<double> v(300);
  uint32_t x = 7;
  double e = 0;
  for (double& y : v) {
    x = x * 1664525u + 1013904223u;
    const double u = (x >> 8) / double(1 << 24) - 0.5;
    e = 0.9 * e + 0.02 * u;
    y = 1.0 + e;
  }
  ChangePointOptions plain;
  plain.autocorrelation = false;
  const size_t found_plain = change_points_detect(v, plain).size();
  const size_t found = change_points_detect(v, ChangePointOptions{}).size();
  EXPECT_GT(found_plain, 0u);
  EXPECT_LT(found, found_plain);
}

TEST(ChangePoints, DeterministicAndBadOptionsRefused) {
  const auto v = join({flat(70, 1.0, 0.05, 11), flat(70, 0.9, 0.05, 12)});
  const auto a = change_points_detect(v, ChangePointOptions{}), b = change_points_detect(v, ChangePointOptions{});
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].index, b[i].index);
    EXPECT_EQ(a[i].pvalue, b[i].pvalue);
  }
  ChangePointOptions bad;
  bad.window = 1;
  EXPECT_THROW(change_points_detect(v, bad), InputError);
  bad = {};
  bad.max_pvalue = 0;
  EXPECT_THROW(change_points_detect(v, bad), InputError);
  bad = {};
  bad.min_segment = 0;
  EXPECT_THROW(change_points_detect(v, bad), InputError);
  EXPECT_THROW(change_points_detect({1.0, NAN, 2.0}, ChangePointOptions{}), InputError);
}

// Otava's test of the TigerBeetle series (tests/tigerbeetle_test.py): window 30, min magnitude
// 0.05, max p-value 0.01 or 0.05, on the raw values, finds [15, 71]; at 0.2, [10, 11, 15, 71]. The
// same options here: no minimum segment beyond one value, the plain t test (Otava's), raw values.
// (At 0.1 Otava also keeps 363, the second value from the end, where this detector does not.)
TEST(ChangePoints, RealSeriesMatchesOtavasIndices) {
  const std::vector<double> series = history_csv_values("tigerbeetle.csv");
  ASSERT_EQ(series.size(), 365u);
  const std::pair<double, std::vector<size_t>> cases[] = {{0.01, {15, 71}}, {0.05, {15, 71}}, {0.2, {10, 11, 15, 71}}};
  for (const auto& [p, expected] : cases) {
    ChangePointOptions o;
    o.window = 30;
    o.max_pvalue = p;
    o.min_magnitude = 0.05;
    o.min_segment = 1;
    o.autocorrelation = false;
    std::vector<size_t> found;
    for (const ChangePoint& c : change_points_detect(series, o)) found.push_back(c.index);
    EXPECT_EQ(found, expected) << "max p-value " << p;
  }
}

// Otava's single-series test (tests/analysis_test.py): a halving at index 10 of 20 values,
// window 10, max p-value 1e-4.
TEST(ChangePoints, OtavasSingleSeriesHalving) {
  const std::vector<double> series = {1.02, 0.95, 0.99, 1.00, 1.12, 1.00, 1.01, 0.98, 1.01, 0.96,
                                      0.50, 0.51, 0.48, 0.48, 0.55, 0.50, 0.49, 0.51, 0.50, 0.49};
  ChangePointOptions o;
  o.window = 10;
  o.max_pvalue = 1e-4;
  o.min_segment = 1;
  o.autocorrelation = false;
  const std::vector<ChangePoint> found = change_points_detect(series, o);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].index, 10u);
}

}  // namespace
}  // namespace dsgd
