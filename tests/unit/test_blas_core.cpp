// The BLAS core check: the table of what each OpenBLAS core needs, and, on this machine (or
// under scripts/test.sh's emulated CPU, which runs this test first), that the core OpenBLAS
// chose can run here: a clear failure instead of the SIGILL a wrong OPENBLAS_CORETYPE causes;
// and the switch to the fastest core this CPU runs where OpenBLAS's detection fell back.
#include <cblas.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

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

TEST(BlasCore, SwitchesToTheFastestCoreThisCpuRunsAndComputesTheSameProduct) {
  const std::string want = blas_core_for_cpu();
  EXPECT_TRUE(cpu_missing_features(blas_core_required_features(want)).empty()) << want;
  // A 64x48 by 48x32 product against the naive sum, before and after the switch.
  const int m = 64, k = 48, n = 32;
  std::vector<float> a(m * k), b(k * n), c(m * n), ref(m * n, 0.0f);
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>((i * 7) % 13) / 13.0f - 0.5f;
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>((i * 5) % 11) / 11.0f - 0.5f;
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j)
      for (int p = 0; p < k; ++p) ref[i * n + j] += a[i * k + p] * b[p * n + j];
  auto product_matches = [&] {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, c.data(), n);
    for (int i = 0; i < m * n; ++i)
      if (std::abs(c[i] - ref[i]) > 1e-5f * k) return false;
    return true;
  };
  EXPECT_TRUE(product_matches()) << "core " << blas_core_name();
  const char* forced = std::getenv("OPENBLAS_CORETYPE");
  const bool was_forced = forced != nullptr && *forced != '\0';
  const std::string before = blas_core_name();
  const std::string switched = blas_core_upgrade();
  if (was_forced) {
    EXPECT_EQ(switched, "") << "OPENBLAS_CORETYPE is the user's choice";
  }
  if (!switched.empty()) {
    EXPECT_EQ(switched, before + " -> " + blas_core_name());
    std::string name = blas_core_name(), lower_want = want;
    for (char& ch : name) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    for (char& ch : lower_want) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    EXPECT_EQ(name, lower_want);
    EXPECT_STREQ(std::getenv("OPENBLAS_CORETYPE"), want.c_str()) << "children load the same core";
  }
  EXPECT_EQ(blas_core_mismatch(), "");
  EXPECT_TRUE(product_matches()) << "core " << blas_core_name();
  EXPECT_EQ(blas_core_upgrade(), "") << "a second call switches nothing";
}
