// Config files (JSON and TOML) and validation: every key of the field table loads,
// unknown keys and wrong types are rejected with the file and key named.

// GCC 12 at -O3 reports a false -Wrestrict inside std::string::operator=(const char*)
// inlined into a test body (GCC bug 105329; the location is in <string>, hence before the
// includes); it is not in this code.
#pragma GCC diagnostic ignored "-Wrestrict"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>

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
  // lr 0 means "not given" internally, so a file's explicit 0 is refused like steps'.
  EXPECT_NE(error_of([&] {
              run_config_load_file(cfg, write_file("zero_lr.json", R"({"lr": 0})"));
            }).find("key 'lr' must be positive"),
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
  check([](RunConfig& c) { c.lr = -0.1; }, "--lr");  // 0 is "not given" (the optimizer's default)
  check([](RunConfig& c) { c.momentum = 1.5; }, "--momentum");
  check([](RunConfig& c) { c.backend = ""; }, "--backend");  // known names: the backend table (test_backends)
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

// ---- ranges ------------------------------------------------------------------------------------

TEST(RunConfigRanges, EveryNumericFieldHasARange) {
  for (const auto& field : run_config_fields())
    std::visit(
        [&](auto member) {
          using T = std::remove_reference_t<decltype(RunConfig{}.*member)>;
          if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) {
            const RunConfigRange* range = run_config_range(field.key);
            ASSERT_NE(range, nullptr) << "numeric field --" << field.key << " has no range in run_config_ranges()";
            // The default lies in the range.
            const long double v = static_cast<long double>(RunConfig{}.*member);
            EXPECT_TRUE(range->lo_open ? v > range->lo : v >= range->lo) << field.key;
            EXPECT_TRUE(range->hi_open ? v < range->hi : v <= range->hi) << field.key;
          }
        },
        field.member);
  for (const auto& range : run_config_ranges()) {
    bool found = false;
    for (const auto& field : run_config_fields()) found = found || std::string(field.key) == range.key;
    EXPECT_TRUE(found) << "range for unknown key " << range.key;
  }
}

// Every numeric field refuses NaN, infinities and values past either end, naming the flag.
TEST(RunConfigRanges, EveryNumericFieldRefusesOutOfRangeValues) {
  for (const auto& field : run_config_fields())
    std::visit(
        [&](auto member) {
          using T = std::remove_reference_t<decltype(RunConfig{}.*member)>;
          if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) {
            const RunConfigRange* range = run_config_range(field.key);
            ASSERT_NE(range, nullptr);
            std::vector<T> bad;
            if constexpr (std::is_floating_point_v<T>) {
              bad = {std::numeric_limits<T>::quiet_NaN(), std::numeric_limits<T>::infinity(),
                     -std::numeric_limits<T>::infinity(), static_cast<T>(range->hi) * 2 + 1};
              bad.push_back(static_cast<T>(range->lo) - 1);
              if (range->lo_open) bad.push_back(static_cast<T>(range->lo));
              if (range->hi_open) bad.push_back(static_cast<T>(range->hi));
            } else {
              if (range->hi < static_cast<long double>(std::numeric_limits<T>::max()))
                bad.push_back(static_cast<T>(range->hi) + 1);
              if (range->lo > static_cast<long double>(std::numeric_limits<T>::min()))
                bad.push_back(static_cast<T>(range->lo) - 1);
            }
            for (const T v : bad) {
              RunConfig cfg;
              cfg.*member = v;
              const std::string msg = error_of([&] { run_config_validate(cfg); });
              EXPECT_NE(msg.find(fmt::format("--{}", field.key)), std::string::npos)
                  << field.key << " = " << v << " gave: '" << msg << "'";
            }
          }
        },
        field.member);
}

TEST(RunConfigRanges, MessagesNameTheRange) {
  RunConfig cfg;
  cfg.batch = 3000000000;
  EXPECT_EQ(error_of([&] { run_config_validate(cfg); }), "--batch: must be in 1..16777216 (got 3000000000)");
  cfg = RunConfig{};
  cfg.epochs = 1e18;
  EXPECT_EQ(error_of([&] { run_config_validate(cfg); }), "--epochs: must be in [0, 1e+06] (got 1e+18)");
  cfg = RunConfig{};
  cfg.seed = ~uint64_t{0};  // what "-1" became on the command line
  EXPECT_EQ(error_of([&] { run_config_validate(cfg); }),
            "--seed: must be in 0..9223372036854775807 (got 18446744073709551615)");
  cfg.seed = 9223372036854775807ULL;
  EXPECT_EQ(error_of([&] { run_config_validate(cfg); }), "");
  cfg = RunConfig{};
  cfg.lr = std::numeric_limits<double>::quiet_NaN();
  EXPECT_NE(error_of([&] { run_config_validate(cfg); }).find("--lr: must be > 0 (got nan)"), std::string::npos);
}

// A config file's values go through the same ranges as the flags.
TEST(RunConfigRanges, ConfigFileValuesAreRangeChecked) {
  RunConfig cfg;
  run_config_load_file(cfg, write_file("huge_batch.toml", "batch = 3000000000\n"));
  EXPECT_EQ(error_of([&] { run_config_validate(cfg); }), "--batch: must be in 1..16777216 (got 3000000000)");
  RunConfig j;
  run_config_load_file(j, write_file("huge_epochs.json", R"({"epochs": 1e18})"));
  EXPECT_NE(error_of([&] { run_config_validate(j); }).find("--epochs: must be in"), std::string::npos);
}

// ---- config file structure -------------------------------------------------------------------------

TEST(RunConfigFile, DeeplyDottedTomlKeyIsRefusedNotACrash) {
  std::string key = "a";
  for (int i = 0; i < 50000; ++i) key += ".a";
  RunConfig cfg;
  const std::string msg = error_of([&] { run_config_load_file(cfg, write_file("dotted.toml", key + " = 1\n")); });
  EXPECT_NE(msg.find("dotted.toml:1: more than 64 dots on one line"), std::string::npos) << msg;
  const std::string header = "batch = 8\n[" + key + "]\n";
  EXPECT_NE(error_of([&] { run_config_load_file(cfg, write_file("header.toml", header)); }).find("header.toml:2:"),
            std::string::npos);
}

TEST(RunConfigFile, DeeplyNestedBracketsAreRefused) {
  RunConfig cfg;
  const std::string deep(100000, '[');
  std::string msg = error_of([&] { run_config_load_file(cfg, write_file("deep.toml", "batch = " + deep + "\n")); });
  EXPECT_NE(msg.find("deep.toml:1: more than 64 nested brackets"), std::string::npos) << msg;
  msg = error_of([&] { run_config_load_file(cfg, write_file("deep.json", "{\"batch\": " + deep)); });
  EXPECT_NE(msg.find("deep.json:1: more than 64 nested brackets"), std::string::npos) << msg;
  const std::string inline_tables = "x = " + std::string(1000, '{');
  EXPECT_NE(error_of([&] { run_config_load_file(cfg, write_file("inline.toml", inline_tables)); }).find("nested"),
            std::string::npos);
}

// Brackets and dots inside strings and comments are not structure.
TEST(RunConfigFile, NestingCheckSkipsStringsAndComments) {
  RunConfig cfg;
  const std::string many = std::string(200, '[') + std::string(200, '.') + std::string(200, '{');
  run_config_load_file(cfg, write_file("strings.toml", "tag = \"" + many + "\" # " + many + "\ndb = '" + many +
                                                           "'\nhostfile = \"\"\"\n" + many + "\n\"\"\"\n"));
  EXPECT_EQ(cfg.tag, many);
  EXPECT_EQ(cfg.db, many);
  run_config_load_file(cfg, write_file("strings.json", "{\"tag\": \"\\\"" + many + "\"}"));
  EXPECT_EQ(cfg.tag, "\"" + many);
}

TEST(RunConfigFile, OversizedFileIsRefused) {
  RunConfig cfg;
  const std::string big = "tag = \"" + std::string(kConfigMaxBytes, 'x') + "\"\n";
  EXPECT_NE(error_of([&] { run_config_load_file(cfg, write_file("big.toml", big)); }).find("more than the"),
            std::string::npos);
}

TEST(RunConfigFile, DuplicateJsonKeysAreRefused) {
  RunConfig cfg;
  std::string msg =
      error_of([&] { run_config_load_file(cfg, write_file("dup.json", R"({"batch": 8, "batch": 64})")); });
  EXPECT_NE(msg.find("dup.json: key 'batch' appears more than once"), std::string::npos) << msg;
  msg = error_of(
      [&] { run_config_load_file(cfg, write_file("dup2.json", R"({"weight_decay": 0.1, "weight-decay": 0.2})")); });
  EXPECT_NE(msg.find("key 'weight-decay' is given twice"), std::string::npos) << msg;
  msg =
      error_of([&] { run_config_load_file(cfg, write_file("dup3.toml", "weight_decay = 0.1\nweight-decay = 0.2\n")); });
  EXPECT_NE(msg.find("is given twice"), std::string::npos) << msg;
  // Same key in different objects is fine for the parser (the nested value is refused later as a type).
  msg = error_of([&] { run_config_load_file(cfg, write_file("nested.json", R"({"tag": "a", "x": {"tag": 1}})")); });
  EXPECT_NE(msg.find("unknown key 'x'"), std::string::npos) << msg;
}

// Found by fuzz_config: a JSON number beyond double (1e999) made nlohmann throw out_of_range,
// which escaped as an internal error (exit 1) instead of an InputError naming the file.
TEST(RunConfigFile, JsonNumberOutOfRangeIsAnInputError) {
  RunConfig cfg;
  const std::string msg = error_of([&] { run_config_load_file(cfg, write_file("overflow.json", R"({"lr": 1e999})")); });
  EXPECT_NE(msg.find("overflow.json: "), std::string::npos) << msg;
  EXPECT_NE(msg.find("number overflow"), std::string::npos) << msg;
}
