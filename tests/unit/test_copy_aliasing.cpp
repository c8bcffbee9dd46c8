// The start-up check for memory copies slowed by their buffers' placement
// (core/copy_aliasing.hpp): the tunable string kept with the user's own, and the timing.
#include <gtest/gtest.h>

#include <cmath>

#include "core/copy_aliasing.hpp"

namespace dsgd {
namespace {

TEST(CopyAliasing, TheTunableIsAppendedToTheUsersOwn) {
  EXPECT_EQ(copy_aliasing_tunables(nullptr), "glibc.cpu.x86_rep_movsb_threshold=0x1000000000000");
  EXPECT_EQ(copy_aliasing_tunables(""), "glibc.cpu.x86_rep_movsb_threshold=0x1000000000000");
  EXPECT_EQ(copy_aliasing_tunables("glibc.malloc.hugetlb=1"),
            "glibc.malloc.hugetlb=1:glibc.cpu.x86_rep_movsb_threshold=0x1000000000000");
}

TEST(CopyAliasing, BothPlacementsAreTimedOnX86Glibc) {
  double aliased = -1, clean = -1;
  copy_aliasing_measure(aliased, clean);
#if defined(__x86_64__) && defined(__GLIBC__)
  // A 32 KiB copy takes between a few hundred nanoseconds and a few hundred microseconds
  // (a loaded machine), never nothing and never a second.
  for (double t : {aliased, clean}) {
    EXPECT_TRUE(std::isfinite(t)) << t;
    EXPECT_GT(t, 1e-8);
    EXPECT_LT(t, 0.1);
  }
#else
  EXPECT_EQ(aliased, 0.0);
  EXPECT_EQ(clean, 0.0);
#endif
}

}  // namespace
}  // namespace dsgd
