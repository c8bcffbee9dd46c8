// The model cost file reader (workloads/cost_file): a well-formed file is read field for field;
// every kind of bad file is refused with InputError naming the file and the field; batch
// scaling recovers t0 + k·b exactly from linear data, refuses batches beyond the
// extrapolation limit and single-batch files at another batch; parameter-less layers' backward
// time goes to the next layer whose gradient becomes ready; layers count float32 units of the
// file's parameter bytes.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>

#include "core/errors.hpp"
#include "workloads/cost_file.hpp"

using namespace dsgd;
using Json = nlohmann::json;

namespace {

Json stat(double median, double spread = 0.05) {
  return {{"median_s", median}, {"spread", spread}, {"samples", 20}};
}

// An MLP of three modules (fc1 with parameters, relu without, fc2 with), measured at the given
// batches; every time is t0 + k·b with known t0 and k.
Json mlp(std::vector<int> batches = {16, 32, 64}) {
  Json file = {
      {"format", "dsgd-model-cost"},
      {"version", 1},
      {"model", "mlp"},
      {"framework", "pytorch"},
      {"framework_version", "1.13.1"},
      {"dtype", "float32"},
      {"device", {{"kind", "cpu"}, {"name", "test"}, {"peak_flops", 1e11}, {"memory_bandwidth_bytes_per_s", 1e10}}},
      {"input_shape", {784}},
      {"parameters", 203530},
      {"parameter_bytes", 814120},
      {"batches", Json::array()}};
  for (int b : batches) {
    auto lin = [b](double t0, double k) { return t0 + k * b; };
    Json layers = Json::array();
    layers.push_back({{"name", "fc1"},
                      {"type", "Linear"},
                      {"calls", 1},
                      {"parameters", 200960},
                      {"parameter_bytes", 803840},
                      {"forward", stat(lin(1e-5, 1e-5))},
                      {"backward", stat(lin(2e-5, 2e-5))},
                      {"forward_flops", nullptr},
                      {"backward_flops", nullptr},
                      {"activation_bytes", nullptr},
                      {"grad_ready_s", nullptr}});
    layers.push_back({{"name", "relu"},
                      {"type", "ReLU"},
                      {"calls", 1},
                      {"parameters", 0},
                      {"parameter_bytes", 0},
                      {"forward", stat(lin(1e-6, 1e-7))},
                      {"backward", stat(lin(3e-6, 1e-7))}});
    layers.push_back({{"name", "fc2"},
                      {"type", "Linear"},
                      {"calls", 1},
                      {"parameters", 2570},
                      {"parameter_bytes", 10280},
                      {"forward", stat(lin(2e-6, 1e-7))},
                      {"backward", stat(lin(4e-6, 2e-7))}});
    file["batches"].push_back({{"batch", b},
                               {"iterations", 20},
                               {"step", stat(lin(1e-4, 5e-5))},
                               {"forward", stat(lin(1.5e-5, 1.2e-5))},
                               {"backward", stat(lin(3e-5, 2.4e-5))},
                               {"optimizer", stat(5e-5, 0.1)},
                               {"unattributed_s", 1e-6},
                               {"layers", layers}});
  }
  return file;
}

class CostFileTest : public ::testing::Test {
 protected:
  std::string write(const Json& j) { return write_text(j.dump()); }
  std::string write_text(const std::string& text) {
    std::ofstream(path_) << text;
    return path_;
  }
  void TearDown() override { std::remove(path_.c_str()); }
  // The message of the InputError reading `j` throws ("" when none).
  std::string error_of(const Json& j) {
    try {
      cost_file_read(write(j));
    } catch (const InputError& e) {
      return e.what();
    }
    return "";
  }
  // One file per test and process: ctest runs the tests of this program in parallel.
  std::string path_ = ::testing::TempDir() + "cost_file_" +
                      ::testing::UnitTest::GetInstance()->current_test_info()->name() + "_" +
                      std::to_string(::getpid()) + ".json";
};

TEST_F(CostFileTest, ReadsAWellFormedFile) {
  Json j = mlp();
  j["gradient_noise_scale"] = {{"b_simple", 312.0}, {"batch_small", 16}, {"batch_big", 64}, {"samples", 10}};
  j["model_pass"] = {{"median_s", 4.5e-5}, {"spread", 0.08}, {"samples", 10}};
  const CostFile f = cost_file_read(write(j));
  ASSERT_TRUE(f.model_pass.has_value());
  EXPECT_DOUBLE_EQ(f.model_pass->median_s, 4.5e-5);
  EXPECT_EQ(f.model_pass->samples, 10);
  j.erase("model_pass");
  EXPECT_FALSE(cost_file_read(write(j)).model_pass.has_value()) << "optional: an older exporter's file";
  EXPECT_EQ(f.model, "mlp");
  EXPECT_EQ(f.framework_version, "1.13.1");
  EXPECT_EQ(f.device_kind, "cpu");
  EXPECT_EQ(f.parameters, 203530);
  ASSERT_EQ(f.layers.size(), 3u);
  EXPECT_EQ(f.layers[1].name, "relu");
  ASSERT_EQ(f.batches.size(), 3u);
  EXPECT_EQ(f.batches[2].batch, 64);
  EXPECT_DOUBLE_EQ(f.batches[0].layer_bwd[0].median_s, 2e-5 + 2e-5 * 16);
  EXPECT_DOUBLE_EQ(f.batches[0].optimizer.spread, 0.1);
  ASSERT_TRUE(f.noise_scale.has_value());
  EXPECT_DOUBLE_EQ(*f.noise_scale, 312.0);
  // Layers with parameters, in float32 units of their bytes.
  const std::vector<CostFileLayer> layers = cost_file_layers(f);
  ASSERT_EQ(layers.size(), 2u);
  EXPECT_EQ(layers[0].floats, 200960u);
  EXPECT_EQ(layers[1].name, "fc2");
  EXPECT_NE(cost_file_describe(f).find("model mlp (pytorch 1.13.1, float32; cpu test)"), std::string::npos);
}

TEST_F(CostFileTest, ReadsTheBuffersByDtype) {
  Json j = mlp();
  EXPECT_FALSE(cost_file_read(write(j)).buffers.has_value()) << "optional: an older exporter's file";
  EXPECT_NE(cost_file_buffers_describe(cost_file_read(write(j))).find("not recorded in the file"), std::string::npos);
  j["buffers"] = Json::array();
  const CostFile none = cost_file_read(write(j));
  ASSERT_TRUE(none.buffers.has_value());
  EXPECT_TRUE(none.buffers->empty());
  EXPECT_EQ(cost_file_buffers_describe(none), "none (the model has no buffers)");
  j["buffers"] = {{{"dtype", "float32"}, {"tensors", 38}, {"bytes", 5632}},
                  {{"dtype", "int64"}, {"tensors", 19}, {"bytes", 152}}};
  const CostFile f = cost_file_read(write(j));
  ASSERT_EQ(f.buffers->size(), 2u);
  EXPECT_EQ((*f.buffers)[1].dtype, "int64");
  EXPECT_EQ((*f.buffers)[1].tensors, 19);
  EXPECT_EQ((*f.buffers)[0].bytes, 5632);
  EXPECT_EQ(cost_file_buffers_describe(f), "2 broadcasts (5632 B float32 in 38 tensors, 152 B int64 in 19 tensors)");
}

TEST_F(CostFileTest, RefusesBadFilesNamingTheField) {
  struct Case {
    const char* what;
    std::function<void(Json&)> spoil;
    const char* expected;
  };
  const std::vector<Case> cases = {
      {"another version", [](Json& j) { j["version"] = 2; }, "version 2; this dsgd-bench reads version 1"},
      {"another format", [](Json& j) { j["format"] = "chakra"; }, "format is 'chakra'"},
      {"a missing field", [](Json& j) { j["batches"][1]["layers"][2]["backward"].erase("median_s"); },
       "batches[1].layers[2].backward.median_s is missing"},
      {"a negative time", [](Json& j) { j["batches"][0]["step"]["median_s"] = -1e-3; },
       "batches[0].step.median_s is negative"},
      {"a string for a number", [](Json& j) { j["batches"][0]["forward"]["spread"] = "5%"; },
       "batches[0].forward.spread is not a number"},
      {"bytes that do not add up", [](Json& j) { j["parameter_bytes"] = 814124; },
       "parameter_bytes is 814124 but the layers' parameter_bytes add up to 814120"},
      {"layers that differ between batches", [](Json& j) { j["batches"][2]["layers"][2]["name"] = "head"; },
       "'head' (2570 parameters) differs from the first batch entry's layer 2: 'fc2'"},
      {"unsorted batches", [](Json& j) { std::swap(j["batches"][0], j["batches"][1]); },
       "batches[1].batch is 16 after 32"},
      {"no batches", [](Json& j) { j["batches"] = Json::array(); }, "batches is not a non-empty array"},
      {"a zero sample count", [](Json& j) { j["batches"][0]["layers"][0]["forward"]["samples"] = 0; },
       "batches[0].layers[0].forward.samples is 0 (at least 1)"},
      {"a negative model pass",
       [](Json& j) {
         j["model_pass"] = {{"median_s", -1e-5}, {"spread", 0.1}, {"samples", 10}};
       },
       "model_pass.median_s is negative"},
      {"buffers that are not a list",
       [](Json& j) {
         j["buffers"] = {{"float32", 8}};
       },
       "buffers must be a list of {dtype, tensors, bytes}"},
      {"a dtype given twice",
       [](Json& j) {
         j["buffers"] = {{{"dtype", "float32"}, {"tensors", 1}, {"bytes", 4}},
                         {{"dtype", "float32"}, {"tensors", 1}, {"bytes", 4}}};
       },
       "buffers[1].dtype 'float32' comes twice"},
      {"negative buffer bytes",
       [](Json& j) {
         j["buffers"] = {{{"dtype", "int64"}, {"tensors", 1}, {"bytes", -8}}};
       },
       "buffers[0].bytes is -8"},
  };
  for (const Case& c : cases) {
    Json j = mlp();
    c.spoil(j);
    const std::string message = error_of(j);
    EXPECT_NE(message.find(c.expected), std::string::npos) << c.what << ": " << message;
    EXPECT_NE(message.find(path_), std::string::npos) << c.what << ": the file is named";
  }
  // NaN is not JSON (Python's json.dump writes it unless allow_nan=False).
  try {
    cost_file_read(write_text(R"({"format": "dsgd-model-cost", "version": 1, "model": NaN})"));
    FAIL() << "NaN accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("not valid JSON"), std::string::npos) << e.what();
  }
  EXPECT_THROW(cost_file_read(path_ + ".absent"), InputError);
}

TEST_F(CostFileTest, ScalesWithTheBatchAsAFittedLine) {
  const CostFile f = cost_file_read(write(mlp()));
  for (int b : {8, 16, 48, 64, 256}) {
    const CostAtBatch at = cost_file_at_batch(f, b);
    EXPECT_NEAR(at.fwd_s, 1.5e-5 + 1.2e-5 * b, 1e-12) << b;
    EXPECT_NEAR(at.opt_s, 5e-5, 1e-12) << "the optimizer does not scale with the batch";
    ASSERT_EQ(at.bwd_layer_s.size(), 2u);
    // fc2's gradient is ready first; relu's backward runs before fc1's gradient is ready. The
    // whole backward (3e-5 + 2.4e-5 b) exceeds the layers' sum: they are scaled up to it.
    const double layers = (2e-5 + 2e-5 * b) + (3e-6 + 1e-7 * b) + (4e-6 + 2e-7 * b);
    const double scale = (3e-5 + 2.4e-5 * b) / layers;
    EXPECT_NEAR(at.bwd_layer_s[1], scale * (4e-6 + 2e-7 * b), 1e-12) << b;
    EXPECT_NEAR(at.bwd_layer_s[0], scale * ((2e-5 + 2e-5 * b) + (3e-6 + 1e-7 * b)), 1e-12) << b;
    EXPECT_EQ(at.bwd_rest_s, 0.0) << "no parameter-less layer before the first gradient";
    // Data: the step minus its parts, never negative.
    const double step = 1e-4 + 5e-5 * b;
    EXPECT_NEAR(at.data_s, std::max(0.0, step - at.fwd_s - (3e-5 + 2.4e-5 * b) - 5e-5), 1e-12) << b;
    EXPECT_NE(at.how.find("fitted t0 + k*batch over batches 16, 32, 64"), std::string::npos);
  }
}

// The exporter's per-iteration step times (optional): kept in order, one per sample; a batch
// takes those of the measured batch nearest it by ratio; bad ones are refused by name.
TEST_F(CostFileTest, KeepsTheStepTimesOfTheNearestMeasuredBatch) {
  Json j = mlp();
  std::vector<double> t16(20), t64(20);
  for (size_t i = 0; i < 20; ++i) {
    t16[i] = 1e-3 + 1e-5 * static_cast<double>(i);
    t64[i] = 3e-3 + 2e-5 * static_cast<double>(i);
  }
  j["batches"][0]["step"]["times_s"] = t16;
  j["batches"][2]["step"]["times_s"] = t64;
  const CostFile f = cost_file_read(write(j));
  EXPECT_EQ(f.batches[0].step.times_s, t16);
  EXPECT_TRUE(f.batches[1].step.times_s.empty()) << "optional";
  for (const auto& [batch, want, times] : {std::tuple{8, 16, t16}, {31, 16, t16}, {33, 64, t64}, {256, 64, t64}}) {
    const CostAtBatch at = cost_file_at_batch(f, batch);
    EXPECT_EQ(at.step_times_batch, want) << batch;
    EXPECT_EQ(at.step_times_s, times) << batch;
    EXPECT_NEAR(at.step_s, 1e-4 + 5e-5 * batch, 1e-12) << batch;
  }
  EXPECT_TRUE(cost_file_at_batch(cost_file_read(write(mlp())), 32).step_times_s.empty());
  Json bad = j;
  bad["batches"][0]["step"]["times_s"][3] = -1e-3;
  EXPECT_NE(error_of(bad).find("batches[0].step.times_s [3] is -0.001"), std::string::npos) << error_of(bad);
  bad = j;
  bad["batches"][2]["step"]["times_s"].erase(0);
  EXPECT_NE(error_of(bad).find("batches[2].step.times_s has 19 times for 20 samples"), std::string::npos)
      << error_of(bad);
  bad = j;
  bad["batches"][0]["step"]["times_s"][0] = "fast";
  EXPECT_NE(error_of(bad).find("times_s [0] is \"fast\""), std::string::npos) << error_of(bad);
}

TEST_F(CostFileTest, LayersAddingUpToMoreThanTheBackwardAreScaledToIt) {
  // The hooked layers add up to 2.7e-5 + 2.03e-5 b; a whole backward (unhooked) of half that.
  Json j = mlp();
  for (auto& b : j["batches"]) {
    const double bb = b["batch"].get<double>();
    b["backward"]["median_s"] = 0.5 * (2.7e-5 + 2.03e-5 * bb);
  }
  const CostAtBatch at = cost_file_at_batch(cost_file_read(write(j)), 32);
  const double whole = 0.5 * (2.7e-5 + 2.03e-5 * 32);
  EXPECT_NEAR(at.bwd_layer_s[0] + at.bwd_layer_s[1] + at.bwd_rest_s, whole, 1e-12);
  EXPECT_NEAR(at.bwd_layer_s[1], 0.5 * (4e-6 + 2e-7 * 32), 1e-12) << "each layer scaled alike";
}

TEST_F(CostFileTest, RefusesBatchesItCannotScaleTo) {
  const CostFile f = cost_file_read(write(mlp()));
  EXPECT_NO_THROW(cost_file_at_batch(f, 4));    // 16 / 4
  EXPECT_NO_THROW(cost_file_at_batch(f, 256));  // 64 x 4
  for (int b : {3, 257}) {
    try {
      cost_file_at_batch(f, b);
      FAIL() << "batch " << b << " accepted";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("outside what cost file"), std::string::npos) << e.what();
      EXPECT_NE(e.hint().find("use a batch in 4..256"), std::string::npos) << e.hint();
    }
  }
  // One batch in the file: only that batch.
  const CostFile one = cost_file_read(write(mlp({32})));
  EXPECT_EQ(cost_file_at_batch(one, 32).how, "measured at batch 32");
  EXPECT_THROW(cost_file_at_batch(one, 64), InputError);
}

TEST(CostFileWorkload, NamesAFileAfterThePrefix) {
  EXPECT_TRUE(cost_file_workload("profile:model.json"));
  EXPECT_FALSE(cost_file_workload("svm"));
  EXPECT_EQ(cost_file_path("profile:/a/b.json"), "/a/b.json");
  EXPECT_EQ(cost_file_path("resnet"), "");
}

}  // namespace
