// Tests of suite files: the shipped suites (suites/smoke.toml, suites/standard.toml) load
// and expand with valid run keys; matrices expand to every combination; unknown keys,
// wrong types, invalid values and db/tag keys are InputErrors naming the file; suite
// lookup by name.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/errors.hpp"
#include "results/report_suite.hpp"

namespace dsgd {
namespace {

namespace fs = std::filesystem;

const fs::path repo = fs::path(__FILE__).parent_path().parent_path().parent_path();

struct TempDir {
  fs::path path = fs::temp_directory_path() / ("report_suite_" + std::to_string(::getpid()));
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

std::string error_of(const std::string& file) {
  try {
    suite_load(file);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// A dotted key of 50,000 parts overflowed the TOML parser's stack (exit 139): refused first.
TEST(Suite, DeepNestingIsRefusedBeforeParsing) {
  TempDir dir;
  std::string key = "a";
  for (int i = 0; i < 50000; ++i) key += ".a";
  const std::string e = error_of(dir.write("deep.toml", key + " = 1\n"));
  EXPECT_NE(e.find("deep.toml"), std::string::npos) << e;
  EXPECT_NE(e.find("dots"), std::string::npos) << e;
}

TEST(Suite, ShippedSuitesLoad) {
  const Suite smoke = suite_load((repo / "suites" / "smoke.toml").string());
  EXPECT_EQ(smoke.name, "smoke");
  EXPECT_GE(smoke.entries.size(), 4u);
  std::set<std::string> algos, workloads;
  for (const auto& e : smoke.entries) {
    EXPECT_EQ(e.at("workers"), 2);
    algos.insert(e.value("algo", "ssgd"));
    workloads.insert(e.value("workload", "svm"));
  }
  EXPECT_TRUE(algos.count("ssgd") && algos.count("localsgd"));
  // The smoke suite covers all three workloads and the main algorithms.
  EXPECT_EQ(workloads, (std::set<std::string>{"svm", "resnet", "transformer"}));
  const Suite standard = suite_load((repo / "suites" / "standard.toml").string());
  EXPECT_EQ(standard.name, "standard");
  EXPECT_EQ(standard.entries.size(), 2u * 2 * 3 + 2u * 2 * 3 + 2u + 6u * 2 + 2u * 2 + 2u * 2);
}

TEST(Suite, MatrixDefaultsAndOverrides) {
  TempDir dir;
  const std::string file = dir.write("m.toml", R"(
name = "m"
[defaults]
steps = 10
weight_decay = 0.5
[[matrix]]
algo = ["ssgd", "localsgd"]
workers = [1, 2, 3]
[[runs]]
algo = "localsgd"
weight-decay = 0.25
)");
  const Suite s = suite_load(file);
  ASSERT_EQ(s.entries.size(), 7u);
  // [[runs]] first, then each [[matrix]] with its last key varying fastest.
  EXPECT_EQ(s.entries[0].at("algo"), "localsgd");
  EXPECT_EQ(s.entries[0].at("weight-decay"), 0.25);  // the entry's spelling replaces the default's
  EXPECT_FALSE(s.entries[0].contains("weight_decay"));
  EXPECT_EQ(s.entries[1].at("algo"), "ssgd");
  EXPECT_EQ(s.entries[1].at("workers"), 1);
  EXPECT_EQ(s.entries[3].at("workers"), 3);
  EXPECT_EQ(s.entries[4].at("algo"), "localsgd");
  EXPECT_EQ(s.entries[4].at("workers"), 1);
  EXPECT_EQ(s.entries[6].at("weight_decay"), 0.5);
  for (const auto& e : s.entries) EXPECT_EQ(e.at("steps"), 10);
  EXPECT_EQ(suite_tag("m", 3), "suite=m,rep=3");
}

TEST(Suite, BadFilesNameTheProblem) {
  TempDir dir;
  EXPECT_NE(error_of(dir.write("a.toml", "[[runs]]\nalgo = \"ssgd\"\nbach = 3\n")).find("unknown key 'bach'"),
            std::string::npos);
  EXPECT_NE(error_of(dir.write("b.toml", "[[runs]]\nsteps = \"many\"\n")).find("'steps'"), std::string::npos);
  EXPECT_NE(error_of(dir.write("c.toml", "[[runs]]\nlr = -1.0\n")).find("--lr"), std::string::npos);
  EXPECT_NE(error_of(dir.write("d.toml", "[[runs]]\ntag = \"x\"\n")).find("may not be set"), std::string::npos);
  EXPECT_NE(error_of(dir.write("e.toml", "name = \"e\"\n")).find("has no runs"), std::string::npos);
  EXPECT_NE(error_of(dir.write("f.toml", "[[runs]\n")).find("f.toml"), std::string::npos);
  EXPECT_NE(error_of(dir.write("g.toml", "[[matrix]]\nalgo = []\n")).find("empty list"), std::string::npos);
  EXPECT_NE(error_of(dir.write("h.toml", "runz = 1\n")).find("unknown top-level key 'runz'"), std::string::npos);
}

TEST(Suite, FindByName) {
  TempDir dir;
  fs::create_directories(dir.path / "suites");
  std::ofstream(dir.path / "suites" / "mine.toml") << "[[runs]]\n";
  EXPECT_EQ(suite_find("mine", (dir.path / "build").string()), (dir.path / "suites" / "mine.toml").string());
  try {
    suite_find("nosuch", (dir.path / "build").string());
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown suite 'nosuch'"), std::string::npos);
  }
  EXPECT_THROW(suite_find("missing/x.toml", ""), InputError);
}

}  // namespace
}  // namespace dsgd
