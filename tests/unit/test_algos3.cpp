// The part-3 SGD variants (palsgd, mtdao, osp, oldsgd) on one worker against their rules written
// out by hand, their bytes-per-step formulas, their knobs' validation, and the learning-rate
// default of each optimizer when --lr is not given.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "algorithms/algorithm.hpp"
#include "algorithms/config_check.hpp"
#include "algorithms/optimizer.hpp"
#include "algorithms/palsgd.hpp"
#include "cluster/communicator.hpp"
#include "core/errors.hpp"
#include "core/run_config.hpp"
#include "engine/batch_sampler.hpp"
#include "engine/trainer.hpp"
#include "serial_reference.hpp"
#include "workloads/datasets/dataset.hpp"
#include "workloads/workload.hpp"

namespace dsgd {
namespace {

using dsgd::testing::nothing_at_init;
using dsgd::testing::trained;

RunConfig small_config() {
  return dsgd::testing::small_svm_config();
}

// Serial training written out: step(x, g) is the optimizer step; after_step(t, x) runs after it.
std::vector<float> serial_run(const RunConfig& cfg, const std::function<void(float*, const float*)>& step,
                              const std::function<void(int64_t, std::vector<float>&)>& after_step) {
  return dsgd::testing::serial_run(cfg, step, nothing_at_init, after_step);
}

std::vector<float> serial_optimizer(const RunConfig& cfg) {
  DatasetPair data = dataset_load(cfg.dataset, cfg.seed);
  const size_t n = workload_create(cfg, data.train)->param_count();
  auto opt = optimizer_create(cfg, n, 1);
  return serial_run(
      cfg, [&](float* x, const float* g) { opt->step(x, g); }, [](int64_t, std::vector<float>&) {});
}

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(VariantsOnOneWorker, PalsgdEqualsItsPullRuleWrittenOut) {
  RunConfig cfg = small_config();
  cfg.algo = "palsgd";
  cfg.pull_prob = 0.5;
  cfg.pull_alpha = 0.5;
  for (int64_t d : {0, 2}) {
    cfg.delay = d;
    DatasetPair data = dataset_load(cfg.dataset, cfg.seed);
    const size_t n = workload_create(cfg, data.train)->param_count();
    std::vector<float> global(n), snap;  // x̄ starts at x_0
    workload_create(cfg, data.train)->init_params(global.data(), cfg.seed);
    SgdOptimizer sgd(SgdOptions{cfg.lr, 0.0, cfg.weight_decay, false}, n);
    int64_t apply_at = -1, pulls = 0;
    const auto ref2 = serial_run(
        cfg, [&](float* x, const float* g) { sgd.step(x, g); },
        [&](int64_t t, std::vector<float>& x) {
          if (palsgd_pulls_at(cfg.seed, 0, t, cfg.pull_prob)) {
            ++pulls;
            for (size_t i = 0; i < n; ++i) x[i] -= 0.5f * (x[i] - global[i]);
          }
          // One worker: the average of the snapshot is the snapshot (x is kept), x̄ ← s.
          if (apply_at == t) {
            global = snap;
            apply_at = -1;
          }
          if ((t + 1) % cfg.period == 0) {
            snap = x;
            apply_at = t + d;
            if (d == 0) {
              global = snap;
              apply_at = -1;
            }
          }
        });
    EXPECT_GT(pulls, 10) << "delay " << d;
    EXPECT_LT(pulls, 50) << "delay " << d;
    EXPECT_EQ(trained(cfg), ref2) << "delay " << d;
    RunConfig plain = cfg;
    plain.algo = "ssgd";
    plain.delay = 0;
    EXPECT_NE(ref2, serial_optimizer(plain)) << "the pulls are active";
  }
  // No pulls: the serial optimizer itself.
  cfg.pull_prob = 0;
  cfg.delay = 2;
  RunConfig plain = cfg;
  plain.algo = "ssgd";
  plain.delay = 0;
  EXPECT_EQ(trained(cfg), serial_optimizer(plain));
}

TEST(VariantsOnOneWorker, PalsgdPullDrawsAreSeededAndAtTheirRate) {
  int hits = 0;
  for (int64_t t = 0; t < 10000; ++t) hits += palsgd_pulls_at(3, 1, t, 0.25) ? 1 : 0;
  EXPECT_NEAR(hits / 10000.0, 0.25, 0.02);
  EXPECT_EQ(palsgd_pulls_at(3, 1, 17, 0.25), palsgd_pulls_at(3, 1, 17, 0.25));
  int differ = 0;
  for (int64_t t = 0; t < 200; ++t) differ += palsgd_pulls_at(3, 0, t, 0.5) != palsgd_pulls_at(3, 1, t, 0.5);
  EXPECT_GT(differ, 50) << "workers draw independently";
  EXPECT_FALSE(palsgd_pulls_at(3, 0, 5, 0.0));
  EXPECT_TRUE(palsgd_pulls_at(3, 0, 5, 1.0));
}

TEST(VariantsOnOneWorker, MtdaoEqualsItsOptimizerAndItsMultiTimescaleRule) {
  RunConfig cfg = small_config();
  cfg.algo = "mtdao";  // auto: AdamW
  cfg.lr = 0.01;
  RunConfig adam = cfg;
  adam.algo = "ssgd";
  adam.optimizer = "adamw";
  EXPECT_EQ(trained(cfg), serial_optimizer(adam)) << "one time scale: AdamW";
  RunConfig sgd = small_config();
  sgd.algo = "mtdao";
  sgd.optimizer = "sgd";
  sgd.momentum = 0.9;
  sgd.nesterov = true;
  RunConfig nag = sgd;
  nag.algo = "ssgd";
  EXPECT_EQ(trained(sgd), serial_optimizer(nag)) << "one time scale: SGD with Nesterov momentum";

  // Two time scales, AdamW, written out.
  cfg.betas = "0.9,0.99";
  DatasetPair data = dataset_load(cfg.dataset, cfg.seed);
  const size_t n = workload_create(cfg, data.train)->param_count();
  std::vector<float> m1(n, 0.0f), m2(n, 0.0f), v(n, 0.0f);
  int64_t t = 0;
  const auto ref = serial_run(
      cfg,
      [&](float* x, const float* g) {
        ++t;
        const float w1 = static_cast<float>(1.0 / ((1.0 - std::pow(0.9, double(t))) * 2.0));
        const float w2 = static_cast<float>(1.0 / ((1.0 - std::pow(0.99, double(t))) * 2.0));
        const float inv_sqrt_c2 = static_cast<float>(1.0 / std::sqrt(1.0 - std::pow(0.999, double(t))));
        const float decay = static_cast<float>(1.0 - 0.01 * cfg.weight_decay);
        const float lr = 0.01f;
        for (size_t i = 0; i < n; ++i) {
          m1[i] = 0.9f * m1[i] + (1.0f - 0.9f) * g[i];
          float mhat = w1 * m1[i];
          m2[i] = 0.99f * m2[i] + (1.0f - 0.99f) * g[i];
          mhat += w2 * m2[i];
          v[i] = 0.999f * v[i] + (1.0f - 0.999f) * g[i] * g[i];
          const float denom = std::sqrt(v[i]) * inv_sqrt_c2 + 1e-8f;
          x[i] = x[i] * decay - lr * mhat / denom;
        }
      },
      [](int64_t, std::vector<float>&) {});
  const auto got = trained(cfg);
  ASSERT_EQ(got.size(), ref.size());
  double worst = 0;  // the compiler may fuse multiply-adds differently in the two loops
  for (size_t i = 0; i < n; ++i) worst = std::max(worst, std::abs(double(got[i]) - ref[i]) / (1 + std::abs(ref[i])));
  EXPECT_LT(worst, 1e-6);
  EXPECT_NE(got, serial_optimizer(adam)) << "the second time scale changes the update";
}

TEST(VariantsOnOneWorker, OspAndOldsgdEqualTheSerialOptimizer) {
  // One worker: stage 2's average is the local gradient, so the correction redoes the same
  // update (bit for bit); oldsgd's mix of one model is the model itself.
  for (const char* opt : {"sgd", "adamw"}) {
    RunConfig cfg = small_config();
    cfg.optimizer = opt;
    if (std::string(opt) == "sgd") cfg.momentum = 0.9;
    RunConfig plain = cfg;
    const auto serial = serial_optimizer(plain);
    cfg.algo = "osp";
    for (const char* select : {"magnitude", "static"}) {
      cfg.osp_select = select;
      for (double f : {0.25, 1.0}) {
        cfg.osp_fraction = f;
        EXPECT_EQ(trained(cfg), serial) << opt << " " << select << " f=" << f;
      }
    }
  }
  RunConfig cfg = small_config();
  const auto serial = serial_optimizer(cfg);
  cfg.algo = "oldsgd";
  for (bool overlap : {true, false}) {
    cfg.gossip_overlap = overlap;
    EXPECT_EQ(trained(cfg), serial) << "oldsgd overlap " << overlap;
  }
}

TEST(VariantBytes, PartThreeVariantsSendTheirFormula) {
  // R = 2(n−1)/n·bytes: 1000 bytes on 2 workers send 1000, on 4 workers 1500.
  RunConfig cfg;
  cfg.period = 4;  // cfg.algo stays ssgd: each variant reads what --optimizer auto means from its own entry
  EXPECT_DOUBLE_EQ(algorithm_create("palsgd", cfg)->bytes_sent_per_step(1000, 2), 250.0);
  EXPECT_DOUBLE_EQ(algorithm_create("palsgd", cfg)->bytes_sent_per_step(1000, 4), 375.0);
  // mtdao (AdamW): R/4 + R/8 + R/16; two momenta: R/4 + 2R/8 + R/16; SGD without momentum: R/4.
  EXPECT_DOUBLE_EQ(algorithm_create("mtdao", cfg)->bytes_sent_per_step(1000, 2), 250.0 + 125.0 + 62.5);
  cfg.betas = "0.9,0.99";
  EXPECT_DOUBLE_EQ(algorithm_create("mtdao", cfg)->bytes_sent_per_step(1000, 4), 1500.0 * (0.25 + 0.25 + 0.0625));
  cfg.betas.clear();
  cfg.optimizer = "sgd";
  EXPECT_DOUBLE_EQ(algorithm_create("mtdao", cfg)->bytes_sent_per_step(1000, 2), 250.0);
  cfg.momentum = 0.9;
  EXPECT_DOUBLE_EQ(algorithm_create("mtdao", cfg)->bytes_sent_per_step(1000, 2), 250.0 + 125.0);
  cfg.period_m = 0;
  EXPECT_DOUBLE_EQ(algorithm_create("mtdao", cfg)->bytes_sent_per_step(1000, 2), 250.0);
  // osp: R(⌈f·|x|⌉) + R(|x| − ⌈f·|x|⌉) = R(|x|) for every f.
  RunConfig o;
  for (double f : {0.1, 0.25, 0.999, 1.0}) {
    o.osp_fraction = f;
    EXPECT_DOUBLE_EQ(algorithm_create("osp", o)->bytes_sent_per_step(4000, 4), 6000.0) << f;
  }
  // oldsgd: d·4|x| / H (complete on 4 ranks: 3 neighbours; ring: 2).
  RunConfig g;
  g.period = 4;
  EXPECT_DOUBLE_EQ(algorithm_create("oldsgd", g)->bytes_sent_per_step(1000, 4), 750.0);
  g.topology = "ring";
  g.period = 2;
  EXPECT_DOUBLE_EQ(algorithm_create("oldsgd", g)->bytes_sent_per_step(1000, 4), 1000.0);
  EXPECT_FALSE(algorithm_create("osp", o)->replicas_identical() && o.osp_fraction < 1);
  EXPECT_TRUE(algorithm_create("osp", o)->replicas_identical());  // f = 1 (the last value): ssgd
}

TEST(VariantKnobs, PartThreeKnobsAreRefusedNamingTheFlag) {
  auto refused = [](void (*edit)(RunConfig&), const std::string& text) {
    RunConfig cfg;
    edit(cfg);
    const std::string msg = error_of([&] { config_validate(cfg); });
    EXPECT_NE(msg.find(text), std::string::npos) << "got: '" << msg << "', expected " << text;
  };
  refused([](RunConfig& c) { c.pull_prob = 0.3; }, "--pull-prob: applies to --algo palsgd");
  refused([](RunConfig& c) { c.period_m = 2; }, "--period-m: applies to --algo mtdao");
  refused([](RunConfig& c) { c.period_v = 2; }, "--period-v: applies to --algo mtdao");
  refused([](RunConfig& c) { c.betas = "0.9"; }, "--betas: applies to --algo mtdao");
  refused([](RunConfig& c) { c.osp_fraction = 0.5; }, "--osp-fraction: applies to --algo osp");
  refused([](RunConfig& c) { c.osp_select = "static"; }, "--osp-select: applies to --algo osp");
  refused([](RunConfig& c) { c.gossip_overlap = false; }, "--gossip-overlap: applies to --algo oldsgd");
  refused([](RunConfig& c) { c.dreamddp_fill = false; }, "--dreamddp-fill: applies to --algo dreamddp");
  refused(
      [](RunConfig& c) {
        c.algo = "localsgd";
        c.pull_alpha = 0.3;
      },
      "--pull-alpha: applies to --algo overlap-local|palsgd");
  refused(
      [](RunConfig& c) {
        c.algo = "cocod";
        c.delay = 1;
      },
      "--delay: applies to --algo dasgd|palsgd");
  refused(
      [](RunConfig& c) {
        c.algo = "palsgd";
        c.pull_prob = 1.5;
      },
      "--pull-prob: must be in [0, 1]");
  refused(
      [](RunConfig& c) {
        c.algo = "palsgd";
        c.delay = 5;
      },
      "--delay: must be in 0..H");
  refused(
      [](RunConfig& c) {
        c.algo = "mtdao";
        c.betas = "0.9,x";
      },
      "--betas: 'x' is not a number");
  refused(
      [](RunConfig& c) {
        c.algo = "mtdao";
        c.betas = "0.9,1.0";
      },
      "--betas: each decay must be in [0, 1)");
  refused(
      [](RunConfig& c) {
        c.algo = "mtdao";
        c.betas = "0.9,";
      },
      "--betas:");
  refused(
      [](RunConfig& c) {
        c.algo = "mtdao";
        c.betas = "0.9,0.99";
        c.beta1 = 0.8;
      },
      "--beta1: is replaced by --betas");
  refused(
      [](RunConfig& c) {
        c.algo = "mtdao";
        c.optimizer = "sgd";
        c.period_v = 4;
      },
      "--period-v: applies to --optimizer adamw only");
  refused(
      [](RunConfig& c) {
        c.algo = "mtdao";
        c.period_m = -1;
      },
      "--period-m: must be in 0..1000000");
  refused(
      [](RunConfig& c) {
        c.algo = "mtdao";
        c.compress = "topk:0.1";
      },
      "--compress: applies to the all-reduce variants");
  refused(
      [](RunConfig& c) {
        c.algo = "osp";
        c.osp_fraction = 0;
      },
      "--osp-fraction: must be in (0, 1]");
  refused(
      [](RunConfig& c) {
        c.algo = "osp";
        c.osp_select = "random";
      },
      "--osp-select: unknown rule 'random'");
  refused(
      [](RunConfig& c) {
        c.algo = "oldsgd";
        c.compress = "qsgd:bits=4";
      },
      "--compress: applies to the all-reduce variants");
  // Their own variants accept them.
  RunConfig ok;
  ok.algo = "palsgd";
  ok.pull_prob = 0.3;
  ok.pull_alpha = 0.2;
  ok.delay = 4;
  EXPECT_EQ(error_of([&] { config_validate(ok); }), "");
  ok = RunConfig{};
  ok.algo = "mtdao";
  ok.betas = "0.9,0.99,0.999";
  ok.period_m = 0;
  EXPECT_EQ(error_of([&] { config_validate(ok); }), "");
  ok = RunConfig{};
  ok.algo = "osp";
  ok.osp_fraction = 1;
  ok.osp_select = "static";
  EXPECT_EQ(error_of([&] { config_validate(ok); }), "");
  ok = RunConfig{};
  ok.algo = "oldsgd";
  ok.gossip_overlap = false;
  ok.period = 1;
  EXPECT_EQ(error_of([&] { config_validate(ok); }), "");
}

TEST(DefaultLr, EachOptimizerStartsFromItsOwnWhenLrIsNotGiven) {
  RunConfig cfg;  // lr not given
  EXPECT_EQ(cfg.lr, 0.0);
  EXPECT_DOUBLE_EQ(optimizer_base_lr(cfg), 0.05);  // ssgd: SGD
  EXPECT_DOUBLE_EQ(optimizer_create(cfg, 4, 1)->base_lr(), 0.05);
  cfg.algo = "diloco";  // auto: AdamW
  EXPECT_DOUBLE_EQ(optimizer_base_lr(cfg), 1e-3);
  EXPECT_DOUBLE_EQ(optimizer_create(cfg, 4, 1)->base_lr(), 1e-3);
  cfg.optimizer = "sgd";
  EXPECT_DOUBLE_EQ(optimizer_base_lr(cfg), 0.05);
  cfg = RunConfig{};
  cfg.optimizer = "adamw";
  EXPECT_DOUBLE_EQ(optimizer_base_lr(cfg), 1e-3);
  cfg.lr = 0.02;  // given: used as is
  EXPECT_DOUBLE_EQ(optimizer_base_lr(cfg), 0.02);
  cfg.lr_scaling = "linear";
  cfg.lr_base_batch = 32;  // batch 64 on 2 workers: ×4
  EXPECT_DOUBLE_EQ(optimizer_create(cfg, 4, 2)->base_lr(), 0.08);
  cfg.lr = 0;
  EXPECT_DOUBLE_EQ(optimizer_create(cfg, 4, 2)->base_lr(), 4e-3);  // the default is scaled too
  EXPECT_EQ(error_of([&] { config_validate(cfg); }), "");          // not given is valid
  cfg.lr = -1;
  EXPECT_NE(error_of([&] { config_validate(cfg); }).find("--lr: must be > 0"), std::string::npos);
}

TEST(DefaultLr, AnExplicitZeroIsRefusedAndAFileWithoutLrKeepsTheDefault) {
  RunConfig cfg;
  EXPECT_NE(
      error_of([&] { run_config_load_text(cfg, R"({"lr": 0})", "c.json", false); }).find("key 'lr' must be positive"),
      std::string::npos);
  cfg = RunConfig{};
  run_config_load_text(cfg, "algo = \"diloco\"\nperiod = 8\n", "c.toml", true);
  EXPECT_EQ(cfg.lr, 0.0);
  EXPECT_DOUBLE_EQ(optimizer_base_lr(cfg), 1e-3);
  run_config_load_text(cfg, "lr = 0.004\n", "d.toml", true);
  EXPECT_DOUBLE_EQ(optimizer_base_lr(cfg), 0.004);
  // A stored configuration (the run's config JSON holds the effective rate) loads back the same;
  // one without lr leaves the key out, so it loads back as not given (the tuner's session base).
  RunConfig back;
  run_config_apply_json(back, run_config_to_json(cfg), "stored");
  EXPECT_DOUBLE_EQ(optimizer_base_lr(back), 0.004);
  RunConfig unset;
  unset.algo = "diloco";
  EXPECT_FALSE(run_config_to_json(unset).contains("lr"));
  RunConfig back2;
  run_config_apply_json(back2, run_config_to_json(unset), "stored");
  EXPECT_EQ(back2.lr, 0.0);
  EXPECT_DOUBLE_EQ(optimizer_base_lr(back2), 1e-3);
}

}  // namespace
}  // namespace dsgd
