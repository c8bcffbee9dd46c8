// The BLAS core check: the table of what each OpenBLAS core needs, and, on this machine (or
// under scripts/test.sh's emulated CPU, which runs this test first), that the core OpenBLAS
// chose can run here: a clear failure instead of the SIGILL a wrong OPENBLAS_CORETYPE causes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>

#include "workloads/blas_core.hpp"

using namespace dsgd;

TEST(BlasCore, TableNamesWhatEachCoreNeeds) {
  const auto haswell = blas_core_required_features("Haswell");
  EXPECT_NE(std::find(haswell.begin(), haswell.end(), "avx2"), haswell.end());
  EXPECT_NE(std::find(haswell.begin(), haswell.end(), "fma"), haswell.end());
  const auto skx = blas_core_required_features("SKYLAKEX");  // OPENBLAS_CORETYPE is case-insensitive
  EXPECT_NE(std::find(skx.begin(), skx.end(), "avx512f"), skx.end());
  EXPECT_EQ(blas_core_required_features("Sandybridge"), std::vector<std::string>{"avx"});
  EXPECT_TRUE(blas_core_required_features("Nehalem").empty());
  EXPECT_TRUE(blas_core_required_features("Core2").empty());
  EXPECT_TRUE(blas_core_required_features("not-a-core").empty());
}

TEST(BlasCore, MissingFeaturesAreThoseTheCpuLacks) {
  EXPECT_TRUE(cpu_missing_features({}).empty());
  EXPECT_TRUE(cpu_missing_features({"some-unknown-feature"}).empty());
  // Whatever this CPU is, a feature it reports missing is one asked for.
  const std::vector<std::string> asked = {"avx", "avx2", "fma", "avx512f"};
  for (const std::string& f : cpu_missing_features(asked))
    EXPECT_NE(std::find(asked.begin(), asked.end(), f), asked.end()) << f;
  // AVX-512 implies AVX2 implies AVX: a CPU missing AVX misses the rest too.
  const auto missing = cpu_missing_features(asked);
  if (std::find(missing.begin(), missing.end(), "avx") != missing.end()) {
    EXPECT_NE(std::find(missing.begin(), missing.end(), "avx2"), missing.end());
  }
}

TEST(BlasCore, ChosenCoreRunsOnThisCpu) {
  const std::string core = blas_core_name();
  EXPECT_FALSE(core.empty()) << "openblas_get_corename() returned nothing";
  const char* forced = std::getenv("OPENBLAS_CORETYPE");
  EXPECT_EQ(blas_core_mismatch(), "") << "OpenBLAS core '" << core
                                      << "', OPENBLAS_CORETYPE=" << (forced != nullptr ? forced : "(unset)")
                                      << ": set the step's OPENBLAS_CORETYPE to a core this CPU can run";
  EXPECT_NO_THROW(blas_core_check());
}
