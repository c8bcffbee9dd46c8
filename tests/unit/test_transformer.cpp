// The transformer workload (workloads/transformer.*) and the text datasets
// (workloads/datasets/text.cpp): layout, GPT-2 init, the whole model's gradient against
// central finite differences, the layer hook's order and finality, overfitting a small
// batch, determinism, evaluation, and the bad-input messages.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "algorithms/optimizer.hpp"
#include "core/errors.hpp"
#include "core/run_config.hpp"
#include "grad_check.hpp"
#include "workloads/datasets/dataset.hpp"
#include "workloads/datasets/subset.hpp"
#include "workloads/transformer.hpp"

namespace dsgd {
namespace {

// A hand-made text dataset over `vocab` symbols, windows of seq+1.
Dataset tiny_text(size_t tokens, int vocab, size_t seq, unsigned seed = 3) {
  Dataset d;
  d.name = "tiny";
  d.classes = vocab;
  unsigned s = seed;
  for (size_t i = 0; i < tokens; ++i) {
    s = s * 1664525u + 1013904223u;
    d.tokens.push_back(static_cast<int32_t>((s >> 16) % static_cast<unsigned>(vocab)));
  }
  dataset_set_window(d, seq + 1);
  return d;
}

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no exception)";
}

TEST(Transformer, LayoutAndInit) {
  const TransformerConfig c{3, 16, 4, 8, 20};
  TransformerWorkload w(c);
  const size_t D = 16;
  const size_t block = 2 * D + 3 * D * D + 3 * D + D * D + D + 2 * D + 4 * D * D + 4 * D + 4 * D * D + D;
  EXPECT_EQ(w.param_count(), (20 + 8) * D + 3 * block + 2 * D + 20 * D);
  ASSERT_EQ(w.layers().size(), 5u);
  EXPECT_EQ(w.layers()[0].name, "embedding");
  EXPECT_EQ(w.layers()[1].name, "block0");
  EXPECT_EQ(w.layers()[4].name, "head");
  size_t offset = 0;
  for (const LayerView& l : w.layers()) {
    EXPECT_EQ(l.offset, offset);
    offset += l.count;
  }
  EXPECT_EQ(offset, w.param_count());
  std::vector<float> p(w.param_count()), q(w.param_count());
  w.init_params(p.data(), 42);
  w.init_params(q.data(), 42);
  EXPECT_EQ(p, q);
  w.init_params(q.data(), 43);
  EXPECT_NE(p, q);
  // Statistics: wte std 0.02; a block's W_proj std 0.02/sqrt(2L); LN gamma 1, beta 0.
  auto stdev = [](const float* x, size_t n) {
    double s = 0;
    for (size_t i = 0; i < n; ++i) s += double(x[i]) * x[i];
    return std::sqrt(s / double(n));
  };
  EXPECT_NEAR(stdev(p.data(), 20 * D), 0.02, 0.003);
  const float* b0 = p.data() + w.layers()[1].offset;
  EXPECT_EQ(b0[0], 1.0f);  // ln1 gamma
  EXPECT_EQ(b0[D], 0.0f);  // ln1 beta
  const size_t w_proj = block - D - 4 * D * D;
  EXPECT_NEAR(stdev(b0 + w_proj, 4 * D * D), 0.02 / std::sqrt(6.0), 0.001);
  const size_t w_fc = w_proj - 4 * D - 4 * D * D;
  EXPECT_NEAR(stdev(b0 + w_fc, 4 * D * D), 0.02, 0.002);
  // 6 S (12 L D^2 + V D) + 6 L S (S+1) D: the attention's products over the causal pairs only
  // (S = 8: 36 of the 64 query-key pairs).
  EXPECT_DOUBLE_EQ(w.flops_per_sample(), 6.0 * 8 * (12.0 * 3 * D * D + 20.0 * D) + 6.0 * 3 * 8 * 9 * D);
}

TEST(Transformer, GradientMatchesFiniteDifferences) {
  // Whole model, every parameter. Loss is a mean over 2·4 tokens of O(1) cross-entropies;
  // float rounding in the forward is ~1e-6, so the difference quotient's noise is
  // ~1e-6 / 2h = 5e-5 with h = 1e-2, and its truncation error O(h²) ~1e-4 — well inside the
  // grad_check defaults (atol 2e-3, rtol 2e-2). Init std is raised to 0.3 so that the
  // attention and MLP paths carry gradients well above the tolerance; at that scale the
  // curvature makes h = 1e-2's truncation error a few per cent (measured: 6 % on two
  // position embeddings), so h = 3e-3 (rounding noise 1e-6 / 6e-3 ≈ 2e-4, still < atol).
  const TransformerConfig c{2, 8, 2, 4, 6};
  TransformerWorkload w(c);
  const Dataset ds = tiny_text(40, 6, c.seq);
  std::vector<float> p(w.param_count()), g(w.param_count());
  w.init_params(p.data(), 5);
  for (auto& v : p) v *= 15.0f;
  for (size_t l = 1; l <= c.layers; ++l)  // keep LayerNorm gammas near 1 (they were 15)
    for (size_t k = 0; k < c.d_model; ++k) p[w.layers()[l].offset + k] = 1.0f + 0.1f * float(k % 3);
  w.reserve(2);
  const uint32_t idx[2] = {3, 17};
  w.load_batch(ds, idx, 2);
  w.forward(p.data());
  w.backward(p.data(), g.data(), LayerHook{});
  double gnorm = 0;
  for (float v : g) gnorm += double(v) * v;
  EXPECT_GT(gnorm, 1e-2);
  auto f = [&] { return w.forward(p.data()); };
  testing::GradCheckTolerance tol;
  tol.h = 3e-3;
  testing::expect_gradient_matches(f, p, g, "transformer params", tol);
}

struct HookRecord {
  const float* grads = nullptr;
  const std::vector<LayerView>* layers = nullptr;
  std::vector<size_t> order;
  std::vector<std::vector<float>> snapshot;
};

void record_hook(void* ctx, size_t layer) {
  auto* r = static_cast<HookRecord*>(ctx);
  r->order.push_back(layer);
  const LayerView& v = (*r->layers)[layer];
  r->snapshot[layer].assign(r->grads + v.offset, r->grads + v.offset + v.count);
}

TEST(Transformer, HookFiresOncePerLayerInReverseAfterTheGradientIsFinal) {
  const TransformerConfig c{3, 8, 2, 4, 6};
  TransformerWorkload w(c);
  const Dataset ds = tiny_text(50, 6, c.seq);
  std::vector<float> p(w.param_count()), g(w.param_count(), std::nanf(""));
  w.init_params(p.data(), 1);
  w.reserve(3);
  const uint32_t idx[3] = {0, 9, 30};
  HookRecord rec;
  rec.grads = g.data();
  rec.layers = &w.layers();
  rec.snapshot.resize(w.layers().size());
  for (int step = 0; step < 2; ++step) {
    rec.order.clear();
    w.load_batch(ds, idx, 3);
    w.forward(p.data());
    w.backward(p.data(), g.data(), LayerHook{record_hook, &rec});
    ASSERT_EQ(rec.order, (std::vector<size_t>{4, 3, 2, 1, 0}));
    for (size_t l = 0; l < w.layers().size(); ++l) {
      const LayerView& v = w.layers()[l];
      for (size_t k = 0; k < v.count; ++k) {
        ASSERT_TRUE(std::isfinite(rec.snapshot[l][k])) << "layer " << l << " not written at its hook";
        ASSERT_EQ(rec.snapshot[l][k], g[v.offset + k]) << "layer " << l << " changed after its hook";
      }
    }
    for (float& v : g) v = std::nanf("");
  }
}

TEST(Transformer, EvaluateBetweenForwardAndBackwardIsHarmless) {
  const TransformerConfig c{2, 8, 2, 4, 6};
  TransformerWorkload w(c);
  const Dataset ds = tiny_text(60, 6, c.seq);
  std::vector<float> p(w.param_count()), g1(w.param_count()), g2(w.param_count());
  w.init_params(p.data(), 2);
  w.reserve(2);
  const uint32_t idx[2] = {1, 2};
  w.load_batch(ds, idx, 2);
  const double l1 = w.forward(p.data());
  w.backward(p.data(), g1.data(), LayerHook{});
  w.load_batch(ds, idx, 2);
  const double l2 = w.forward(p.data());
  const EvalSums e = w.evaluate(p.data(), ds, 0, ds.rows);
  w.backward(p.data(), g2.data(), LayerHook{});
  EXPECT_EQ(l1, l2);
  EXPECT_EQ(g1, g2);
  // Non-overlapping windows at 0, 4, ..., < rows: ceil(rows / 4) windows of 4 tokens.
  EXPECT_EQ(e.count, double((ds.rows + 3) / 4 * 4));
  EXPECT_GE(e.correct, 0);
  EXPECT_LE(e.correct, e.count);
  // At init the logits are near 0: the loss per token is near ln V.
  EXPECT_NEAR(e.loss_sum / e.count, std::log(6.0), 0.05);
}

// An evaluation covers the windows at multiples of seq: split over any number of ranks (the
// trainer's slices rows·r/n), the sums are the whole set's; an --eval-subset of text is those
// windows' own evaluation, window by window.
TEST(Transformer, EvaluationWindowsDoNotDependOnTheRanksAndASubsetIsThoseWindows) {
  const TransformerConfig c{2, 8, 2, 4, 6};
  TransformerWorkload w(c);
  const Dataset ds = tiny_text(203, 6, c.seq);
  std::vector<float> p(w.param_count());
  w.init_params(p.data(), 7);
  const EvalSums whole = w.evaluate(p.data(), ds, 0, ds.rows);
  EXPECT_EQ(whole.count, double((ds.rows + c.seq - 1) / c.seq * c.seq));
  for (size_t ranks : {2u, 3u, 5u, 8u}) {
    EvalSums sum;
    for (size_t r = 0; r < ranks; ++r) {
      const EvalSums part = w.evaluate(p.data(), ds, ds.rows * r / ranks, ds.rows * (r + 1) / ranks);
      sum.loss_sum += part.loss_sum;
      sum.correct += part.correct;
      sum.count += part.count;
    }
    EXPECT_EQ(sum.count, whole.count) << ranks << " ranks";
    EXPECT_EQ(sum.correct, whole.correct) << ranks << " ranks";
    EXPECT_NEAR(sum.loss_sum, whole.loss_sum, 1e-6 * whole.loss_sum) << ranks << " ranks";
  }
  const size_t windows = dataset_eval_windows(ds);
  ASSERT_EQ(windows, (ds.rows + c.seq - 1) / c.seq);
  const Dataset sub = dataset_stratified_subset(ds, 10);
  const EvalSums of_subset = w.evaluate(p.data(), sub, 0, sub.rows);
  EvalSums expected;
  for (size_t i = 0; i < 10; ++i) {
    const size_t start = i * windows / 10 * c.seq;
    const EvalSums one = w.evaluate(p.data(), ds, start, start + 1);
    expected.loss_sum += one.loss_sum;
    expected.correct += one.correct;
    expected.count += one.count;
  }
  EXPECT_EQ(of_subset.count, 10.0 * c.seq);
  EXPECT_EQ(of_subset.count, expected.count);
  EXPECT_EQ(of_subset.correct, expected.correct);
  EXPECT_NEAR(of_subset.loss_sum, expected.loss_sum, 1e-6 * expected.loss_sum);  // float32 batch means
  // Split over ranks, the subset is still its 10 windows.
  const EvalSums a = w.evaluate(p.data(), sub, 0, sub.rows / 3), b = w.evaluate(p.data(), sub, sub.rows / 3, sub.rows);
  EXPECT_EQ(a.count + b.count, of_subset.count);
}

// The forward hook fires twice per block (before it, between its attention and MLP halves)
// and once before the head, in order, in a training forward only.
TEST(Transformer, ForwardHookFiresBetweenBlockHalvesOfATrainingForwardOnly) {
  const TransformerConfig c{2, 8, 2, 4, 6};
  TransformerWorkload w(c);
  const Dataset ds = tiny_text(60, 6, c.seq);
  std::vector<float> p(w.param_count());
  w.init_params(p.data(), 2);
  w.reserve(2);
  const uint32_t idx[2] = {1, 2};
  std::vector<size_t> seen;
  w.set_forward_hook(
      LayerHook{[](void* ctx, size_t i) { static_cast<std::vector<size_t>*>(ctx)->push_back(i); }, &seen});
  w.load_batch(ds, idx, 2);
  w.forward(p.data());
  EXPECT_EQ(seen, (std::vector<size_t>{0, 1, 2, 3, 4}));
  seen.clear();
  w.evaluate(p.data(), ds, 0, ds.rows);
  EXPECT_TRUE(seen.empty()) << "an evaluation called the forward hook";
}

// SGD with momentum on one fixed batch; returns the losses.
std::vector<double> train_fixed_batch(const TransformerConfig& c, const Dataset& ds, int steps, uint64_t seed,
                                      double lr = 0.1) {
  TransformerWorkload w(c);
  std::vector<float> p(w.param_count()), g(w.param_count());
  w.init_params(p.data(), seed);
  SgdOptimizer opt(SgdOptions{lr, 0.9, 0.0, false}, w.param_count());
  const std::vector<uint32_t> idx = {0, 100, 200, 300};
  w.reserve(idx.size());
  std::vector<double> losses;
  for (int s = 0; s < steps; ++s) {
    w.load_batch(ds, idx.data(), idx.size());
    losses.push_back(w.forward(p.data()));
    w.backward(p.data(), g.data(), LayerHook{});
    opt.step(p.data(), g.data());
  }
  return losses;
}

TEST(Transformer, TinyGptOverfitsASmallBatchDeterministically) {
  // Random bytes cannot be predicted, so a falling loss means memorisation of the batch:
  // 4 windows × 16 tokens of uniform bytes start at ln 256 = 5.5 nats.
  const TransformerConfig c{2, 32, 2, 16, 256};
  const Dataset ds = tiny_text(400, 256, c.seq);
  // (Measured: lr 0.1 reaches 0.004 nats by step 50; 0.03 reaches 0.17; 0.3 is unstable.)
  const std::vector<double> a = train_fixed_batch(c, ds, 60, 7);
  EXPECT_NEAR(a.front(), std::log(256.0), 0.1);
  EXPECT_LT(a.back(), 0.1) << "did not overfit";
  const std::vector<double> b = train_fixed_batch(c, ds, 5, 7);
  for (size_t i = 0; i < b.size(); ++i) EXPECT_EQ(a[i], b[i]) << "same seed, different loss at step " << i;
}

TEST(TextDatasets, SyntheticTextHasTheStatedEntropy) {
  const DatasetPair d = dataset_load("synthetic-text:n=200000,test=1000,symbols=6", 9);
  EXPECT_EQ(d.train.tokens.size(), 200000u);
  EXPECT_EQ(d.test.tokens.size(), 1000u);
  EXPECT_EQ(d.train.classes, 256);
  // Empirical conditional entropy H(c | a, b) from counts.
  std::map<int, std::map<int, double>> counts;
  for (size_t i = 2; i < d.train.tokens.size(); ++i)
    counts[d.train.tokens[i - 2] * 256 + d.train.tokens[i - 1]][d.train.tokens[i]] += 1;
  double h = 0, total = 0;
  for (auto& [ctx, next] : counts) {
    double n = 0;
    for (auto& [c, k] : next) n += k;
    EXPECT_LE(next.size(), 4u);
    for (auto& [c, k] : next) h -= k * std::log(k / n);
    total += n;
  }
  EXPECT_NEAR(h / total, synthetic_text_entropy_nats(), 0.01);
  EXPECT_NEAR(synthetic_text_entropy_nats(), 1.0627, 1e-4);
  for (int32_t t : d.train.tokens) ASSERT_TRUE(t >= 'a' && t < 'a' + 6);
  const DatasetPair again = dataset_load("synthetic-text:n=200000,test=1000,symbols=6", 9);
  EXPECT_EQ(again.train.tokens, d.train.tokens);
  EXPECT_THROW(dataset_load("synthetic-text:symbols=99", 1), InputError);
  EXPECT_THROW(dataset_validate_spec("synthetic-text:n=x"), InputError);
}

TEST(TextDatasets, FortunesSplitAndWindows) {
  DatasetPair d = dataset_load("fortunes", 1);
  const double n_train = double(d.train.tokens.size()), n_test = double(d.test.tokens.size());
  EXPECT_GT(n_train, 1e6);
  EXPECT_NEAR(n_test / (n_train + n_test), 0.1, 0.03);  // every 10th fortune
  EXPECT_EQ(d.train.classes, 256);
  dataset_set_window(d.train, 129);
  EXPECT_EQ(d.train.rows, d.train.tokens.size() - 128);
  EXPECT_EQ(d.train.window, 129u);
  const std::string msg = message_of([&] { dataset_set_window(d.test, d.test.tokens.size() + 1); });
  EXPECT_NE(msg.find("fewer than one window"), std::string::npos) << msg;
  EXPECT_THROW(dataset_validate_spec("fortunes:/nonexistent"), InputError);
}

TEST(TextDatasets, AnyFileSplitsTheLastTenPercent) {
  const std::string path = (std::filesystem::temp_directory_path() / "dsgd_text_test.txt").string();
  {
    std::ofstream out(path, std::ios::binary);
    for (int i = 0; i < 100; ++i) out << char('A' + i % 26);
  }
  const DatasetPair d = dataset_load("text:" + path, 1);
  EXPECT_EQ(d.train.tokens.size(), 90u);
  EXPECT_EQ(d.test.tokens.size(), 10u);
  EXPECT_EQ(d.train.tokens[0], 'A');
  EXPECT_EQ(d.test.tokens[0], 'A' + 90 % 26);
  dataset_validate_spec("text:" + path);
  std::remove(path.c_str());
  EXPECT_THROW(dataset_validate_spec("text:" + path), InputError);
}

TEST(TransformerInput, ClearMessages) {
  RunConfig cfg;
  cfg.workload = "transformer";
  cfg.model = "gpt";
  cfg.layers = 1;
  cfg.d_model = 8;
  cfg.heads = 2;
  cfg.seq = 4;
  // Not text (an image/feature dataset).
  const DatasetPair images = dataset_load("synthetic:n=10,d=4,test=2", 1);
  std::string msg = message_of([&] { workload_create(cfg, images.train); });
  EXPECT_NE(msg.find("needs text"), std::string::npos) << msg;
  // Vocabulary too small for byte text.
  cfg.vocab = 100;
  DatasetPair text = dataset_load("synthetic-text:n=100,test=20", 1);
  workload_prepare_data(cfg, text);
  msg = message_of([&] { workload_create(cfg, text.train); });
  EXPECT_NE(msg.find("--vocab 100 is too small"), std::string::npos) << msg;
  cfg.vocab = 256;
  EXPECT_EQ(workload_create(cfg, text.train)->name(), "transformer");
  // --seq longer than the text.
  cfg.seq = 500;
  DatasetPair short_text = dataset_load("synthetic-text:n=100,test=20", 1);
  msg = message_of([&] { workload_prepare_data(cfg, short_text); });
  EXPECT_NE(msg.find("fewer than one window"), std::string::npos) << msg;
  EXPECT_NE(msg.find("--seq 500"), std::string::npos) << msg;
  // Text with a workload that does not read text; a model the transformer does not have.
  cfg.seq = 4;
  cfg.workload = "svm";
  cfg.model.clear();
  msg = message_of([&] { workload_prepare_data(cfg, text); });
  EXPECT_NE(msg.find("cannot read"), std::string::npos) << msg;
  cfg.workload = "transformer";
  cfg.model = "resnet20";
  EXPECT_THROW(workload_create(cfg, text.train), InputError);
}

}  // namespace
}  // namespace dsgd
