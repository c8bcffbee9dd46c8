// A calibration's measured collective curves (cluster/measured_fabric) and how the network
// model reads them: the sweep's points are given back exactly, interpolated between sizes,
// made non-decreasing, extrapolated along the last segment; a protocol jump that one α-β line
// misses is followed; other rank counts scale by the α-β ratio; point-to-point messages and
// one-sided accesses read their own curves; kinds without a curve and grouped models keep
// the α-β formulas; bad points are skipped.
#include <gtest/gtest.h>

#include <cmath>
#include <iterator>
#include <memory>
#include <vector>

#include "cluster/measured_fabric.hpp"
#include "cluster/network_model.hpp"
#include "core/errors.hpp"

using namespace dsgd;

namespace {

// An MPICH-like all-reduce on 2 ranks: 1 µs + S / 4 GB/s up to 16 KiB, then a jump to the
// rendezvous protocol (20 µs at 32 KiB) and S / 2 GB/s above.
std::vector<MeasuredPoint> jump_sweep() {
  std::vector<MeasuredPoint> p;
  for (double s = 4; s <= 16384; s *= 2) p.push_back({"allreduce", s, 1e-6 + s / 4e9});
  for (double s = 32768; s <= 4194304; s *= 2) p.push_back({"allreduce", s, 20e-6 + (s - 32768) / 2e9});
  return p;
}

NetworkModel model_with(std::vector<MeasuredPoint> points, int ranks = 2) {
  NetworkModel m{network_link_from_allreduce_fit(5e-6, 2e9, ranks), std::nullopt, 1};
  m.measured = std::make_shared<const MeasuredFabric>(measured_fabric_build(7, ranks, points));
  return m;
}

double allreduce(const NetworkModel& m, double bytes, int n) {
  return network_collective_time(m, CollKind::coll_allreduce, CollAlgo::algo_ring, bytes, n);
}

TEST(MeasuredFabric, GivesTheSweepBackAndInterpolatesBetweenSizes) {
  const NetworkModel m = model_with(jump_sweep());
  for (const MeasuredPoint& p : jump_sweep()) EXPECT_DOUBLE_EQ(allreduce(m, p.bytes, 2), p.seconds) << p.bytes;
  // Half way between 8 and 16 KiB: the mean of the two times (a straight segment).
  EXPECT_DOUBLE_EQ(allreduce(m, 12288, 2), 0.5 * ((1e-6 + 8192 / 4e9) + (1e-6 + 16384 / 4e9)));
  // Below the smallest size: the smallest size's time; above the largest: the last slope.
  EXPECT_DOUBLE_EQ(allreduce(m, 0, 2), 1e-6 + 4 / 4e9);
  EXPECT_NEAR(allreduce(m, 8388608, 2), 20e-6 + (8388608 - 32768) / 2e9, 1e-12);
}

TEST(MeasuredFabric, FollowsAProtocolJumpThatOneLineMisses) {
  // A calibration of a 2-core machine (MPICH 4 on shared memory, 2 ranks): the harness
  // all-reduce from 4 B to 4 MiB, and the α-β fit calibrate stored for it (α 1.10 µs, bus
  // bandwidth 2.48 GB/s). Between 16 and 32 KiB the time jumps 4.5x.
  const double sizes[] = {4,    8,     16,    32,    64,     128,    256,    512,     1024,    2048,   4096,
                          8192, 16384, 32768, 65536, 131072, 262144, 524288, 1048576, 2097152, 4194304};
  const double us[] = {0.759, 0.788, 1.449, 1.609, 1.744, 1.532, 1.605, 1.917, 2.158, 2.458, 3.102,
                       3.533, 4.676, 20.83, 34.62, 66.60, 111.9, 228.6, 489.1, 973.1, 1771.7};
  std::vector<MeasuredPoint> sweep;
  for (size_t i = 0; i < std::size(sizes); ++i) sweep.push_back({"allreduce", sizes[i], us[i] * 1e-6});
  const NetworkModel line{network_link_from_allreduce_fit(1.10e-6, 2.48e9, 2), std::nullopt, 1};
  NetworkModel curve = line;
  curve.measured = std::make_shared<const MeasuredFabric>(measured_fabric_build(1, 2, sweep));
  // The SVM's model: 7850 floats, 31,400 B, inside the jump.
  const double bytes = 31400;
  const double interpolated = (4.676 + (bytes - 16384) / 16384 * (20.83 - 4.676)) * 1e-6;
  EXPECT_NEAR(allreduce(curve, bytes, 2), interpolated, 1e-12);
  EXPECT_LT(allreduce(line, bytes, 2), 0.75 * interpolated) << "the straight line is 25+ % short inside the jump";
  // Far from the jump the two agree within the fit's error.
  EXPECT_NEAR(allreduce(line, 2097152, 2) / allreduce(curve, 2097152, 2), 1.0, 0.15);
}

TEST(MeasuredFabric, MakesTheCurveNonDecreasingAndSkipsBadPoints) {
  const MeasuredFabric f = measured_fabric_build(1, 2,
                                                 {{"allgather", 1024, 2e-6},
                                                  {"allgather", 2048, 1.5e-6},
                                                  {"allgather", 4096, 3e-6},
                                                  {"allgather", 8192, NAN},
                                                  {"allgather", -1, 1e-6},
                                                  {"allgather", 16384, -2.0},
                                                  {"allreduce_mpi", 64, 1.0},
                                                  {"onesided_get", 64, 1.0}});
  ASSERT_TRUE(f.curves[static_cast<size_t>(CollKind::coll_allgather)].has_value());
  const MeasuredCurve& c = *f.curves[static_cast<size_t>(CollKind::coll_allgather)];
  EXPECT_EQ(c.bytes, (std::vector<double>{1024, 2048, 4096}));
  EXPECT_EQ(c.seconds, (std::vector<double>{2e-6, 2e-6, 3e-6})) << "2048 B raised to 1024 B's time";
  // The bare library all-reduce and the get half of the one-sided epoch give no curve.
  EXPECT_FALSE(f.curves[static_cast<size_t>(CollKind::coll_allreduce)].has_value());
  EXPECT_FALSE(f.curves[static_cast<size_t>(CollKind::coll_onesided)].has_value());
  // A single size is not a curve.
  EXPECT_FALSE(measured_fabric_build(1, 2, {{"broadcast", 64, 1e-6}, {"broadcast", 64, 2e-6}})
                   .curves[static_cast<size_t>(CollKind::coll_broadcast)]
                   .has_value());
  EXPECT_THROW(measured_fabric_build(1, 1, {}), Error);
}

TEST(MeasuredFabric, ScalesToOtherRankCountsByTheRingRatio) {
  const NetworkModel m = model_with(jump_sweep());
  const double bytes = 1048576;
  const double measured = allreduce(m, bytes, 2);
  for (int n : {4, 8, 64}) {
    const double ratio = network_collective_time(NetworkModel{m.intra, std::nullopt, 1}, CollKind::coll_allreduce,
                                                 CollAlgo::algo_ring, bytes, n) /
                         network_collective_time(NetworkModel{m.intra, std::nullopt, 1}, CollKind::coll_allreduce,
                                                 CollAlgo::algo_ring, bytes, 2);
    EXPECT_NEAR(allreduce(m, bytes, n), measured * ratio, 1e-12 * measured * ratio) << n;
    EXPECT_GT(allreduce(m, bytes, n), measured) << "more ranks, more ring steps: " << n;
  }
  EXPECT_EQ(allreduce(m, bytes, 1), 0.0);
}

TEST(MeasuredFabric, MessagesAndOneSidedAccessesReadTheirOwnCurves) {
  const NetworkModel m = model_with(
      {{"sendrecv", 8, 1e-6}, {"sendrecv", 65536, 9e-6}, {"onesided_put", 8, 7e-6}, {"onesided_put", 65536, 15e-6}});
  EXPECT_DOUBLE_EQ(network_message_time(m, CollKind::coll_sendrecv, false, 65536), 9e-6);
  EXPECT_DOUBLE_EQ(network_message_time(m, CollKind::coll_onesided, false, 65536), 15e-6);
  // No all-reduce curve: the α-β line of the fit, whatever the other curves.
  const NetworkModel line{m.intra, std::nullopt, 1};
  EXPECT_DOUBLE_EQ(allreduce(m, 65536, 2), allreduce(line, 65536, 2));
  // A barrier never has a curve.
  EXPECT_DOUBLE_EQ(network_collective_time(m, CollKind::coll_barrier, CollAlgo::algo_ring, 0, 2),
                   network_collective_time(line, CollKind::coll_barrier, CollAlgo::algo_ring, 0, 2));
}

TEST(MeasuredFabric, GroupedModelsKeepTheFormulas) {
  NetworkModel m = model_with(jump_sweep());
  m.groups = 2;
  m.inter = LinkModel{1e-3, 1e8};
  NetworkModel plain = m;
  plain.measured.reset();
  EXPECT_DOUBLE_EQ(allreduce(m, 31744, 4), allreduce(plain, 31744, 4));
  EXPECT_DOUBLE_EQ(network_message_time(m, CollKind::coll_sendrecv, true, 1024),
                   network_p2p_time(LinkModel{1e-3, 1e8}, 1024));
}

TEST(MeasuredFabric, DescribesItsKindsAndRange) {
  const MeasuredFabric f = measured_fabric_build(3, 2, jump_sweep());
  EXPECT_EQ(measured_fabric_describe(f), "allreduce measured on 2 ranks at 4 B..4 MiB");
  EXPECT_EQ(measured_fabric_describe(measured_fabric_build(3, 2, {})), "no measured curve");
}

}  // namespace

// The after-compute ops give their own curves, which measured_fabric_after_compute puts in
// place of the back-to-back ones of the same kinds only; the description says so.
TEST(MeasuredFabric, AfterComputeCurvesReplaceOnlyTheirKinds) {
  std::vector<MeasuredPoint> points = jump_sweep();
  for (double s = 4; s <= 4194304; s *= 2) points.push_back({"allreduce_after_compute", s, 2 * (20e-6 + s / 2e9)});
  points.push_back({"sendrecv", 1024, 1e-6});
  points.push_back({"sendrecv", 4096, 2e-6});
  points.push_back({"sendrecv_bogus_after_compute", 4096, 9.0});
  const MeasuredFabric f = measured_fabric_build(3, 2, points);
  EXPECT_TRUE(measured_fabric_has_after_compute(f));
  EXPECT_FALSE(f.after_compute);
  EXPECT_EQ(measured_fabric_after_compute_kind("allreduce_after_compute"), CollKind::coll_allreduce);
  EXPECT_EQ(measured_fabric_after_compute_kind("allreduce"), std::nullopt);
  EXPECT_EQ(measured_fabric_after_compute_kind("sendrecv_bogus_after_compute"), std::nullopt);
  const MeasuredFabric after = measured_fabric_after_compute(f);
  EXPECT_TRUE(after.after_compute);
  EXPECT_DOUBLE_EQ(*measured_fabric_time(after, CollKind::coll_allreduce, 65536), 2 * (20e-6 + 65536 / 2e9));
  EXPECT_DOUBLE_EQ(*measured_fabric_time(f, CollKind::coll_allreduce, 65536), 20e-6 + (65536 - 32768) / 2e9);
  // A kind without an after-compute curve keeps its back-to-back one.
  EXPECT_DOUBLE_EQ(*measured_fabric_time(after, CollKind::coll_sendrecv, 4096), 2e-6);
  EXPECT_NE(measured_fabric_describe(after).find("; allreduce as timed after compute"), std::string::npos)
      << measured_fabric_describe(after);
  EXPECT_EQ(measured_fabric_describe(f).find("after compute"), std::string::npos);
  // Without after-compute points nothing changes.
  const MeasuredFabric plain = measured_fabric_build(4, 2, jump_sweep());
  EXPECT_FALSE(measured_fabric_has_after_compute(plain));
  EXPECT_FALSE(measured_fabric_after_compute(plain).after_compute);
}

namespace {

// Spreads (interquartile range / median) on an all-reduce sweep of 1, 2, 4, 8 KiB: only 4 KiB's
// repetitions disagree; the sendrecv curve records none.
MeasuredFabric noisy_at_4k() {
  std::vector<MeasuredPoint> p = {{"allreduce", 1024, 10e-6, 0.05}, {"allreduce", 2048, 12e-6, 0.1},
                                  {"allreduce", 4096, 15e-6, 1.5},  {"allreduce", 8192, 20e-6, 0.2},
                                  {"sendrecv", 1024, 5e-6},         {"sendrecv", 8192, 9e-6}};
  return measured_fabric_build(3, 2, p);
}

TEST(MeasuredFabricNoise, NamesTheWidestSpreadAmongThePointsAReadUses) {
  const MeasuredFabric f = noisy_at_4k();
  // 3 KiB and 6 KiB read the segments on either side of 4 KiB: both report it.
  for (const double bytes : {3072.0, 4096.0, 6000.0}) {
    const std::optional<MeasuredNoise> n = measured_fabric_noise(f, CollKind::coll_allreduce, bytes, 0.3);
    ASSERT_TRUE(n) << bytes;
    EXPECT_EQ(n->bytes, 4096) << bytes;
    EXPECT_DOUBLE_EQ(n->spread, 1.5) << bytes;
  }
  // Segments that do not touch 4 KiB, below the sweep (its first point), past it (the last
  // segment, 4..8 KiB: touches it).
  EXPECT_FALSE(measured_fabric_noise(f, CollKind::coll_allreduce, 1500, 0.3));
  EXPECT_FALSE(measured_fabric_noise(f, CollKind::coll_allreduce, 100, 0.3));
  EXPECT_TRUE(measured_fabric_noise(f, CollKind::coll_allreduce, 1e6, 0.3));
  // At a limit above it, nothing; 2 KiB's 10 % counts at a lower one.
  EXPECT_FALSE(measured_fabric_noise(f, CollKind::coll_allreduce, 3072, 2.0));
  const std::optional<MeasuredNoise> low = measured_fabric_noise(f, CollKind::coll_allreduce, 1500, 0.08);
  ASSERT_TRUE(low);
  EXPECT_EQ(low->bytes, 2048);
}

TEST(MeasuredFabricNoise, UnknownSpreadsAndMissingKindsSayNothing) {
  const MeasuredFabric f = noisy_at_4k();
  EXPECT_FALSE(measured_fabric_noise(f, CollKind::coll_sendrecv, 4096, 0.0));
  EXPECT_FALSE(measured_fabric_noise(f, CollKind::coll_broadcast, 4096, 0.0));
}

}  // namespace
