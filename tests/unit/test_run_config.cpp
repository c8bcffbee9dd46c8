// Config files (JSON and TOML) and validation: every key of the field table loads,
// unknown keys and wrong types are rejected with the file and key named.

// GCC 12 at -O3 reports a false -Wrestrict inside std::string::operator=(const char*)
// inlined into a test body (GCC bug 105329; the location is in <string>, hence before the
// includes); it is not in this code.
#pragma GCC diagnostic ignored "-Wrestrict"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/errors.hpp"
#include "core/run_config.hpp"

namespace fs = std::filesystem;
using namespace dsgd;

namespace {

std::string write_file(const std::string& name, const std::string& text) {
  const fs::path dir = fs::temp_directory_path() / "dsgd_test_run_config";
  fs::create_directories(dir);
  const fs::path p = dir / name;
  std::ofstream(p) << text;
  return p.string();
}

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(RunConfig, LoadsJsonWithDashesAndUnderscores) {
  RunConfig cfg;
  run_config_load_file(cfg, write_file("a.json", R"({"algo": "localsgd", "period": 8, "weight_decay": 0.001,
      "lr": 0.1, "seed": 18446744073709551615, "timers": false, "tag": "x,\"y\""})"));
  EXPECT_EQ(cfg.algo, "localsgd");
  EXPECT_EQ(cfg.period, 8);
  EXPECT_DOUBLE_EQ(cfg.weight_decay, 0.001);
  EXPECT_DOUBLE_EQ(cfg.lr, 0.1);
  EXPECT_EQ(cfg.seed, 18446744073709551615ULL);
  EXPECT_FALSE(cfg.timers);
  EXPECT_EQ(cfg.tag, "x,\"y\"");
}

TEST(RunConfig, LoadsToml) {
  RunConfig cfg;
  run_config_load_file(cfg, write_file("a.toml", "algo = \"localsgd\"\nperiod = 16\nlr = 0.2\nweight-decay = 0.0\n"));
  EXPECT_EQ(cfg.algo, "localsgd");
  EXPECT_EQ(cfg.period, 16);
  EXPECT_DOUBLE_EQ(cfg.lr, 0.2);
  EXPECT_DOUBLE_EQ(cfg.weight_decay, 0.0);
  // TOML integers are signed: an unsigned key (seed) takes a non-negative one, refuses a negative one.
  run_config_load_file(cfg, write_file("seed.toml", "seed = 42\n"));
  EXPECT_EQ(cfg.seed, 42u);
  EXPECT_NE(error_of([&] { run_config_load_file(cfg, write_file("neg.toml", "seed = -1\n")); }).find("'seed'"),
            std::string::npos);
}

TEST(RunConfig, UnknownKeyNamesFileAndKey) {
  RunConfig cfg;
  const auto path = write_file("bad_key.json", R"({"batch": 32, "bach": 64})");
  const std::string msg = error_of([&] { run_config_load_file(cfg, path); });
  EXPECT_NE(msg.find("bad_key.json"), std::string::npos) << msg;
  EXPECT_NE(msg.find("unknown key 'bach'"), std::string::npos) << msg;
}

TEST(RunConfig, WrongTypeNamesKey) {
  RunConfig cfg;
  const auto path = write_file("bad_type.json", R"({"batch": "large"})");
  const std::string msg = error_of([&] { run_config_load_file(cfg, path); });
  EXPECT_NE(msg.find("'batch'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("wrong type"), std::string::npos) << msg;
  const auto toml = write_file("bad_type.toml", "lr = \"fast\"\n");
  EXPECT_NE(error_of([&] { run_config_load_file(cfg, toml); }).find("'lr'"), std::string::npos);
}

TEST(RunConfig, SyntaxErrorsAndMissingFile) {
  RunConfig cfg;
  EXPECT_NE(error_of([&] { run_config_load_file(cfg, write_file("broken.json", "{\"batch\": ")); }), "");
  EXPECT_NE(error_of([&] { run_config_load_file(cfg, write_file("broken.toml", "batch = = 3")); }), "");
  EXPECT_NE(error_of([&] { run_config_load_file(cfg, "/nonexistent/cfg.json"); }).find("/nonexistent/cfg.json"),
            std::string::npos);
}

TEST(RunConfig, ZeroStepsInFileRejected) {
  RunConfig cfg;
  EXPECT_NE(error_of([&] { run_config_load_file(cfg, write_file("zero.json", R"({"steps": 0})")); }).find("steps"),
            std::string::npos);
}

TEST(RunConfig, ValidateRejectsBadValues) {
  auto check = [](auto mutate, const char* flag) {
    RunConfig cfg;
    mutate(cfg);
    const std::string msg = error_of([&] { run_config_validate(cfg); });
    EXPECT_NE(msg.find(flag), std::string::npos) << flag << ": " << msg;
  };
  check([](RunConfig& c) { c.workers = 0; }, "--workers");
  check([](RunConfig& c) { c.batch = 0; }, "--batch");
  check([](RunConfig& c) { c.steps = -3; }, "--steps");
  check([](RunConfig& c) { c.lr = 0; }, "--lr");
  check([](RunConfig& c) { c.momentum = 1.5; }, "--momentum");
  check([](RunConfig& c) { c.backend = "carrier-pigeon"; }, "--backend");
  check([](RunConfig& c) { c.steps = 10, c.epochs = 2; }, "--steps");
  RunConfig ok;
  EXPECT_NO_THROW(run_config_validate(ok));
}

TEST(RunConfig, JsonRoundTrip) {
  RunConfig a;
  a.algo = "localsgd";
  a.period = 7;
  a.seed = 42;
  a.tag = std::string(1, 't');  // not = "t": GCC 12 -Wrestrict false positive (PR 105329)
  RunConfig b;
  run_config_apply_json(b, run_config_to_json(a), "round trip");
  EXPECT_EQ(run_config_to_json(a), run_config_to_json(b));
}

TEST(RunConfig, KnobOfAnotherAlgorithmRefusedWhenGivenEvenAtDefault) {
  RunConfig cfg;  // ssgd
  run_config_validate(cfg);  // period 4 is the default, not given: accepted
  run_config_mark_given(cfg, "period");
  EXPECT_NE(error_of([&] { run_config_validate(cfg); }).find("--period: applies to"), std::string::npos);
  cfg.algo = "localsgd";
  EXPECT_EQ(error_of([&] { run_config_validate(cfg); }), "");
  RunConfig other;
  other.algo = "localsgd";
  run_config_mark_given(other, "outer_momentum");  // normalised to outer-momentum
  EXPECT_TRUE(other.given("outer-momentum"));
  EXPECT_NE(error_of([&] { run_config_validate(other); }).find("--outer-momentum"), std::string::npos);
  RunConfig changed;  // built in code: a changed knob of another algorithm is still refused
  changed.delay = 2;
  EXPECT_NE(error_of([&] { run_config_validate(changed); }).find("--delay"), std::string::npos);
}
