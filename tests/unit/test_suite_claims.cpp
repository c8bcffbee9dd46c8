// Tests of suite claims (results/suite_claims.hpp): the verdict rule in each direction with
// absolute and relative margins, unreached targets, missing values; [[claims]] in a suite
// file naming [[runs]] entries by id; bad claims are InputErrors naming the claim and key.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <limits>

#include "core/errors.hpp"
#include "results/report_suite.hpp"
#include "results/store.hpp"
#include "results/suite_claims.hpp"

namespace dsgd {
namespace {

namespace fs = std::filesystem;

SuiteClaim claim(char op, double margin = 0, double margin_rel = 0) {
  SuiteClaim c;
  c.id = "c";
  c.text = "t";
  c.lhs = "a";
  c.rhs = "b";
  c.metric = "final_test_acc";
  c.op = op;
  c.margin = margin;
  c.margin_rel = margin_rel;
  return c;
}

std::string verdict(const SuiteClaim& c, std::optional<double> lhs, std::optional<double> rhs) {
  return suite_claim_evaluate(c, {lhs}, {rhs}).verdict;
}

TEST(SuiteClaims, GreaterNeedsTheMargin) {
  EXPECT_EQ(verdict(claim('>'), 0.81, 0.80), "reproduced");
  EXPECT_EQ(verdict(claim('>'), 0.80, 0.81), "not reproduced");
  EXPECT_EQ(verdict(claim('>'), 0.80, 0.80), "not reproduced");  // strict
  EXPECT_EQ(verdict(claim('>', 0.005), 0.804, 0.80), "not reproduced");
  EXPECT_EQ(verdict(claim('>', 0.005), 0.806, 0.80), "reproduced");
}

TEST(SuiteClaims, LessWithRelativeMargin) {
  // m = 10 % of rhs = 10: lhs must be below 90.
  EXPECT_EQ(verdict(claim('<', 0, 0.1), 89.0, 100.0), "reproduced");
  EXPECT_EQ(verdict(claim('<', 0, 0.1), 91.0, 100.0), "not reproduced");
  EXPECT_EQ(verdict(claim('<', 1, 0.1), 89.5, 100.0), "not reproduced");  // m = 1 + 10
}

TEST(SuiteClaims, SimilarWithinTheMargin) {
  EXPECT_EQ(verdict(claim('~', 0.01), 0.805, 0.80), "reproduced");
  EXPECT_EQ(verdict(claim('~', 0.01), 0.795, 0.80), "reproduced");
  EXPECT_EQ(verdict(claim('~', 0.01), 0.78, 0.80), "not reproduced");
  EXPECT_EQ(verdict(claim('~', 0.01), 0.82, 0.80), "not reproduced");
}

TEST(SuiteClaims, MeanOverRepetitionsAndMissingValues) {
  const ClaimResult r = suite_claim_evaluate(claim('>'), {0.7, 0.9, std::nullopt}, {0.79});
  EXPECT_DOUBLE_EQ(*r.lhs, 0.8);
  EXPECT_EQ(r.verdict, "reproduced");
  EXPECT_EQ(verdict(claim('>'), std::nullopt, 0.8), "not measured");
}

TEST(SuiteClaims, UnreachedTargetIsInfinitelyLate) {
  Summary reached, missed;
  reached.time_to_target_s = 12.5;
  EXPECT_DOUBLE_EQ(*suite_claim_metric(reached, "time_to_target_s"), 12.5);
  EXPECT_TRUE(std::isinf(*suite_claim_metric(missed, "time_to_target_s")));
  EXPECT_FALSE(suite_claim_metric(missed, "final_test_acc").has_value());
  SuiteClaim c = claim('<');
  c.metric = "time_to_target_s";
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(verdict(c, 12.5, inf), "reproduced");
  EXPECT_EQ(verdict(c, inf, 12.5), "not reproduced");
  EXPECT_EQ(verdict(c, inf, inf), "not reproduced");
  c.op = '~';
  EXPECT_EQ(verdict(c, inf, inf), "not reproduced");
}

TEST(SuiteClaims, UntestableCarriesItsReason) {
  SuiteClaim c;
  c.id = "x";
  c.text = "t";
  c.untestable = "needs 64 GPUs";
  const ClaimResult r = suite_claim_evaluate(c, {}, {});
  EXPECT_EQ(r.verdict, "not testable here");
  const std::string table = suite_claims_table({r});
  EXPECT_NE(table.find("needs 64 GPUs"), std::string::npos) << table;
  EXPECT_NE(table.find("1 not testable here"), std::string::npos) << table;
}

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("suite_claims_" + std::to_string(::getpid()));
  TempDir() {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(path / name) << text;
    return (path / name).string();
  }
};

const std::string kRuns = R"(
[defaults]
workers = 2
steps = 10
[[runs]]
id = "fast"
algo = "localsgd"
period = 4
[[runs]]
id = "slow"
algo = "ssgd"
[[matrix]]
algo = ["ssgd", "dpsgd"]
)";

std::string error_of(const TempDir& dir, const std::string& claims) {
  try {
    suite_load(dir.write("c.toml", kRuns + claims));
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(SuiteClaims, SuiteFileNamesRunsAndClaims) {
  TempDir dir;
  const Suite s = suite_load(dir.write("c.toml", kRuns + R"(
[[claims]]
id = "less-bytes"
text = "local SGD sends fewer bytes"
paper = "Stich 2019"
lhs = "fast"
rhs = "slow"
metric = "bytes_sent_per_step"
expect = "lhs<rhs"
margin_rel = 0.5
[[claims]]
id = "big"
text = "needs a cluster"
untestable = "64 workers"
)"));
  ASSERT_EQ(s.entries.size(), 4u);
  ASSERT_EQ(s.entry_ids.size(), 4u);
  EXPECT_EQ(s.entry_ids[0], "fast");
  EXPECT_EQ(s.entry_ids[1], "slow");
  EXPECT_EQ(s.entry_ids[2], "");
  EXPECT_FALSE(s.entries[0].contains("id"));  // not a run key
  ASSERT_EQ(s.claims.size(), 2u);
  EXPECT_EQ(s.claims[0].op, '<');
  EXPECT_DOUBLE_EQ(s.claims[0].margin_rel, 0.5);
  EXPECT_EQ(s.claims[0].paper, "Stich 2019");
  EXPECT_EQ(s.claims[1].untestable, "64 workers");
}

TEST(SuiteClaims, BadClaimsNameTheClaimAndKey) {
  TempDir dir;
  const std::string head = "[[claims]]\nid = \"k\"\ntext = \"t\"\n";
  const std::string full = head + "lhs = \"fast\"\nrhs = \"slow\"\nmetric = \"step_time_s\"\nexpect = \"lhs < rhs\"\n";
  EXPECT_EQ(error_of(dir, full), "");
  struct Case {
    std::string toml, want1, want2;
  };
  const std::vector<Case> cases = {
      {head + "lhs = \"nope\"\nrhs = \"slow\"\nmetric = \"step_time_s\"\nexpect = \"lhs < rhs\"\n", "claim 'k'",
       "'lhs' names no run 'nope'"},
      {head + "lhs = \"fast\"\nrhs = \"slow\"\nmetric = \"speed\"\nexpect = \"lhs < rhs\"\n", "claim 'k'",
       "unknown metric 'speed'"},
      {head + "lhs = \"fast\"\nrhs = \"slow\"\nmetric = \"step_time_s\"\nexpect = \"lhs <= rhs\"\n", "claim 'k'",
       "key 'expect'"},
      {head + "lhs = \"fast\"\nmetric = \"step_time_s\"\nexpect = \"lhs < rhs\"\n", "claim 'k'", "'rhs' is missing"},
      {full + "margin = -1\n", "claim 'k'", "'margin'"},
      {full + "colour = 1\n", "claim 'k'", "unknown key 'colour'"},
      {full + "untestable = \"why\"\n", "claim 'k'", "with 'untestable'"},
      {full + full, "claim 'k'", "repeats"},
      {"[[claims]]\ntext = \"t\"\n", "[[claims]] #1", "'id' is missing"},
  };
  for (const Case& c : cases) {
    const std::string e = error_of(dir, c.toml);
    EXPECT_NE(e.find(c.want1), std::string::npos) << c.toml << " -> " << e;
    EXPECT_NE(e.find(c.want2), std::string::npos) << c.toml << " -> " << e;
    EXPECT_NE(e.find("c.toml"), std::string::npos) << e;
  }
  // A repeated or empty run id.
  try {
    suite_load(dir.write("d.toml", "[[runs]]\nid = \"a\"\n[[runs]]\nid = \"a\"\n"));
    FAIL() << "repeated id accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("'a' names an earlier run"), std::string::npos) << e.what();
  }
}

// The shipped papers suite: its claims name existing runs (checked by the parser), some are
// declared not testable here with a reason.
TEST(SuiteClaims, PapersSuiteLoads) {
  const fs::path repo = fs::path(__FILE__).parent_path().parent_path().parent_path();
  const Suite s = suite_load((repo / "suites" / "papers.toml").string());
  EXPECT_EQ(s.name, "papers");
  EXPECT_GE(s.claims.size(), 15u);
  size_t untestable = 0;
  for (const SuiteClaim& c : s.claims) {
    EXPECT_FALSE(c.text.empty()) << c.id;
    if (!c.untestable.empty()) ++untestable;
  }
  EXPECT_GE(untestable, 1u);
  for (const auto& e : s.entries) EXPECT_EQ(e.at("backend"), "sim");
}

}  // namespace
}  // namespace dsgd
