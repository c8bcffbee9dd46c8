// The α-β network model (cluster/network_model): unit parsing by table (good and bad
// values, bits vs bytes), every collective formula against values computed by hand for
// n = 2, 4, 8 and S = 1 MiB, the hierarchical model, and the emulation hook (extra =
// emulated − native, never negative, called through the function pointer and honoured
// by Communicator). Limits: the hold's timing is checked loosely (sleep granularity, a
// busy machine).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <vector>

#include "cluster/communicator.hpp"
#include "cluster/network_model.hpp"
#include "cluster/straggler.hpp"
#include "core/clock.hpp"
#include "core/errors.hpp"
#include "null_communicator.hpp"

using namespace dsgd;

namespace {

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// Relative comparison for modelled seconds.
void expect_rel(double actual, double expected, const std::string& what) {
  EXPECT_NEAR(actual, expected, 1e-12 * std::abs(expected) + 1e-18) << what;
}

constexpr double kMiB = 1048576.0;
// The link of the formula table: α = 10 us, B = 1e9 bytes/s, so S/B = 1.048576e-3 s for 1 MiB.
const NetworkModel kFlat{LinkModel{1e-5, 1e9}, std::nullopt, 1};

}  // namespace

// ---- units ---------------------------------------------------------------------------------------

TEST(NetworkParse, BandwidthTable) {
  const struct {
    const char* text;
    double bytes_per_s;
  } cases[] = {
      {"10Gbps", 1.25e9},  {"100Mbps", 12.5e6},   {"1Gbit/s", 1.25e8},      {"25GB/s", 25e9},   {"500MB/s", 500e6},
      {"1e9bps", 1.25e8},  {"10 Gb/s", 1.25e9},   {"  2.5 Gbps ", 3.125e8}, {"8Gbps", 1e9},     {"1GB/s", 1e9},
      {"100kbps", 12.5e3}, {"100Kbps", 12.5e3},   {"10gbps", 1.25e9},       {"1Tbps", 1.25e11}, {"64kbits/s", 8e3},
      {"8kbps", 1e3},      {"3kB/s", 3e3},        {"1GiB/s", 1073741824},   {"2KiB/s", 2048},   {"1MiB/s", 1048576},
      {"4 kBytes/s", 4e3}, {"1.5MByte/s", 1.5e6},
  };
  for (const auto& c : cases) EXPECT_DOUBLE_EQ(network_parse_bandwidth(c.text), c.bytes_per_s) << c.text;
  // Bits vs bytes: 8 Gbit/s is 1 GB/s.
  EXPECT_DOUBLE_EQ(network_parse_bandwidth("8Gbps"), network_parse_bandwidth("1GB/s"));
}

TEST(NetworkParse, BandwidthErrorsNameFlagAndText) {
  const struct {
    const char* text;
    const char* message;
  } cases[] = {
      {"0", "--bandwidth 0: must be positive"},
      {"0Gbps", "--bandwidth 0Gbps: must be positive"},
      {"-1Gbps", "--bandwidth -1Gbps: must be positive"},
      {"10", "--bandwidth 10: missing unit"},
      {"nanGbps", "--bandwidth nanGbps: not a finite number"},
      {"infGbps", "--bandwidth infGbps: not a finite number"},
      {"fast", "--bandwidth fast: not a number"},
      {"Gbps", "--bandwidth Gbps: not a number"},
      {"", "--bandwidth '': empty value"},
      {"10GBps", "--bandwidth 10GBps: ambiguous unit 'GBps'"},
      {"10Gbs", "--bandwidth 10Gbs: unknown unit 'Gbs'"},
      {"10Xbps", "--bandwidth 10Xbps: unknown unit 'Xbps'"},
      {"10 G bps", "--bandwidth 10 G bps: unknown unit 'G bps'"},
      {"1e999bps", "--bandwidth 1e999bps: number out of range"},
      {"1e308Tbps", "--bandwidth 1e308Tbps: number out of range"},
  };
  for (const auto& c : cases) {
    const std::string msg = error_of([&] { network_parse_bandwidth(c.text); });
    EXPECT_NE(msg.find(c.message), std::string::npos) << "'" << c.text << "' gave: " << msg;
  }
  const std::string msg = error_of([] { network_parse_bandwidth("0", "--inter-bandwidth"); });
  EXPECT_NE(msg.find("--inter-bandwidth 0: must be positive"), std::string::npos) << msg;
}

TEST(NetworkParse, DurationTable) {
  const struct {
    const char* text;
    double seconds;
  } cases[] = {
      {"20us", 20e-6},    {"1ms", 1e-3},      {"0.5s", 0.5}, {"100ns", 100e-9}, {"2 ms", 2e-3},
      {"3\u00b5s", 3e-6}, {"3\u03bcs", 3e-6}, {"0", 0.0},    {"0us", 0.0},      {"1e-3s", 1e-3},
  };
  for (const auto& c : cases) EXPECT_DOUBLE_EQ(network_parse_duration(c.text), c.seconds) << c.text;
}

TEST(NetworkParse, DurationErrorsNameFlagAndText) {
  const struct {
    const char* text;
    const char* message;
  } cases[] = {
      {"-1ms", "--latency -1ms: must not be negative"},
      {"-0ms", "--latency -0ms: must not be negative"},
      {"5", "--latency 5: missing unit"},
      {"nanms", "--latency nanms: not a finite number"},
      {"1m", "--latency 1m: unknown unit 'm'"},
      {"1 sec", "--latency 1 sec: unknown unit 'sec'"},
      {"soon", "--latency soon: not a number"},
      {" ", "--latency ' ': empty value"},
  };
  for (const auto& c : cases) {
    const std::string msg = error_of([&] { network_parse_duration(c.text); });
    EXPECT_NE(msg.find(c.message), std::string::npos) << "'" << c.text << "' gave: " << msg;
  }
}

// Values that would hang a run (a link of 1 bit/s, a latency of 1e20 s) are refused with
// the range; the ends of the range are accepted.
TEST(NetworkParse, BandwidthAndLatencyHaveSaneRanges) {
  for (const char* text : {"1bps", "1e-30bps", "100bps", "20Tbps", "2TB/s"}) {
    const std::string msg = error_of([&] { network_parse_bandwidth(text); });
    EXPECT_NE(msg.find(fmt::format("--bandwidth {}: ", text)), std::string::npos) << msg;
    EXPECT_NE(msg.find("outside the range of an emulated link, 1 kbit/s to 10 Tbit/s"), std::string::npos) << msg;
  }
  EXPECT_DOUBLE_EQ(network_parse_bandwidth("1kbps"), 125.0);
  EXPECT_DOUBLE_EQ(network_parse_bandwidth("10Tbps"), 1.25e12);
  for (const char* text : {"1e20s", "61s", "1e12ms"}) {
    const std::string msg = error_of([&] { network_parse_duration(text); });
    EXPECT_NE(msg.find(fmt::format("--latency {}: must be at most 60 s", text)), std::string::npos) << msg;
  }
  EXPECT_DOUBLE_EQ(network_parse_duration("60s"), 60.0);
  const std::string msg = error_of([] { network_model_from_flags("1Gbps", "1e20s", "", "", 1); });
  EXPECT_NE(msg.find("--latency 1e20s: must be at most 60 s"), std::string::npos) << msg;
}

TEST(StragglerParse, ParametersHaveSaneRanges) {
  const struct {
    const char* spec;
    const char* message;
  } cases[] = {
      {"fixed:rank=0,delay=1e30ms", "delay 1e30ms: must be at most 3600 s"},
      {"random:p=0.5,delay=2h", "unknown unit 'h'"},
      {"periodic:rank=0,every=5,delay=3601s", "delay 3601s: must be at most 3600 s"},
      {"pareto:alpha=2,scale=1e9s", "scale 1e9s: must be at most 3600 s"},
      {"fixed:rank=0,factor=1e30", "factor = 1e30 must be a number in [1, 1000]"},
      {"lognormal:sigma=100", "sigma = 100 must be a number in [0, 4]"},
      {"pareto:alpha=0.01,scale=5ms", "alpha = 0.01 must be a number in [0.5, 1000]"},
      {"periodic:rank=0,every=1e30,delay=1ms", "every = 1e+30 is invalid"},
      {"periodic:rank=0,every=5,offset=1e30,delay=1ms", "offset = 1e30 must be a whole number in [0, 1e+09]"},
      {"periodic:rank=0,every=5,offset=1.5,delay=1ms", "offset = 1.5 must be a whole number"},
  };
  for (const auto& c : cases) {
    const std::string msg = error_of([&] { Stragglers::parse(c.spec, 2, 1); });
    EXPECT_NE(msg.find(c.message), std::string::npos) << c.spec << " gave: " << msg;
  }
  EXPECT_NO_THROW(Stragglers::parse("fixed:rank=0,delay=3600s;lognormal:sigma=4;pareto:alpha=0.5,scale=1s", 2, 1));
}

// The heavy tails are truncated at an hour per draw: a run never stalls for days on one step.
TEST(StragglerParse, HeavyTailDrawsAreTruncatedAtAnHour) {
  const Stragglers s = Stragglers::parse("lognormal:sigma=4;pareto:alpha=0.5,scale=3000s", 1, 3);
  double largest = 0;
  for (int64_t step = 0; step < 20000; ++step) largest = std::max(largest, s.delay_s(0, step, 100.0));
  EXPECT_LE(largest, 2 * kStragglerMaxDelayS);
  EXPECT_GT(largest, kStragglerMaxDelayS);  // both tails reached the cap at least once
}

// One distribution of factors for every rank.
ComputeJitter one_distribution(std::vector<double> factors) {
  ComputeJitter j;
  j.factors.push_back(std::move(factors));
  return j;
}

// The simulator's compute jitter: draws from the factors, deterministic per (seed, rank, step),
// its mean the factors' mean, part of delay_s beside the models, and never a spec's.
TEST(StragglerJitter, DrawsTheEmpiricalDistribution) {
  Stragglers s = Stragglers::parse("", 4, 7);
  EXPECT_TRUE(s.empty());
  s.set_jitter(one_distribution({1.0, 1.0, 1.5, 3.0}));  // mean 1.625
  EXPECT_FALSE(s.empty());                               // the alike-workers shortcut is off with a jitter
  double sum = 0;
  int threes = 0;
  const int draws = 40000;
  for (int64_t step = 0; step < draws / 4; ++step)
    for (int rank = 0; rank < 4; ++rank) {
      const double j = s.jitter_s(rank, step, 2.0);
      EXPECT_TRUE(j == 0.0 || j == 1.0 || j == 4.0) << j;  // (factor − 1) · 2 s
      EXPECT_EQ(j, s.delay_s(rank, step, 2.0));            // the only model here
      EXPECT_EQ(j, s.jitter_s(rank, step, 2.0));           // deterministic
      sum += 1 + j / 2.0;
      threes += j == 4.0;
    }
  EXPECT_NEAR(sum / draws, 1.625, 0.02);
  EXPECT_NEAR(double(threes) / draws, 0.25, 0.01);
  // Added to a straggler model's delay.
  Stragglers both = Stragglers::parse("fixed:rank=1,delay=5ms", 4, 7);
  both.set_jitter(one_distribution({1.0, 1.0, 1.5, 3.0}));
  EXPECT_DOUBLE_EQ(both.delay_s(1, 3, 2.0), 0.005 + both.jitter_s(1, 3, 2.0));
  EXPECT_DOUBLE_EQ(both.delay_s(0, 3, 2.0), both.jitter_s(0, 3, 2.0));
  // Factors that do not ascend from 1 are a bug of the caller.
  EXPECT_THROW(s.set_jitter(one_distribution({1.2, 1.5})), Error);
  EXPECT_THROW(s.set_jitter(one_distribution({1.0, 0.9})), Error);
  EXPECT_THROW(s.set_jitter(one_distribution({1.0})), Error);
  s.set_jitter(ComputeJitter{});
  EXPECT_TRUE(s.empty());
}

// One distribution per rank: each rank draws from its own (rank mod their count).
TEST(StragglerJitter, PerRankDistributionsKeepEachRanksSpeed) {
  Stragglers s = Stragglers::parse("", 4, 7);
  ComputeJitter j;
  j.factors = {{1.0, 1.0, 1.2}, {1.5, 1.5, 2.0}};
  s.set_jitter(j);
  for (int64_t step = 0; step < 2000; ++step)
    for (int rank = 0; rank < 4; ++rank) {
      const double d = s.jitter_s(rank, step, 2.0);
      if (rank % 2 == 0)
        EXPECT_TRUE(d == 0.0 || std::abs(d - 0.4) < 1e-12) << rank << " " << d;  // (factor − 1) · 2 s
      else
        EXPECT_TRUE(d == 1.0 || d == 2.0) << rank << " " << d;
    }
  // The lowest factor of all ranks is 1; each rank's ascend from at least 1, at least 2 values.
  for (const std::vector<std::vector<double>>& bad : std::vector<std::vector<std::vector<double>>>{
           {{1.1, 1.2}, {1.5, 2.0}}, {{1.0, 1.2}, {0.9, 2.0}}, {{1.0, 1.2}, {2.0, 1.5}}, {{1.0, 1.2}, {1.5}}}) {
    ComputeJitter b;
    b.factors = bad;
    EXPECT_THROW(s.set_jitter(b), Error);
  }
  s.set_jitter(ComputeJitter{});
  EXPECT_TRUE(s.empty());
}

// --compute-jitter replay: rank r's step s takes factors[r mod R][(s − first_step) mod K], in
// the measured order (not sorted), whatever the seed.
TEST(StragglerJitter, AReplayFollowsEachRanksStepsInOrder) {
  ComputeJitter j;
  j.factors = {{1.5, 1.0, 2.0}, {3.0, 1.25}};
  j.in_step_order = true;
  j.first_step = 10;
  for (uint64_t seed : {1u, 99u}) {
    Stragglers s = Stragglers::parse("", 4, seed);
    s.set_jitter(j);
    EXPECT_DOUBLE_EQ(s.jitter_s(0, 10, 2.0), 1.0);  // (1.5 − 1) · 2
    EXPECT_DOUBLE_EQ(s.jitter_s(0, 11, 2.0), 0.0);
    EXPECT_DOUBLE_EQ(s.jitter_s(0, 12, 2.0), 2.0);
    EXPECT_DOUBLE_EQ(s.jitter_s(0, 13, 2.0), 1.0);  // wraps
    EXPECT_DOUBLE_EQ(s.jitter_s(2, 11, 2.0), 0.0);  // rank 2 replays rank 0
    EXPECT_DOUBLE_EQ(s.jitter_s(1, 10, 2.0), 4.0);
    EXPECT_DOUBLE_EQ(s.jitter_s(3, 11, 2.0), 0.5);
    EXPECT_DOUBLE_EQ(s.jitter_s(1, 9, 2.0), 0.5);  // a step before first_step wraps backwards
  }
  // Unsorted is fine in a replay; below 1, or no factor of 1 at all, is not.
  Stragglers s = Stragglers::parse("", 2, 1);
  j.factors = {{1.5, 0.9}};
  EXPECT_THROW(s.set_jitter(j), Error);
  j.factors = {{1.5, 1.1}};
  EXPECT_THROW(s.set_jitter(j), Error);
}

// ---- the model from flags -----------------------------------------------------------------------

TEST(NetworkModelFromFlags, EmptyBandwidthMeansNoEmulation) {
  EXPECT_FALSE(network_model_from_flags("", "", "", "", 1).has_value());
  EXPECT_FALSE(network_model_from_flags("", "", "", "", 2).has_value());
}

TEST(NetworkModelFromFlags, LatencyDefaultsToZeroAndInterToIntra) {
  const auto flat = network_model_from_flags("100Mbps", "", "", "", 1);
  ASSERT_TRUE(flat);
  EXPECT_DOUBLE_EQ(flat->intra.bytes_per_s, 12.5e6);
  EXPECT_DOUBLE_EQ(flat->intra.alpha_s, 0.0);
  EXPECT_FALSE(flat->inter);
  EXPECT_EQ(flat->groups, 1);

  const auto only_lat = network_model_from_flags("10Gbps", "20us", "", "2ms", 2);
  ASSERT_TRUE(only_lat && only_lat->inter);
  EXPECT_DOUBLE_EQ(only_lat->inter->bytes_per_s, 1.25e9);  // from --bandwidth
  EXPECT_DOUBLE_EQ(only_lat->inter->alpha_s, 2e-3);
  EXPECT_EQ(only_lat->groups, 2);

  const auto only_bw = network_model_from_flags("10Gbps", "20us", "1Gbps", "", 2);
  ASSERT_TRUE(only_bw && only_bw->inter);
  EXPECT_DOUBLE_EQ(only_bw->inter->bytes_per_s, 1.25e8);
  EXPECT_DOUBLE_EQ(only_bw->inter->alpha_s, 20e-6);  // from --latency

  const auto none = network_model_from_flags("10Gbps", "20us", "", "", 2);
  ASSERT_TRUE(none);
  EXPECT_FALSE(none->inter);
  EXPECT_DOUBLE_EQ(network_inter_link(*none).bytes_per_s, 1.25e9);
}

TEST(NetworkModelFromFlags, Errors) {
  const struct {
    const char *bandwidth, *latency, *inter_bandwidth, *inter_latency;
    int groups;
    const char* message;
  } cases[] = {
      {"", "1ms", "", "", 1, "--latency 1ms: needs --bandwidth"},
      {"", "", "1Gbps", "", 2, "--inter-bandwidth 1Gbps: needs --bandwidth"},
      {"", "", "", "2ms", 2, "--inter-latency 2ms: needs --bandwidth"},
      {"10Gbps", "", "1Gbps", "", 1, "--inter-bandwidth 1Gbps: applies only between the groups"},
      {"10Gbps", "", "", "2ms", 1, "--inter-latency 2ms: applies only between the groups"},
      {"0", "", "", "", 1, "--bandwidth 0: must be positive"},
      {"1Gbps", "-1ms", "", "", 1, "--latency -1ms: must not be negative"},
      {"1Gbps", "", "0bps", "", 2, "--inter-bandwidth 0bps: must be positive"},
      {"1Gbps", "", "1Gbps", "x", 2, "--inter-latency x: not a number"},
  };
  for (const auto& c : cases) {
    const std::string msg = error_of(
        [&] { network_model_from_flags(c.bandwidth, c.latency, c.inter_bandwidth, c.inter_latency, c.groups); });
    EXPECT_NE(msg.find(c.message), std::string::npos) << "expected '" << c.message << "', got: " << msg;
  }
}

TEST(NetworkModel, Describe) {
  EXPECT_EQ(network_model_describe(*network_model_from_flags("100Mbps", "1ms", "", "", 1)), "intra 100 Mbit/s, 1 ms");
  EXPECT_EQ(network_model_describe(*network_model_from_flags("10Gbps", "20us", "1Gbps", "2ms", 2)),
            "intra 10 Gbit/s, 20 us; inter 1 Gbit/s, 2 ms (2 groups)");
  EXPECT_EQ(network_model_describe(*network_model_from_flags("25GB/s", "", "", "", 4)),
            "intra 200 Gbit/s, 0 s; inter 200 Gbit/s, 0 s (4 groups)");
}

// ---- collective formulas -----------------------------------------------------------------------------

// Hand-computed with α = 1e-5 s, S/B = 1.048576e-3 s, L = ⌈log2 n⌉:
//   n=2: S/(nB) = 5.24288e-4   n=4: 2.62144e-4   n=8: 1.31072e-4
TEST(NetworkCollectiveTime, FormulasByHand) {
  using K = CollKind;
  using A = CollAlgo;
  const struct {
    K kind;
    A algo;
    int n;
    double seconds;
    const char* how;
  } cases[] = {
      // all-reduce ring 2(n−1)(α + S/(nB))
      {K::coll_allreduce, A::algo_ring, 2, 1.068576e-3, "2·1·(1e-5 + 5.24288e-4)"},
      {K::coll_allreduce, A::algo_ring, 4, 1.632864e-3, "6·(1e-5 + 2.62144e-4)"},
      {K::coll_allreduce, A::algo_ring, 8, 1.975008e-3, "14·(1e-5 + 1.31072e-4)"},
      // recursive doubling L(α + S/B)
      {K::coll_allreduce, A::algo_recursive_doubling, 2, 1.058576e-3, "1·(1e-5 + 1.048576e-3)"},
      {K::coll_allreduce, A::algo_recursive_doubling, 4, 2.117152e-3, "2·1.058576e-3"},
      {K::coll_allreduce, A::algo_recursive_doubling, 8, 3.175728e-3, "3·1.058576e-3"},
      // tree 2L(α + S/B)
      {K::coll_allreduce, A::algo_tree, 2, 2.117152e-3, "2·1.058576e-3"},
      {K::coll_allreduce, A::algo_tree, 4, 4.234304e-3, "4·1.058576e-3"},
      {K::coll_allreduce, A::algo_tree, 8, 6.351456e-3, "6·1.058576e-3"},
      // Rabenseifner 2Lα + 2(n−1)/n·S/B
      {K::coll_allreduce, A::algo_rabenseifner, 2, 1.068576e-3, "2e-5 + 1·1.048576e-3"},
      {K::coll_allreduce, A::algo_rabenseifner, 4, 1.612864e-3, "4e-5 + 1.5·1.048576e-3"},
      {K::coll_allreduce, A::algo_rabenseifner, 8, 1.895008e-3, "6e-5 + 1.75·1.048576e-3"},
      // auto (one group): the minimum of ring, recursive doubling, Rabenseifner
      {K::coll_allreduce, A::algo_auto, 2, 1.058576e-3, "recursive doubling"},
      {K::coll_allreduce, A::algo_auto, 4, 1.612864e-3, "Rabenseifner"},
      {K::coll_allreduce, A::algo_auto, 8, 1.895008e-3, "Rabenseifner"},
      // hierarchical on one group = flat ring
      {K::coll_allreduce, A::algo_hierarchical, 4, 1.632864e-3, "ring"},
      // reduce-scatter / all-gather ring (n−1)(α + S/(nB))
      {K::coll_reduce_scatter, A::algo_ring, 2, 5.34288e-4, "1·(1e-5 + 5.24288e-4)"},
      {K::coll_reduce_scatter, A::algo_ring, 4, 8.16432e-4, "3·2.72144e-4"},
      {K::coll_reduce_scatter, A::algo_ring, 8, 9.87504e-4, "7·1.41072e-4"},
      {K::coll_allgather, A::algo_ring, 2, 5.34288e-4, "1·(1e-5 + 5.24288e-4)"},
      {K::coll_allgather, A::algo_ring, 4, 8.16432e-4, "3·2.72144e-4"},
      {K::coll_allgather, A::algo_ring, 8, 9.87504e-4, "7·1.41072e-4"},
      // recursive halving / doubling Lα + (n−1)/n·S/B
      {K::coll_reduce_scatter, A::algo_recursive_doubling, 2, 5.34288e-4, "1e-5 + 0.5·1.048576e-3"},
      {K::coll_reduce_scatter, A::algo_rabenseifner, 4, 8.06432e-4, "2e-5 + 0.75·1.048576e-3"},
      {K::coll_allgather, A::algo_recursive_doubling, 8, 9.47504e-4, "3e-5 + 0.875·1.048576e-3"},
      // tree: binomial reduce + scatter, L(α + S/B) + Lα + (n−1)/n·S/B
      {K::coll_reduce_scatter, A::algo_tree, 2, 1.592864e-3, "1.058576e-3 + 5.34288e-4"},
      {K::coll_allgather, A::algo_tree, 4, 2.923584e-3, "2.117152e-3 + 8.06432e-4"},
      {K::coll_reduce_scatter, A::algo_tree, 8, 4.123232e-3, "3.175728e-3 + 9.47504e-4"},
      {K::coll_allgather, A::algo_auto, 8, 9.47504e-4, "halving/doubling"},
      // broadcast binomial L(α + S/B)
      {K::coll_broadcast, A::algo_tree, 2, 1.058576e-3, "1·1.058576e-3"},
      {K::coll_broadcast, A::algo_tree, 4, 2.117152e-3, "2·1.058576e-3"},
      {K::coll_broadcast, A::algo_tree, 8, 3.175728e-3, "3·1.058576e-3"},
      // broadcast scatter + ring all-gather: Lα + (n−1)/n·S/B + (n−1)(α + S/(nB))
      {K::coll_broadcast, A::algo_ring, 2, 1.068576e-3, "5.34288e-4 + 5.34288e-4"},
      {K::coll_broadcast, A::algo_ring, 4, 1.622864e-3, "8.06432e-4 + 8.16432e-4"},
      {K::coll_broadcast, A::algo_ring, 8, 1.935008e-3, "9.47504e-4 + 9.87504e-4"},
      // broadcast scatter + recursive doubling all-gather: 2Lα + 2(n−1)/n·S/B
      {K::coll_broadcast, A::algo_recursive_doubling, 4, 1.612864e-3, "2·8.06432e-4"},
      {K::coll_broadcast, A::algo_rabenseifner, 8, 1.895008e-3, "2·9.47504e-4"},
      {K::coll_broadcast, A::algo_auto, 2, 1.058576e-3, "binomial"},
      {K::coll_broadcast, A::algo_auto, 8, 1.895008e-3, "scatter + doubling"},
      // barrier (dissemination) Lα
      {K::coll_barrier, A::algo_auto, 2, 1e-5, "1·1e-5"},
      {K::coll_barrier, A::algo_ring, 4, 2e-5, "2·1e-5"},
      {K::coll_barrier, A::algo_tree, 8, 3e-5, "3·1e-5"},
  };
  for (const auto& c : cases)
    expect_rel(network_collective_time(kFlat, c.kind, c.algo, kMiB, c.n), c.seconds,
               fmt::format("{} {} n={} = {}", coll_kind_name(c.kind), network_algo_name(c.algo), c.n, c.how));
}

TEST(NetworkCollectiveTime, PointToPointAndSmallMessages) {
  expect_rel(network_p2p_time(kFlat.intra, kMiB), 1.058576e-3, "α + S/B");
  // 1 KiB on 8 ranks: recursive doubling 3(1e-5 + 1.024e-6) = 3.3072e-5 wins over ring
  // 14(1e-5 + 1.28e-7) = 1.41792e-4 and Rabenseifner 6e-5 + 1.75·1.024e-6 = 6.1792e-5.
  expect_rel(network_collective_time(kFlat, CollKind::coll_allreduce, CollAlgo::algo_auto, 1024, 8), 3.3072e-5,
             "auto 1 KiB");
  // Non-power of two: ⌈log2 6⌉ = 3 rounds.
  expect_rel(network_collective_time(kFlat, CollKind::coll_barrier, CollAlgo::algo_auto, 0, 6), 3e-5, "barrier n=6");
}

TEST(NetworkCollectiveTime, OneRankCostsNothing) {
  const NetworkModel grouped{LinkModel{1e-5, 1e9}, LinkModel{1e-3, 1e8}, 2};
  for (const auto kind : {CollKind::coll_allreduce, CollKind::coll_broadcast, CollKind::coll_allgather,
                          CollKind::coll_reduce_scatter, CollKind::coll_barrier})
    for (const auto algo : {CollAlgo::algo_ring, CollAlgo::algo_tree, CollAlgo::algo_recursive_doubling,
                            CollAlgo::algo_rabenseifner, CollAlgo::algo_hierarchical, CollAlgo::algo_auto}) {
      EXPECT_EQ(network_collective_time(kFlat, kind, algo, kMiB, 1), 0.0);
      EXPECT_EQ(network_collective_time(grouped, kind, algo, kMiB, 1), 0.0);
      EXPECT_EQ(network_collective_time(kFlat, kind, algo, kMiB, 0), 0.0);
    }
}

TEST(NetworkCollectiveTime, HierarchicalOnOneGroupEqualsFlatRing) {
  for (const int n : {2, 3, 4, 8, 16})
    for (const double S : {0.0, 1024.0, kMiB, 4000004.0}) {
      const std::string what = fmt::format("n={} S={}", n, S);
      expect_rel(network_collective_time(kFlat, CollKind::coll_allreduce, CollAlgo::algo_hierarchical, S, n),
                 network_collective_time(kFlat, CollKind::coll_allreduce, CollAlgo::algo_ring, S, n), what);
      expect_rel(network_collective_time(kFlat, CollKind::coll_reduce_scatter, CollAlgo::algo_hierarchical, S, n),
                 network_collective_time(kFlat, CollKind::coll_reduce_scatter, CollAlgo::algo_ring, S, n), what);
      expect_rel(network_collective_time(kFlat, CollKind::coll_allgather, CollAlgo::algo_hierarchical, S, n),
                 network_collective_time(kFlat, CollKind::coll_allgather, CollAlgo::algo_ring, S, n), what);
      expect_rel(network_collective_time(kFlat, CollKind::coll_broadcast, CollAlgo::algo_hierarchical, S, n),
                 network_collective_time(kFlat, CollKind::coll_broadcast, CollAlgo::algo_tree, S, n), what);
    }
}

// G = 2 groups of W = 4: intra α = 1e-5, B = 1e9; inter α = 1e-3, B = 1e8; S = 1 MiB, S/W = 262144.
TEST(NetworkCollectiveTime, HierarchicalByHand) {
  const NetworkModel m{LinkModel{1e-5, 1e9}, LinkModel{1e-3, 1e8}, 2};
  // 2·3·(1e-5 + 2.62144e-4) + 2·1·(1e-3 + 262144/(2·1e8)) = 1.632864e-3 + 4.62144e-3
  expect_rel(network_collective_time(m, CollKind::coll_allreduce, CollAlgo::algo_hierarchical, kMiB, 8), 6.254304e-3,
             "hier all-reduce");
  // auto with groups > 1 is hierarchical
  expect_rel(network_collective_time(m, CollKind::coll_allreduce, CollAlgo::algo_auto, kMiB, 8), 6.254304e-3,
             "auto all-reduce");
  // 3·(1e-5 + 2.62144e-4) + 1·(1e-3 + 1.31072e-3)
  expect_rel(network_collective_time(m, CollKind::coll_reduce_scatter, CollAlgo::algo_hierarchical, kMiB, 8),
             3.127152e-3, "hier reduce-scatter");
  expect_rel(network_collective_time(m, CollKind::coll_allgather, CollAlgo::algo_auto, kMiB, 8), 3.127152e-3,
             "hier all-gather");
  // 1·(1e-3 + 1.048576e-2) + 2·(1e-5 + 1.048576e-3)
  expect_rel(network_collective_time(m, CollKind::coll_broadcast, CollAlgo::algo_hierarchical, kMiB, 8), 1.3602912e-2,
             "hier broadcast");
  // 2·2·1e-5 + 1·1e-3
  expect_rel(network_collective_time(m, CollKind::coll_barrier, CollAlgo::algo_auto, 0, 8), 1.04e-3, "hier barrier");
  // A flat ring on a grouped model runs at the bottleneck link (1e-3 s, 1e8 B/s):
  // 14·(1e-3 + 1048576/8e8) = 14·2.31072e-3
  expect_rel(network_collective_time(m, CollKind::coll_allreduce, CollAlgo::algo_ring, kMiB, 8), 3.235008e-2,
             "flat ring on groups");
  // Without inter flags the inter link is the intra link: hierarchical beats the flat ring
  // only by latency terms (same bandwidth term 2(n−1)/n·S/B).
  const NetworkModel same{LinkModel{1e-5, 1e9}, std::nullopt, 2};
  // 2·3·(1e-5 + 2.62144e-4) + 2·1·(1e-5 + 262144/2e9) = 1.632864e-3 + 2.82144e-4
  expect_rel(network_collective_time(same, CollKind::coll_allreduce, CollAlgo::algo_hierarchical, kMiB, 8), 1.915008e-3,
             "hier with inter = intra");
}

// ---- emulation ---------------------------------------------------------------------------------------

// Emulated 100 Mbit/s, 1 ms; native α = 10 us, B = 1e9; 2 ranks, S = 4,000,004 bytes (ring):
//   emulated 2·(1e-3 + 4000004/2.5e7) = 0.32200032, native 2·(1e-5 + 4000004/2e9) = 4.020004e-3.
TEST(NetworkEmulation, ExtraIsEmulatedMinusNative) {
  const NetworkModel emulated{LinkModel{1e-3, 12.5e6}, std::nullopt, 1};
  const NetworkEmulation emu(emulated, kFlat, 2, CollAlgo::algo_ring);
  const double S = 4000004;
  expect_rel(emu.predicted_s(CollKind::coll_allreduce, S), 0.32200032, "predicted");
  expect_rel(emu.extra_s(CollKind::coll_allreduce, S), 0.32200032 - 4.020004e-3, "extra");

  // Unknown native fabric: nothing subtracted.
  const NetworkEmulation unknown(emulated, std::nullopt, 2, CollAlgo::algo_ring);
  expect_rel(unknown.extra_s(CollKind::coll_allreduce, S), 0.32200032, "extra without native");
  // Default algorithm is auto: on 2 ranks recursive doubling, 1e-3 + 0.16000016·2.
  const NetworkEmulation by_auto(emulated, std::nullopt, 2);
  expect_rel(by_auto.predicted_s(CollKind::coll_allreduce, S), 0.32100032, "auto");
  // One rank: nothing to emulate.
  const NetworkEmulation one(emulated, std::nullopt, 1);
  EXPECT_EQ(one.extra_s(CollKind::coll_allreduce, S), 0.0);
}

// The native model is evaluated with the ring formulas whatever the emulated algorithm.
TEST(NetworkEmulation, NativeUsesRingAndCalibratedFit) {
  // A calibrated all-reduce line on 4 ranks: t = 1e-4 + 2·3/4·S/5e9 (bus bandwidth 5e9 B/s).
  const LinkModel fitted = network_link_from_allreduce_fit(1e-4, 5e9, 4);
  expect_rel(fitted.alpha_s, 1e-4 / 6, "α per ring message");
  EXPECT_EQ(fitted.bytes_per_s, 5e9);
  const NetworkModel native{fitted, std::nullopt, 1};
  // Ring gives the line back: 1e-4 + 1.5·1048576/5e9 = 1e-4 + 3.145728e-4.
  expect_rel(network_collective_time(native, CollKind::coll_allreduce, CollAlgo::algo_ring, kMiB, 4), 4.145728e-4,
             "fit reproduced");
  const NetworkModel emulated{LinkModel{1e-3, 12.5e6}, std::nullopt, 1};
  const NetworkEmulation emu(emulated, native, 4);  // emulated: auto
  expect_rel(emu.extra_s(CollKind::coll_allreduce, kMiB),
             network_collective_time(emulated, CollKind::coll_allreduce, CollAlgo::algo_auto, kMiB, 4) - 4.145728e-4,
             "auto emulated − ring native");
  // beta = 0 in the fit: infinite native bandwidth, only latency is subtracted.
  const LinkModel latency_only = network_link_from_allreduce_fit(6e-5, HUGE_VAL, 4);
  const NetworkEmulation emu_inf(emulated, NetworkModel{latency_only, std::nullopt, 1}, 4, CollAlgo::algo_ring);
  expect_rel(emu_inf.extra_s(CollKind::coll_allreduce, kMiB),
             network_collective_time(emulated, CollKind::coll_allreduce, CollAlgo::algo_ring, kMiB, 4) - 6e-5,
             "infinite native bandwidth");
  expect_rel(network_link_from_allreduce_fit(1e-4, 5e9, 1).alpha_s, 1e-4, "n = 1");
}

TEST(NetworkEmulation, ExtraIsNeverNegative) {
  // Emulating a network faster than the real one adds nothing.
  const NetworkModel slow{LinkModel{1e-3, 12.5e6}, std::nullopt, 1};
  const NetworkEmulation emu(kFlat, slow, 4);
  for (const auto kind : {CollKind::coll_allreduce, CollKind::coll_broadcast, CollKind::coll_allgather,
                          CollKind::coll_reduce_scatter, CollKind::coll_barrier})
    for (const double S : {0.0, 4.0, 1024.0, kMiB, 1e9}) {
      EXPECT_EQ(emu.extra_s(kind, S), 0.0) << coll_kind_name(kind) << " " << S;
      EXPECT_GE(NetworkEmulation(slow, kFlat, 4).extra_s(kind, S), 0.0);
    }
}

TEST(NetworkEmulation, RejectsInvalidModels) {
  const NetworkModel bad{LinkModel{1e-3, 0}, std::nullopt, 1};
  EXPECT_THROW(NetworkEmulation(bad, std::nullopt, 2), Error);
  EXPECT_THROW(NetworkEmulation(kFlat, bad, 2), Error);
  EXPECT_THROW(NetworkEmulation(kFlat, std::nullopt, 0), Error);
  // Infinite bandwidth is a native (calibrated) model's privilege.
  const NetworkModel infinite{LinkModel{1e-3, HUGE_VAL}, std::nullopt, 1};
  EXPECT_THROW(NetworkEmulation(infinite, std::nullopt, 2), Error);
  EXPECT_NO_THROW(NetworkEmulation(kFlat, infinite, 2));
}

TEST(NetworkEmulation, HookCallsThroughTheFunctionPointer) {
  const NetworkModel emulated{LinkModel{1e-3, 12.5e6}, LinkModel{5e-3, 1e6}, 2};
  const NetworkEmulation emu(emulated, kFlat, 8);
  const EmulationHook hook = emu.hook();
  ASSERT_NE(hook.extra_s, nullptr);
  EXPECT_EQ(hook.ctx, &emu);
  for (const auto kind : {CollKind::coll_allreduce, CollKind::coll_broadcast, CollKind::coll_barrier})
    for (const int ranks : {1, 2, 8}) {
      EXPECT_EQ(hook.extra_s(hook.ctx, kind, kMiB, ranks), emu.extra_s(kind, kMiB, ranks));
    }
  EXPECT_EQ(hook.extra_s(hook.ctx, CollKind::coll_allreduce, kMiB, 8), emu.extra_s(CollKind::coll_allreduce, kMiB));
  EXPECT_GT(hook.extra_s(hook.ctx, CollKind::coll_allreduce, kMiB, 8), 0.0);
}

namespace {

// A two-rank communicator whose collectives do nothing, to see the hold of the hook.
using NullPairCommunicator = dsgd::testing::NullCommunicator;

}  // namespace

TEST(NetworkEmulation, CommunicatorHoldsCollectives) {
  // 2 ranks, 1 Mbit/s (125,000 B/s), 5 ms: a 1,000-float all-reduce (4,000 bytes) by ring
  // takes 2·(5e-3 + 4000/(2·125000)) = 0.042 s; a barrier 5 ms.
  const NetworkModel emulated{LinkModel{5e-3, 125e3}, std::nullopt, 1};
  const NetworkEmulation emu(emulated, std::nullopt, 2, CollAlgo::algo_ring);
  NullPairCommunicator comm(2, "null-pair");
  comm.set_emulation(emu.hook());
  std::vector<float> data(1000, 1.0f);
  // The least of 3 holds: a busy machine only adds to a hold. The upper bounds catch a
  // hold applied twice.
  double allreduce_held = HUGE_VAL, barrier_held = HUGE_VAL;
  for (int rep = 0; rep < 3; ++rep) {
    double t0 = clock_now_s();
    comm.allreduce_sum(data.data(), data.size());
    allreduce_held = std::min(allreduce_held, clock_now_s() - t0);
    t0 = clock_now_s();
    comm.barrier();
    barrier_held = std::min(barrier_held, clock_now_s() - t0);
  }
  EXPECT_GE(allreduce_held, 0.042);
  EXPECT_LT(allreduce_held, 0.080);
  EXPECT_GE(barrier_held, 5e-3);
  EXPECT_LT(barrier_held, 9e-3);
}

// Protocol overhead: goodput = payload / wire for TCP/IPv4 over Ethernet, by hand:
// MTU 1500 → (1500 − 52) / (1500 + 38) = 1448 / 1538; jumbo 9000 → 8948 / 9038. The flags:
// auto takes the MTU's fraction, a number in (0, 1] is used as it is, anything else is refused
// naming the flag; the emulated links carry nominal × fraction, latency unchanged, and the
// description keeps the nominal rate.
TEST(NetworkModel, TcpGoodputFromMtu) {
  expect_rel(network_tcp_goodput_fraction(1500), 1448.0 / 1538.0, "MTU 1500");
  EXPECT_NEAR(network_tcp_goodput_fraction(1500), 0.94148, 1e-5);
  expect_rel(network_tcp_goodput_fraction(9000), 8948.0 / 9038.0, "MTU 9000");
  expect_rel(network_tcp_goodput_fraction(576), 524.0 / 614.0, "MTU 576");
  EXPECT_NE(error_of([] { network_tcp_goodput_fraction(67); }).find("--mtu 67"), std::string::npos);
  EXPECT_NE(error_of([] { network_tcp_goodput_fraction(65537); }).find("68..65536"), std::string::npos);

  int mtu_used = -1;
  expect_rel(network_link_efficiency("auto", 1500, &mtu_used), 1448.0 / 1538.0, "auto");
  EXPECT_EQ(mtu_used, 1500);
  EXPECT_EQ(network_link_efficiency("1", 1500, &mtu_used), 1.0);
  EXPECT_EQ(mtu_used, 0);
  EXPECT_EQ(network_link_efficiency("0.88", 9000), 0.88);
  for (const char* bad : {"0", "1.5", "-0.5", "fast", "", "0.9x"})
    EXPECT_NE(error_of([&] { network_link_efficiency(bad, 1500); }).find("--link-efficiency"), std::string::npos)
        << bad;
  EXPECT_NE(error_of([] { network_link_efficiency("1", 10); }).find("--mtu"), std::string::npos);

  const auto m = network_model_from_flags("100Mbps", "1ms", "", "", 1, "auto", 1500);
  ASSERT_TRUE(m);
  expect_rel(m->intra.bytes_per_s, 12.5e6 * 1448.0 / 1538.0, "goodput of 100 Mbit/s");
  expect_rel(m->intra.alpha_s, 1e-3, "latency unchanged");
  EXPECT_EQ(network_model_describe(*m),
            "intra 100 Mbit/s, 1 ms; goodput 0.9415 of nominal (TCP/IPv4 over Ethernet, MTU 1500)");
  const auto h = network_model_from_flags("10Gbps", "20us", "1Gbps", "2ms", 2, "0.9", 1500);
  ASSERT_TRUE(h && h->inter);
  expect_rel(h->inter->bytes_per_s, 1.25e8 * 0.9, "inter goodput");
  expect_rel(h->intra.bytes_per_s, 1.25e9 * 0.9, "intra goodput");
  EXPECT_EQ(network_model_describe(*h),
            "intra 10 Gbit/s, 20 us; inter 1 Gbit/s, 2 ms (2 groups); goodput 0.9000 of nominal (--link-efficiency)");
  // The default of the function (and --link-efficiency 1) keeps the nominal rate.
  expect_rel(network_model_from_flags("100Mbps", "", "", "", 1)->intra.bytes_per_s, 12.5e6, "nominal");
  // A 4 MB all-reduce on 2 ranks, recursive doubling (one exchange of S): 320 ms nominal,
  // 339.9 ms at MTU 1500.
  expect_rel(network_collective_time(*m, CollKind::coll_allreduce, CollAlgo::algo_auto, 4e6, 2),
             1e-3 + 4e6 / (12.5e6 * 1448.0 / 1538.0), "4 MB all-reduce");
}
