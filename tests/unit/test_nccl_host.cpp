// The NCCL backend's host-side logic, on machines without a GPU: the bootstrap message (rank 0's
// ncclUniqueId and what every rank must agree on), the conversion of device event times into
// the recorded CollEvents (docs/metrics.md's definitions), and the request table.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "cluster/device_requests.hpp"
#include "cluster/device_timing.hpp"
#include "cluster/nccl_bootstrap.hpp"
#include "core/errors.hpp"
#include "null_communicator.hpp"

namespace dsgd {
namespace {

// ---- bootstrap ----------------------------------------------------------------------------------

NcclBootstrap sample_bootstrap(int ranks) {
  NcclBootstrap b;
  b.ranks = ranks;
  b.nccl_version = 22803;
  b.cuda_runtime_version = 13000;
  for (size_t i = 0; i < b.unique_id.size(); ++i) b.unique_id[i] = uint8_t(i * 7 + 3);
  return b;
}

std::string decode_error(const std::array<uint8_t, kNcclBootstrapBytes>& bytes, int ranks, int nccl, int cuda) {
  try {
    nccl_bootstrap_decode(bytes.data(), bytes.size(), ranks, nccl, cuda, 1);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(NcclBootstrap, RoundTripsTheUniqueIdAndVersions) {
  const NcclBootstrap b = sample_bootstrap(4);
  const auto bytes = nccl_bootstrap_encode(b);
  EXPECT_EQ(std::memcmp(bytes.data(), "DSGDNCCL", 8), 0);
  const NcclBootstrap got = nccl_bootstrap_decode(bytes.data(), bytes.size(), 4, 22803, 13000, 1);
  EXPECT_EQ(got.ranks, 4);
  EXPECT_EQ(got.nccl_version, 22803);
  EXPECT_EQ(got.cuda_runtime_version, 13000);
  EXPECT_EQ(got.unique_id, b.unique_id);
}

TEST(NcclBootstrap, MismatchesAreClearErrors) {
  const auto bytes = nccl_bootstrap_encode(sample_bootstrap(4));
  EXPECT_NE(decode_error(bytes, 2, 22803, 13000).find("rank 0 expects 4 ranks, this rank's world has 2"),
            std::string::npos);
  EXPECT_NE(decode_error(bytes, 4, 22704, 13000).find("rank 0 runs NCCL 2.28.3, this rank NCCL 2.27.4"),
            std::string::npos);
  EXPECT_NE(decode_error(bytes, 4, 22803, 12080).find("CUDA runtime 13.0, this rank 12.8"), std::string::npos);
  auto flipped = bytes;
  flipped[40] ^= 1;  // a bit of the unique id
  EXPECT_NE(decode_error(flipped, 4, 22803, 13000).find("checksum"), std::string::npos);
  auto magic = bytes;
  magic[0] = 'X';
  EXPECT_NE(decode_error(magic, 4, 22803, 13000).find("magic"), std::string::npos);
  auto format = bytes;
  format[8] = 9;
  EXPECT_NE(decode_error(format, 4, 22803, 13000).find("format 9"), std::string::npos);
  EXPECT_THROW(nccl_bootstrap_decode(bytes.data(), 100, 4, 22803, 13000, 1), Error);
}

// Ranks of one job sharing a broadcast "wire": rank 0 writes it, the others read it.
class WireCommunicator final : public testing::NullCommunicator {
 public:
  WireCommunicator(int rank, int size, std::vector<double>& wire) : NullCommunicator(size, "wire", rank), wire_(wire) {}
  void untimed_broadcast(double* data, size_t count, int root) override {
    if (rank() == root)
      wire_.assign(data, data + count);
    else
      std::memcpy(data, wire_.data(), count * sizeof(double));
  }

 private:
  std::vector<double>& wire_;
};

TEST(NcclBootstrap, ExchangeGivesEveryRankRankZerosId) {
  std::vector<double> wire;
  const NcclBootstrap root = sample_bootstrap(3);
  WireCommunicator r0(0, 3, wire), r1(1, 3, wire), r2(2, 3, wire);
  EXPECT_EQ(nccl_bootstrap_exchange(r0, root, 22803, 13000).unique_id, root.unique_id);
  // The other ranks pass an empty message: only rank 0's is sent.
  EXPECT_EQ(nccl_bootstrap_exchange(r1, NcclBootstrap{}, 22803, 13000).unique_id, root.unique_id);
  EXPECT_EQ(nccl_bootstrap_exchange(r2, NcclBootstrap{}, 22803, 13000).unique_id, root.unique_id);
  WireCommunicator bigger(1, 4, wire);  // a rank of a different world
  EXPECT_THROW(nccl_bootstrap_exchange(bigger, NcclBootstrap{}, 22803, 13000), Error);
  WireCommunicator other_nccl(1, 3, wire);
  EXPECT_THROW(nccl_bootstrap_exchange(other_nccl, NcclBootstrap{}, 22900, 13000), Error);
}

// ---- device event times -> recorded events ------------------------------------------------------

TEST(DeviceTiming, BlockingOperationSpansStartToDone) {
  const DeviceClockAnchor a{100.0};
  const CollEvent e = coll_event_from_device(a, {0.010, 0.025, -1}, CollKind::coll_allreduce, 64);
  EXPECT_DOUBLE_EQ(e.arrive, 100.010);
  EXPECT_DOUBLE_EQ(e.depart, 100.025);
  EXPECT_EQ(e.launch, 0.0);  // blocking: no in-flight interval
  EXPECT_EQ(e.in_flight_until, 0.0);
  EXPECT_EQ(e.bytes_sent, 64);
  EXPECT_EQ(e.kind, int32_t(CollKind::coll_allreduce));
}

TEST(DeviceTiming, OverlappedRequestIsHiddenUntilTheComputeStreamWaits) {
  const DeviceClockAnchor a{10.0};
  // Started at 1 ms, the compute stream needed it at 3 ms, it finished at 5 ms: 2 ms overlapped,
  // 2 ms exposed (the compute stream waited from 3 to 5 ms).
  const CollEvent e = coll_event_from_device(a, {0.001, 0.005, 0.003}, CollKind::coll_allreduce, 8);
  EXPECT_DOUBLE_EQ(e.launch, 10.001);
  EXPECT_DOUBLE_EQ(e.in_flight_until, 10.003);
  EXPECT_DOUBLE_EQ(e.arrive, 10.003);
  EXPECT_DOUBLE_EQ(e.depart, 10.005);
  EXPECT_NEAR((e.in_flight_until - e.launch) + (e.depart - e.arrive), 0.004, 1e-12);  // overlap + exposed = span
}

TEST(DeviceTiming, RequestFinishedBeforeItWasNeededIsFullyHidden) {
  const DeviceClockAnchor a{0.0};
  const CollEvent e = coll_event_from_device(a, {0.001, 0.002, 0.004}, CollKind::coll_allgather, 8);
  EXPECT_DOUBLE_EQ(e.in_flight_until, 0.002);  // overlap = its whole duration
  EXPECT_DOUBLE_EQ(e.arrive, 0.004);
  EXPECT_DOUBLE_EQ(e.depart, 0.004);  // nothing exposed
}

TEST(DeviceTiming, ComputeWaitingBeforeTheStartOverlapsNothing) {
  // The compute stream reached the wait before the communication stream even started it
  // (the comm stream was busy): no overlap, everything from the wait point exposed.
  const CollEvent e =
      coll_event_from_device(DeviceClockAnchor{0.0}, {0.003, 0.006, 0.001}, CollKind::coll_allreduce, 8);
  EXPECT_DOUBLE_EQ(e.launch, 0.003);
  EXPECT_DOUBLE_EQ(e.in_flight_until, 0.003);
  EXPECT_DOUBLE_EQ(e.arrive, 0.001);
  EXPECT_DOUBLE_EQ(e.depart, 0.006);
}

// ---- request table -------------------------------------------------------------------------------

TEST(DeviceRequests, RecordsGoRoundInLaunchOrderAndOverflowIsAClearError) {
  DeviceRequestTable t(2);
  const int a = t.acquire(CollKind::coll_allreduce, 8, false);
  const int b = t.acquire(CollKind::coll_allgather, 4, false);
  EXPECT_EQ(a, 0);
  EXPECT_EQ(b, 1);
  EXPECT_EQ(t.in_flight(), 2);
  EXPECT_EQ(t.at(b).kind, CollKind::coll_allgather);
  EXPECT_FALSE(t.at(b).resolved);
  try {
    t.acquire(CollKind::coll_allreduce, 8, false);  // record 0 again, still in flight
    FAIL() << "no throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("more than 2"), std::string::npos) << e.what();
  }
  t.mark_complete(a);
  EXPECT_TRUE(t.at(a).complete);
  t.finish(a);
  EXPECT_EQ(t.in_flight(), 1);
  EXPECT_THROW(t.finish(a), Error);  // waited for twice
  EXPECT_EQ(t.next(), 0);
  EXPECT_THROW(t.acquire(CollKind::coll_broadcast, 0, true), Error);  // its times not read yet
  t.mark_resolved(a);
  EXPECT_EQ(t.acquire(CollKind::coll_broadcast, 0, true), 0);  // reused, reset
  EXPECT_FALSE(t.at(0).complete);
  EXPECT_TRUE(t.at(0).blocking);
  EXPECT_THROW(t.at(5), Error);
  EXPECT_EQ(DeviceRequestTable::event_index(1, RequestEvent::done, 1), 1 + kRequestEvents + 2);
}

}  // namespace
}  // namespace dsgd
