// Tests of `dsgd-bench compare`'s method: the Mann-Whitney U p-value against published
// values (scipy.stats.mannwhitneyu's documented example, R's wilcox.test example, and a
// tied case worked by hand), threshold parsing, and the verdicts on synthetic repetitions:
// identical runs pass, an injected straggler fails naming the metric, too few repetitions
// warn, nothing matched is an InputError.
#include <gtest/gtest.h>

#include <cmath>

#include "core/errors.hpp"
#include "results/compare_runs.hpp"
#include "results/compare_stats.hpp"
#include "stored_runs.hpp"

namespace dsgd {
namespace {

TEST(MannWhitney, ScipyDocumentedExample) {
  // scipy.stats.mannwhitneyu docs: males vs females, U = 17;
  // method="exact": p = 0.1111111111111111; the normal approximation: 0.11134688653314041.
  const std::vector<double> males = {19, 22, 16, 29, 24}, females = {20, 11, 17, 12};
  const MannWhitneyResult r = mann_whitney_u(males, females);
  EXPECT_DOUBLE_EQ(r.u, 17);
  EXPECT_TRUE(r.exact);
  EXPECT_NEAR(r.p_value, 0.1111111111111111, 1e-12);
  // The same data with one tie added (forces the normal approximation): 20 in both.
  // Worked by hand: pooled {11,12,16,17,19,20,20,22,24,29}; x = {19,22,16,29,24,20} has
  // ranks 5+8+3+10+9+6.5 = 41.5, U1 = 41.5 - 21 = 20.5, mu = 12, one tie pair:
  // sigma^2 = 24/12 (11 - 6/90) = 21.8667, z = (8.5 - 0.5)/4.67618 = 1.71080,
  // p = erfc(z / sqrt 2) = 0.087118.
  const MannWhitneyResult tied = mann_whitney_u({19, 22, 16, 29, 24, 20}, {20, 11, 17, 12});
  EXPECT_FALSE(tied.exact);
  EXPECT_DOUBLE_EQ(tied.u, 20.5);
  EXPECT_NEAR(tied.p_value, std::erfc(8.0 / std::sqrt(24.0 / 12.0 * (11.0 - 6.0 / 90.0)) / std::sqrt(2.0)), 1e-12);
  EXPECT_NEAR(tied.p_value, 0.087118, 5e-6);
}

TEST(MannWhitney, RWilcoxExample) {
  // R ?wilcox.test: x (10 values) vs y (5), W = 35, two-sided exact p = 0.2544 (the page
  // shows the one-sided 0.1272 for alternative = "greater").
  const std::vector<double> x = {0.80, 0.83, 1.89, 1.04, 1.45, 1.38, 1.91, 1.64, 0.73, 1.46};
  const std::vector<double> y = {1.15, 0.88, 0.90, 0.74, 1.21};
  const MannWhitneyResult r = mann_whitney_u(x, y);
  EXPECT_DOUBLE_EQ(r.u, 35);
  EXPECT_TRUE(r.exact);
  EXPECT_NEAR(r.p_value, 0.2544, 5e-5);
}

TEST(MannWhitney, ExtremesAndMinimumP) {
  // Complete separation of 3 vs 3: 2 / C(6,3) = 0.1; of 5 vs 5: 2/252.
  EXPECT_NEAR(mann_whitney_u({1, 2, 3}, {4, 5, 6}).p_value, 0.1, 1e-12);
  EXPECT_NEAR(mann_whitney_u({1, 2, 3, 4, 5}, {6, 7, 8, 9, 10}).p_value, 2.0 / 252.0, 1e-12);
  EXPECT_NEAR(mann_whitney_min_p(3, 3), 0.1, 1e-12);
  EXPECT_LT(mann_whitney_min_p(4, 4), 0.05);
  EXPECT_EQ(mann_whitney_min_p(1, 1), 1.0);
  // All values equal: no evidence at all.
  EXPECT_EQ(mann_whitney_u({2, 2, 2}, {2, 2, 2}).p_value, 1.0);
  // Large tied samples use the approximation and find a clear shift.
  std::vector<double> a(30, 1.0), b(30, 2.0);
  EXPECT_LT(mann_whitney_u(a, b).p_value, 1e-10);
}

TEST(MannWhitney, ExactAgreesWithNormalForLargerSamples) {
  std::vector<double> x, y;
  for (int i = 0; i < 20; ++i) {
    x.push_back(i * 1.0);
    y.push_back(i * 1.0 + 6.5);  // no ties
  }
  const MannWhitneyResult exact = mann_whitney_u(x, y);
  ASSERT_TRUE(exact.exact);
  const double mu = 200, sigma = std::sqrt(400.0 * 41 / 12);
  const double normal = std::erfc((std::fabs(exact.u - mu) - 0.5) / sigma / std::sqrt(2.0));
  EXPECT_NEAR(exact.p_value, normal, 0.01);
}

// A history run (tests/unit/stored_runs.hpp) with no commit, of this algorithm and tag, its
// time split 60/30/10 and this accuracy.
RunWithSummary make_run(int64_t id, double step_time, double acc, const std::string& tag = "",
                        const std::string& algorithm = "ssgd") {
  RunWithSummary rs = testing::history_run(id, "", step_time);
  rs.run.algorithm = algorithm;
  rs.run.period = 4;
  rs.run.tag = tag;
  rs.run.config_json = R"({"topology": "complete", "bandwidth": "", "overlap": false})";
  Summary& s = *rs.summary;
  s.compute_s = step_time * 0.6;
  s.comm_s = step_time * 0.3;
  s.wait_s = step_time * 0.1;
  s.final_test_acc = acc;
  s.final_test_loss = 0.3;
  s.timed_steps = 95;
  return rs;
}

std::vector<RunWithSummary> reps(int64_t first_id, int n, double step_time, double jitter, double acc) {
  std::vector<RunWithSummary> runs;
  for (int i = 0; i < n; ++i) runs.push_back(make_run(first_id + i, step_time * (1 + jitter * ((i % 3) - 1)), acc));
  return runs;
}

const CompareMetricResult& find_metric(const CompareGroup& g, const std::string& name) {
  for (const CompareMetricResult& m : g.metrics)
    if (m.metric.name == name) return m;
  throw std::runtime_error("no metric " + name);
}

TEST(Compare, IdenticalRepetitionsPass) {
  const auto base = reps(1, 9, 0.010, 0.01, 0.8);
  const CompareResult r = compare_runs(base, base, CompareOptions{});
  ASSERT_EQ(r.groups.size(), 1u);
  EXPECT_EQ(r.regressions, 0u);
  EXPECT_TRUE(r.warnings.empty()) << r.warnings.front();
  const auto& t = find_metric(r.groups[0], "throughput_samples_per_s");
  EXPECT_EQ(t.relative_change, 0);
  EXPECT_EQ(t.verdict, CompareVerdict::compare_ok);
  EXPECT_GT(t.p_value, 0.5);
}

TEST(Compare, StragglerRegressesNamingTheMetric) {
  // Candidate: every step 25 % slower (a straggler), 9 repetitions each, 1 % jitter.
  const auto base = reps(1, 9, 0.010, 0.01, 0.8);
  const auto cand = reps(100, 9, 0.0125, 0.01, 0.8);
  const CompareResult r = compare_runs(base, cand, CompareOptions{});
  EXPECT_GE(r.regressions, 2u);
  const auto& t = find_metric(r.groups[0], "throughput_samples_per_s");
  EXPECT_EQ(t.verdict, CompareVerdict::compare_regressed);
  EXPECT_NEAR(t.relative_change, -0.2, 0.01);
  EXPECT_LT(t.p_value, 0.001);
  EXPECT_TRUE(t.testable);
  EXPECT_EQ(find_metric(r.groups[0], "step_time_s").verdict, CompareVerdict::compare_regressed);
  EXPECT_EQ(find_metric(r.groups[0], "final_test_acc").verdict, CompareVerdict::compare_ok);
  const std::string md = compare_markdown(r, "base", "cand");
  EXPECT_NE(md.find("throughput_samples_per_s"), std::string::npos);
  EXPECT_NE(md.find("REGRESSED"), std::string::npos);
  const std::string junit = compare_junit(r);
  EXPECT_NE(junit.find("<failure message=\"throughput_samples_per_s regressed\""), std::string::npos) << junit;
  const nlohmann::json bigger = compare_benchmark_json(r, true);
  ASSERT_FALSE(bigger.empty());
  EXPECT_EQ(bigger[0]["unit"], "samples/s");
  EXPECT_NEAR(bigger[0]["value"].get<double>(), 128 / 0.0125, 1e-6);
  for (const auto& e : compare_benchmark_json(r, false))
    EXPECT_NE(e["name"].get<std::string>().find("_"), std::string::npos);
}

TEST(Compare, ImprovementAndNoise) {
  const auto base = reps(1, 9, 0.010, 0.01, 0.8);
  const CompareResult faster = compare_runs(base, reps(100, 9, 0.008, 0.01, 0.8), CompareOptions{});
  EXPECT_EQ(faster.regressions, 0u);
  EXPECT_EQ(find_metric(faster.groups[0], "throughput_samples_per_s").verdict, CompareVerdict::compare_improved);
  // Within the threshold: ok even when significant.
  const CompareResult small = compare_runs(base, reps(100, 9, 0.0102, 0.001, 0.8), CompareOptions{});
  EXPECT_EQ(find_metric(small.groups[0], "step_time_s").verdict, CompareVerdict::compare_ok);
  // Beyond the threshold but overlapping wildly: noise, not a regression (4 vs 4 is testable).
  std::vector<RunWithSummary> b, c;
  const double bt[] = {0.010, 0.014, 0.009, 0.015}, ct[] = {0.0105, 0.016, 0.0095, 0.0155};
  for (int i = 0; i < 4; ++i) {
    b.push_back(make_run(1 + i, bt[i], 0.8));
    c.push_back(make_run(10 + i, ct[i], 0.8));
  }
  CompareOptions tight;
  compare_parse_thresholds("1%", tight);
  const CompareResult noisy = compare_runs(b, c, tight);
  EXPECT_EQ(find_metric(noisy.groups[0], "step_time_s").verdict, CompareVerdict::compare_noise);
  EXPECT_EQ(noisy.regressions, 0u);
}

// Below 4 repetitions a side no p-value can reach 0.05: a change beyond the threshold is
// inconclusive (never a regression), with the repetitions that would settle it; the same
// change with 4 a side is a regression.
TEST(Compare, FewRepetitionsAreInconclusiveNotRegressed) {
  const CompareResult r = compare_runs(reps(1, 3, 0.010, 0.0, 0.8), reps(10, 3, 0.013, 0.0, 0.8), CompareOptions{});
  ASSERT_FALSE(r.warnings.empty());
  EXPECT_NE(r.warnings[0].find("few repetitions"), std::string::npos) << r.warnings[0];
  EXPECT_NE(r.warnings[0].find("inconclusive"), std::string::npos) << r.warnings[0];
  const auto& t = find_metric(r.groups[0], "throughput_samples_per_s");
  EXPECT_FALSE(t.testable);
  EXPECT_EQ(t.verdict, CompareVerdict::compare_inconclusive);
  EXPECT_NE(t.note.find("run 4 a side"), std::string::npos) << t.note;
  EXPECT_EQ(r.regressions, 0u);
  EXPECT_GE(r.inconclusive, 1u);
  EXPECT_EQ(r.repetitions_needed, 4u);
  EXPECT_NE(compare_markdown(r, "a", "b").find("Inconclusive"), std::string::npos);
  EXPECT_NE(compare_junit(r).find("<skipped message=\"worse than 5%"), std::string::npos);
  // Identical sides of 3: within the threshold, ok.
  const CompareResult same = compare_runs(reps(1, 3, 0.010, 0.0, 0.8), reps(10, 3, 0.010, 0.0, 0.8), CompareOptions{});
  EXPECT_EQ(same.inconclusive, 0u);
  EXPECT_EQ(same.regressions, 0u);
  // 4 a side, fully separated: p = 0.029 < 0.05, a regression.
  const CompareResult four = compare_runs(reps(1, 4, 0.010, 0.0, 0.8), reps(10, 4, 0.013, 0.0, 0.8), CompareOptions{});
  EXPECT_EQ(find_metric(four.groups[0], "throughput_samples_per_s").verdict, CompareVerdict::compare_regressed);
  EXPECT_GE(four.regressions, 1u);
}

TEST(Compare, PointThresholdForAccuracy) {
  const auto base = reps(1, 9, 0.010, 0.0, 0.800);
  CompareOptions options;
  compare_parse_thresholds("throughput=3%,final_test_acc=0.5pt", options);
  EXPECT_NEAR(options.per_metric.at("throughput_samples_per_s").value, 0.03, 1e-15);
  EXPECT_TRUE(options.per_metric.at("final_test_acc").points);
  // 0.4 points lower: ok; 0.6 points lower: regression (values identical across reps: ties).
  EXPECT_EQ(compare_runs(base, reps(20, 9, 0.010, 0.0, 0.796), options).regressions, 0u);
  const CompareResult worse = compare_runs(base, reps(20, 9, 0.010, 0.0, 0.794), options);
  EXPECT_EQ(worse.regressions, 1u);
  EXPECT_EQ(find_metric(worse.groups[0], "final_test_acc").verdict, CompareVerdict::compare_regressed);
}

TEST(Compare, ThresholdParsing) {
  CompareOptions o;
  compare_parse_thresholds("4%,acc=1pt,step_time=2.5%", o);
  EXPECT_NEAR(o.threshold.value, 0.04, 1e-15);
  EXPECT_NEAR(o.per_metric.at("final_test_acc").value, 0.01, 1e-15);
  EXPECT_NEAR(o.per_metric.at("step_time_s").value, 0.025, 1e-15);
  EXPECT_THROW(compare_parse_thresholds("5", o), InputError);
  EXPECT_THROW(compare_parse_thresholds("bogus=5%", o), InputError);
  EXPECT_THROW(compare_parse_thresholds("x%", o), InputError);
  EXPECT_THROW(compare_parse_thresholds("", o), InputError);
}

TEST(Compare, MatchingAndNothingMatched) {
  // Different algorithms never match: nothing to compare is an InputError naming both.
  std::vector<RunWithSummary> base = {make_run(1, 0.01, 0.8, "", "ssgd")};
  std::vector<RunWithSummary> cand = {make_run(2, 0.01, 0.8, "", "localsgd")};
  try {
    compare_runs(base, cand, CompareOptions{});
    FAIL() << "no error";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("nothing matched"), std::string::npos) << what;
    EXPECT_NE(what.find("baseline only: svm ssgd"), std::string::npos) << what;
    EXPECT_NE(what.find("candidate only: svm localsgd"), std::string::npos) << what;
  }
  // Another machine: no match unless --ignore-machine.
  RunWithSummary other = make_run(3, 0.01, 0.8);
  other.run.host = "node2";
  EXPECT_THROW(compare_runs(base, {other}, CompareOptions{}), InputError);
  CompareOptions ignore;
  ignore.ignore_machine = true;
  EXPECT_EQ(compare_runs(base, {other}, ignore).groups.size(), 1u);
  // A straggler setting does not split groups (it is what a gate must catch).
  RunWithSummary slow = make_run(4, 0.02, 0.8);
  slow.run.config_json =
      R"({"topology": "complete", "bandwidth": "", "overlap": false, "straggler": "fixed:rank=1,delay=10ms"})";
  EXPECT_EQ(compare_group_key(slow.run, false), compare_group_key(base[0].run, false));
  // A different bandwidth does.
  RunWithSummary slow_net = make_run(5, 0.02, 0.8);
  slow_net.run.config_json = R"({"topology": "complete", "bandwidth": "1Gbps", "overlap": false})";
  EXPECT_NE(compare_group_key(slow_net.run, false), compare_group_key(base[0].run, false));
  // Failed runs take no part; a side with none left is an error.
  RunWithSummary failed = make_run(6, 0.01, 0.8);
  failed.run.status = RunStatus::run_failed;
  EXPECT_THROW(compare_runs(base, {failed}, CompareOptions{}), InputError);
}

TEST(Compare, LostTargetIsARegression) {
  auto base = reps(1, 3, 0.010, 0.0, 0.8);
  auto cand = reps(10, 3, 0.010, 0.0, 0.8);
  for (auto& r : base) r.summary->time_to_target_s = 1.5;
  const CompareResult result = compare_runs(base, cand, CompareOptions{});
  EXPECT_EQ(find_metric(result.groups[0], "time_to_target_s").verdict, CompareVerdict::compare_regressed);
  EXPECT_EQ(result.regressions, 1u);
}

// A diverged run is a failure, never a fast run: its (fast) step time gives no sample, and
// a candidate that diverges where the baseline did not regresses on diverged_runs.
TEST(Compare, DivergedCandidateRegressesAndGivesNoSample) {
  auto base = reps(1, 3, 0.010, 0.0, 0.8);
  auto cand = reps(10, 3, 0.010, 0.0, 0.8);
  cand[1].run.status = RunStatus::run_diverged;
  cand[1].summary->step_time_s = 0.001;  // would look 10x faster
  const CompareResult result = compare_runs(base, cand, CompareOptions{});
  ASSERT_EQ(result.groups.size(), 1u);
  const CompareMetricResult& d = find_metric(result.groups[0], "diverged_runs");
  EXPECT_EQ(d.verdict, CompareVerdict::compare_regressed);
  EXPECT_NEAR(d.cand_median, 1.0 / 3.0, 1e-12);
  EXPECT_EQ(d.base_median, 0.0);
  EXPECT_EQ(find_metric(result.groups[0], "step_time_s").cand_n, 2u);
  EXPECT_TRUE(result.groups[0].regressed);
  EXPECT_EQ(result.regressions, 1u);
  // The same share of diverged runs on both sides: no regression from it.
  base[0].run.status = RunStatus::run_diverged;
  const CompareResult same = compare_runs(base, cand, CompareOptions{});
  EXPECT_EQ(find_metric(same.groups[0], "diverged_runs").verdict, CompareVerdict::compare_ok);
}

}  // namespace
}  // namespace dsgd
