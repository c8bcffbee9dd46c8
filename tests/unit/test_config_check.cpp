// The configuration check that asks the variants' registry entries (algorithms/config_check.hpp,
// algorithms/variant.hpp): knobs of another variant, --period and --compress users, each
// variant's own checks, and what the registry declares for the rest of the program.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "algorithms/algorithm.hpp"
#include "algorithms/config_check.hpp"
#include "algorithms/variant.hpp"
#include "core/errors.hpp"

namespace dsgd {
namespace {

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(ConfigCheck, KnobOfAnotherAlgorithmRefusedWhenGivenEvenAtDefault) {
  RunConfig cfg;         // ssgd
  config_validate(cfg);  // period 4 is the default, not given: accepted
  run_config_mark_given(cfg, "period");
  EXPECT_NE(error_of([&] { config_validate(cfg); }).find("--period: applies to"), std::string::npos);
  cfg.algo = "localsgd";
  EXPECT_EQ(error_of([&] { config_validate(cfg); }), "");
  RunConfig other;
  other.algo = "localsgd";
  run_config_mark_given(other, "outer_momentum");  // normalised to outer-momentum
  EXPECT_TRUE(other.given("outer-momentum"));
  EXPECT_NE(error_of([&] { config_validate(other); }).find("--outer-momentum"), std::string::npos);
  RunConfig changed;  // built in code: a changed knob of another algorithm is still refused
  changed.delay = 2;
  EXPECT_NE(error_of([&] { config_validate(changed); }).find("--delay"), std::string::npos);
}

// Every flag a variant declares is refused with every other variant, naming the flag and
// the owner; its own variant accepts it at the default.
TEST(ConfigCheck, EveryDeclaredFlagBelongsToItsVariants) {
  for (const Variant* owner : variant_all())
    for (const VariantFlag& flag : owner->flags) {
      ASSERT_NO_THROW(config_changed(RunConfig{}, flag.key)) << flag.key << " is not in the field table";
      for (const Variant* v : variant_all()) {
        RunConfig cfg;
        cfg.algo = v->name;
        run_config_mark_given(cfg, flag.key);
        const std::string msg = error_of([&] { config_validate(cfg); });
        bool declares = false;
        for (const VariantFlag& g : v->flags) declares = declares || std::string(g.key) == flag.key;
        if (declares && flag.owner) continue;  // owned under a condition (its own check names it)
        if (declares) {
          EXPECT_EQ(msg.find(fmt::format("--{}: applies to --algo", flag.key)), std::string::npos)
              << v->name << " --" << flag.key << ": " << msg;
        } else {
          EXPECT_NE(msg.find(fmt::format("--{}: applies to --algo", flag.key)), std::string::npos)
              << v->name << " --" << flag.key << ": " << msg;
        }
      }
    }
}

TEST(ConfigCheck, PeriodAndCompressUsersComeFromTheRegistry) {
  std::string periodic;
  for (const Variant* v : variant_all())
    if (v->takes_period) periodic += (periodic.empty() ? "" : "|") + v->name;
  EXPECT_EQ(periodic, "localsgd|diloco|cocod|dasgd|overlap-local|dreamddp|palsgd|mtdao|oldsgd|lasgd");
  EXPECT_TRUE(variant_uses_period("cocod"));
  EXPECT_FALSE(variant_uses_period("ssgd"));
  EXPECT_FALSE(variant_uses_period("no-such-variant"));
  RunConfig cfg;
  cfg.algo = "dpsgd";
  cfg.compress = "topk:0.1";
  EXPECT_NE(error_of([&] { config_validate(cfg); })
                .find("applies to the all-reduce variants ssgd, localsgd, diloco, cocod, dasgd, overlap-local, "
                      "dreamddp and palsgd, not dpsgd: it exchanges models point-to-point"),
            std::string::npos);
  cfg.algo = "dasgd";
  EXPECT_EQ(error_of([&] { config_validate(cfg); }), "");
}

TEST(ConfigCheck, DefaultOptimizerIsTheVariants) {
  for (const Variant* v : variant_all()) {
    EXPECT_TRUE(v->optimizer == "sgd" || v->optimizer == "adamw") << v->name;
    EXPECT_NE(v->create, nullptr) << v->name;
  }
  EXPECT_EQ(variant_get("diloco").optimizer, "adamw");
  EXPECT_EQ(variant_get("mtdao").optimizer, "adamw");
  EXPECT_NE(error_of([] { variant_get("sgdx"); }).find("unknown algorithm 'sgdx'"), std::string::npos);
}

TEST(ConfigCheck, TimingOnlyListIsTheRegistrys) {
  EXPECT_EQ(variant_timing_supported_text(),
            "ssgd, localsgd (--period-schedule constant or qsr), diloco, cocod, dasgd, overlap-local, dpsgd "
            "(--dpsgd-delay 0, static topology), zero (32 "
            "bits), dreamddp (with --bandwidth), oldsgd (--gossip-overlap false, static topology), lasgd and pdasgd, "
            "without --compress");
  RunConfig cfg;
  EXPECT_TRUE(variant_timing_supported(cfg));
  cfg.overlap = true;
  EXPECT_TRUE(variant_timing_supported(cfg));
  cfg.compress = "topk:0.1";
  EXPECT_FALSE(variant_timing_supported(cfg));  // no compressor is modelled
  cfg = RunConfig{};
  cfg.algo = "zero";
  EXPECT_TRUE(variant_timing_supported(cfg));
  cfg.zero_bits = 4;
  EXPECT_FALSE(variant_timing_supported(cfg));
  for (const char* algo : {"adpsgd", "hogwild"}) {
    cfg = RunConfig{};
    cfg.algo = algo;
    EXPECT_FALSE(variant_timing_supported(cfg)) << algo;
  }
  // dreamddp: its schedule's link is the simulated one only with --bandwidth (or one worker).
  cfg = RunConfig{};
  cfg.algo = "dreamddp";
  cfg.workers = 4;
  EXPECT_FALSE(variant_timing_supported(cfg));
  cfg.bandwidth = "1Gbps";
  EXPECT_TRUE(variant_timing_supported(cfg));
  cfg.compress = "topk:0.1";
  EXPECT_FALSE(variant_timing_supported(cfg));
  cfg = RunConfig{};
  cfg.algo = "dreamddp";
  cfg.workers = 1;
  EXPECT_TRUE(variant_timing_supported(cfg));
  cfg = RunConfig{};
  cfg.algo = "dpsgd";
  cfg.dpsgd_delay = 1;
  EXPECT_FALSE(variant_timing_supported(cfg));
  cfg.algo = "ps";
  EXPECT_FALSE(variant_timing_supported(cfg));
}

}  // namespace
}  // namespace dsgd
