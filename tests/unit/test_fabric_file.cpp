// The fabric file reader (engine/fabric_file): the committed example (tools/export_fabric.py
// --spawn 2 on gloo) is read into the simulator's network, whose all-reduce gives the file's
// measured times back at its sizes and interpolates between them; bad files are refused naming
// the field.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "core/errors.hpp"
#include "engine/fabric_file.hpp"

using namespace dsgd;

namespace {

const std::string kExample = std::string(DSGD_TEST_DATA_DIR) + "/cost_files/fabric_gloo.json";

TEST(FabricFile, TheExampleGivesItsMeasuredAllReduceBack) {
  const FabricFile f = fabric_file_read(kExample);
  EXPECT_EQ(f.framework, "pytorch");
  EXPECT_EQ(f.backend, "gloo");
  EXPECT_EQ(f.world_size, 2);
  const NetworkModel net = fabric_file_network(f);
  ASSERT_TRUE(net.measured);
  int checked = 0;
  double previous = 0;
  for (const MeasuredPoint& p : f.points) {
    if (p.op != "allreduce") continue;
    const double t = network_collective_time(net, CollKind::coll_allreduce, CollAlgo::algo_ring, p.bytes, 2);
    // Non-decreasing by construction: a size measured faster than a smaller one is raised to it.
    EXPECT_DOUBLE_EQ(t, std::max(p.seconds, previous)) << p.bytes;
    previous = t;
    ++checked;
  }
  EXPECT_GE(checked, 10);
  EXPECT_NE(fabric_file_describe(f).find("gloo on 2 ranks (1 host)"), std::string::npos);
}

// The example predates the spread: its points have none (NaN), and nothing is said of them.
TEST(FabricFile, ASpreadIsReadWhereTheFileHasOne) {
  const FabricFile f = fabric_file_read(kExample);
  for (const MeasuredPoint& p : f.points) EXPECT_TRUE(std::isnan(p.spread)) << p.op << " " << p.bytes;
  nlohmann::json j;
  std::ifstream(kExample) >> j;
  for (auto& c : j["collectives"]) c["spread"] = c["bytes"].get<double>() == 1024 ? 0.9 : 0.05;
  const std::string path = ::testing::TempDir() + "fabric_with_spread.json";
  std::ofstream(path) << j.dump();
  const FabricFile g = fabric_file_read(path);
  std::remove(path.c_str());
  int noisy = 0;
  for (const MeasuredPoint& p : g.points) {
    EXPECT_DOUBLE_EQ(p.spread, p.bytes == 1024 ? 0.9 : 0.05);
    noisy += p.spread > 0.3;
  }
  EXPECT_GE(noisy, 1);
  const NetworkModel net = fabric_file_network(g);
  const std::optional<MeasuredNoise> n = measured_fabric_noise(*net.measured, CollKind::coll_allreduce, 1024, 0.3);
  ASSERT_TRUE(n);
  EXPECT_DOUBLE_EQ(n->spread, 0.9);
  EXPECT_FALSE(measured_fabric_noise(*net.measured, CollKind::coll_allreduce, 1 << 20, 0.3));
}

class FabricFileBad : public ::testing::Test {
 protected:
  std::string error_of(const std::function<void(nlohmann::json&)>& spoil) {
    nlohmann::json j;
    std::ifstream(kExample) >> j;
    spoil(j);
    std::ofstream(path_) << j.dump();
    try {
      fabric_file_read(path_);
    } catch (const InputError& e) {
      return e.what();
    }
    return "";
  }
  void TearDown() override { std::remove(path_.c_str()); }
  std::string path_ =
      ::testing::TempDir() + "fabric_bad_" + ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".json";
};

TEST_F(FabricFileBad, IsRefusedNamingTheField) {
  EXPECT_NE(error_of([](nlohmann::json& j) { j["version"] = 3; }).find("version 3; this dsgd-bench reads version 1"),
            std::string::npos);
  EXPECT_NE(error_of([](nlohmann::json& j) { j["format"] = "dsgd-model-cost"; }).find("format is 'dsgd-model-cost'"),
            std::string::npos);
  EXPECT_NE(error_of([](nlohmann::json& j) { j["world_size"] = 1; }).find("world_size is 1 (at least 2)"),
            std::string::npos);
  EXPECT_NE(error_of([](nlohmann::json& j) {
              j["collectives"][3]["time_s"] = 0;
            }).find("collectives[3].time_s is 0 (must be positive)"),
            std::string::npos);
  EXPECT_NE(error_of([](nlohmann::json& j) {
              nlohmann::json kept = nlohmann::json::array();
              for (const auto& c : j["collectives"])
                if (c["op"] != "allreduce") kept.push_back(c);
              j["collectives"] = kept;
            }).find("fewer than two all-reduce sizes"),
            std::string::npos);
  EXPECT_NE(error_of([](nlohmann::json& j) {
              j["collectives"][2]["spread"] = -0.5;
            }).find("collectives[2].spread is negative (-0.5)"),
            std::string::npos);
}

}  // namespace
