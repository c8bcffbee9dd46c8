// core/stats.hpp: the median, quantiles (linear interpolation, numpy's default) and the
// relative interquartile range that profiles store as their spread.
#include <gtest/gtest.h>

#include <cmath>

#include "core/stats.hpp"

using namespace dsgd;

TEST(Stats, MedianAndQuantilesInterpolateBetweenOrderStatistics) {
  EXPECT_DOUBLE_EQ(stats_median({3, 1, 2}), 2);
  EXPECT_DOUBLE_EQ(stats_median({4, 1, 3, 2}), 2.5);
  EXPECT_TRUE(std::isnan(stats_median({})));
  // numpy.quantile([1, 2, 3, 4], [0, 0.25, 0.5, 0.75, 1]) = 1, 1.75, 2.5, 3.25, 4
  const std::vector<double> v = {4, 2, 1, 3};
  EXPECT_DOUBLE_EQ(stats_quantile(v, 0), 1);
  EXPECT_DOUBLE_EQ(stats_quantile(v, 0.25), 1.75);
  EXPECT_DOUBLE_EQ(stats_quantile(v, 0.5), 2.5);
  EXPECT_DOUBLE_EQ(stats_quantile(v, 0.75), 3.25);
  EXPECT_DOUBLE_EQ(stats_quantile(v, 1), 4);
  EXPECT_DOUBLE_EQ(stats_quantile({7}, 0.3), 7);
  EXPECT_TRUE(std::isnan(stats_quantile({}, 0.5)));
}

TEST(Stats, QuantilesKeepCensoredInfinity) {
  // The tuner's regrets and times: +infinity is "not reached".
  EXPECT_TRUE(std::isinf(stats_quantile({1, INFINITY, INFINITY}, 0.5)));
  EXPECT_TRUE(std::isinf(stats_quantile({1, 2, INFINITY}, 0.75)));
  EXPECT_DOUBLE_EQ(stats_quantile({1, 2, INFINITY}, 0.5), 2);
}

TEST(Stats, RelativeIqrIsTheSpreadOverTheMedian) {
  EXPECT_DOUBLE_EQ(stats_relative_iqr({5, 5, 5, 5}), 0);
  EXPECT_DOUBLE_EQ(stats_relative_iqr({1, 2, 3, 4}), (3.25 - 1.75) / 2.5);
  // One outlier in twenty barely moves it; a bimodal sample does.
  std::vector<double> steady(19, 10.0);
  steady.push_back(100);
  EXPECT_LT(stats_relative_iqr(steady), 0.01);
  std::vector<double> bimodal(10, 10.0);
  bimodal.insert(bimodal.end(), 10, 100.0);
  EXPECT_GT(stats_relative_iqr(bimodal), 1.0);
  EXPECT_TRUE(std::isnan(stats_relative_iqr({})));
  EXPECT_TRUE(std::isnan(stats_relative_iqr({0, 0, 0})));
}
