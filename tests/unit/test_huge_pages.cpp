// Large buffers on 2 MiB pages (core/huge_pages.hpp): the allocator's alignment and plain-vector
// behaviour, what the machine's setting reads as, and the dataset's paging report. Whether the
// kernel does back a buffer with huge pages depends on the machine (its THP setting, free
// memory): recorded, not asserted; bench/svm_pages.sh measures what it changes.
#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <sstream>
#include <string>

#include "core/huge_pages.hpp"
#include "workloads/datasets/dataset.hpp"

using namespace dsgd;

TEST(HugePages, LargeBuffersAreHugePageAlignedAndBehaveAsVectors) {
  HugePageVector<float> big(3 * kHugePageBytes / sizeof(float) + 5, 1.5f);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(big.data()) % kHugePageBytes, 0u);
  EXPECT_EQ(std::accumulate(big.begin(), big.end(), 0.0), 1.5 * static_cast<double>(big.size()));
  HugePageVector<float> small(10, 2.0f);
  EXPECT_EQ(small.size(), 10u);
  HugePageVector<float> copy = big;
  EXPECT_EQ(copy, big);
  copy.push_back(1.0f);  // growth reallocates through the allocator
  EXPECT_EQ(copy.size(), big.size() + 1);
  HugePageVector<int32_t> empty;
  EXPECT_TRUE(empty.empty());
}

TEST(HugePages, TheMachineSettingAndTheBackedBytesAreReadable) {
  const std::string mode = huge_pages_mode();
  EXPECT_TRUE(mode == "always" || mode == "madvise" || mode == "never" || mode == "unavailable") << mode;
  HugePageVector<float> big(4 * kHugePageBytes / sizeof(float), 1.0f);
  const size_t bytes = big.size() * sizeof(float);
  const long long backed = huge_pages_backed_bytes(big.data(), bytes);
  EXPECT_GE(backed, -1);
  EXPECT_LE(backed, static_cast<long long>(bytes));
  ::testing::Test::RecordProperty("thp", mode);
  ::testing::Test::RecordProperty("huge_bytes", std::to_string(backed));
}

// The smaps reader on a known text: only mappings overlapping the range count, each at most
// by its overlap; field lines whose value looks like an address range are not headers.
TEST(HugePages, SmapsReaderCountsAnonHugePagesWithinTheRange) {
  const std::string smaps =
      "00400000-00600000 r-xp 00000000 08:01 123 /bin/x\n"
      "Size:               2048 kB\n"
      "AnonHugePages:      2048 kB\n"
      "7f0000000000-7f0000800000 rw-p 00000000 00:00 0\n"
      "Size:               8192 kB\n"
      "AnonHugePages:      6144 kB\n"
      "VmFlags: rd wr mr mw me ac hg\n"
      "7f0000800000-7f0001000000 rw-p 00000000 00:00 0\n"
      "AnonHugePages:      8192 kB\n";
  const uintptr_t base = 0x7f0000000000;
  auto read = [&](uintptr_t lo, size_t bytes) {
    std::istringstream in(smaps);
    return huge_pages_backed_bytes_in(in, lo, bytes);
  };
  EXPECT_EQ(read(base, size_t{8} << 20), 6144LL * 1024);                  // the first anonymous mapping
  EXPECT_EQ(read(base, size_t{16} << 20), (6144LL + 8192) * 1024);        // both
  EXPECT_EQ(read(base + (size_t{6} << 20), size_t{4} << 20), 4LL << 20);  // 2 MiB of each, capped by overlap
  EXPECT_EQ(read(0x1000, 0x1000), 0);                                     // nothing mapped there
}

TEST(HugePages, DatasetPagingCountsTheLargeArrays) {
  // 2,000 x 500 floats = 4 MB of features (one large array); the labels are not counted.
  const DatasetPair p = dataset_make_synthetic("n=2000,d=500,classes=2,test=10,sparse=false", 1);
  const DatasetPaging paging = dataset_paging(p.train);
  EXPECT_EQ(paging.bytes, 2000.0 * 500.0 * sizeof(float));
  EXPECT_EQ(paging.thp_mode, huge_pages_mode());
  const double f = paging.huge_fraction();
  EXPECT_TRUE(f == -1.0 || (f >= 0.0 && f <= 1.0)) << f;
  // A small test split has no array of 2 MiB: nothing to place, fraction 1.
  const DatasetPaging small = dataset_paging(p.test);
  EXPECT_EQ(small.bytes, 0.0);
  EXPECT_EQ(small.huge_fraction(), 1.0);
}
