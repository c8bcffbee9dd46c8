// The resnet workload (workloads/resnet.*) and the image datasets (synthetic images,
// CIFAR-10 binary): layer hook order and finality, gradient of the whole network against
// finite differences, training/evaluation modes, overfitting a small batch, FLOPs and
// parameter counts, determinism, and the bad-input messages.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <tuple>
#include <vector>

#include "core/errors.hpp"
#include "core/run_config.hpp"
#include "float_compare.hpp"
#include "workloads/datasets/dataset.hpp"
#include "workloads/resnet.hpp"

namespace dsgd {
namespace {

std::string input_error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no InputError)";
}

DatasetPair tiny_images(size_t c = 3, size_t hw = 8, size_t n = 64, int classes = 4, uint64_t seed = 1) {
  return dataset_load(fmt::format("synthetic:shape={}x{}x{},classes={},n={},test=16,noise=0.3", c, hw, hw, classes, n),
                      seed);
}

// Two gradients of the same network agree per layer in relative L2 within 2e-2 (the bound
// of ConvBackendsAgreeAndEachIsDeterministic, which explains it); every layer non-zero.
void expect_layers_close(const std::vector<LayerView>& layers, const std::vector<float>& ga,
                         const std::vector<float>& gb) {
  for (const LayerView& v : layers) {
    double d2 = 0, n2 = 0;
    for (size_t i = v.offset; i < v.offset + v.count; ++i) {
      d2 += double(ga[i] - gb[i]) * double(ga[i] - gb[i]);
      n2 += double(ga[i]) * double(ga[i]);
    }
    ASSERT_GT(n2, 0.0) << v.name;
    EXPECT_LT(std::sqrt(d2 / n2), 2e-2) << v.name;
  }
}

struct Recorder {
  std::vector<size_t> order;
  std::vector<std::vector<float>> at_hook;  // the layer's gradient slice when its hook fired
  const float* grads = nullptr;
  const std::vector<LayerView>* layers = nullptr;
  static void fn(void* ctx, size_t layer) {
    auto* r = static_cast<Recorder*>(ctx);
    r->order.push_back(layer);
    const LayerView& v = (*r->layers)[layer];
    r->at_hook[layer].assign(r->grads + v.offset, r->grads + v.offset + v.count);
  }
};

TEST(ResNet, HookFiresOncePerLayerInReverseOrderWithFinalGradients) {
  const DatasetPair data = tiny_images();
  auto wl = resnet_create("resnet8", data.train, false, 1);
  wl->reserve(8);
  std::vector<float> params(wl->param_count()), grads(wl->param_count(), std::nanf(""));
  wl->init_params(params.data(), 3);
  const std::vector<uint32_t> idx = {0, 1, 2, 3, 4, 5, 6, 7};
  wl->load_batch(data.train, idx.data(), idx.size());
  wl->forward(params.data());
  Recorder rec;
  rec.grads = grads.data();
  rec.layers = &wl->layers();
  rec.at_hook.resize(wl->layers().size());
  wl->backward(params.data(), grads.data(), LayerHook{Recorder::fn, &rec});
  const size_t L = wl->layers().size();
  // resnet8: stem, 3 blocks of conv1+conv2, 2 projection shortcuts, head.
  ASSERT_EQ(L, 1u + 6u + 2u + 1u);
  ASSERT_EQ(rec.order.size(), L);
  for (size_t i = 0; i < L; ++i) EXPECT_EQ(rec.order[i], L - 1 - i) << "hook call " << i;
  // The slice seen by the hook is final: identical to the gradient after backward returns,
  // and every float of the buffer was written (none left NaN).
  for (size_t l = 0; l < L; ++l) {
    const LayerView& v = wl->layers()[l];
    for (size_t k = 0; k < v.count; ++k) {
      ASSERT_EQ(rec.at_hook[l][k], grads[v.offset + k]) << v.name << "[" << k << "]";
      ASSERT_FALSE(std::isnan(grads[v.offset + k])) << v.name;
    }
  }
  // The views tile the flat buffer in order.
  size_t off = 0;
  for (const LayerView& v : wl->layers()) {
    EXPECT_EQ(v.offset, off) << v.name;
    off += v.count;
  }
  EXPECT_EQ(off, wl->param_count());
}

// The forward hook fires between the ops of a training forward (one per conv+BN unit and per
// residual join: resnet8 has 9 units and 3 joins), numbered in order, and never in an
// evaluation; the loss is the same with and without it.
TEST(ResNet, ForwardHookFiresBetweenTheOpsOfATrainingForwardOnly) {
  const DatasetPair data = tiny_images();
  auto wl = resnet_create("resnet8", data.train, false, 1);
  wl->reserve(8);
  std::vector<float> params(wl->param_count());
  wl->init_params(params.data(), 3);
  const std::vector<uint32_t> idx = {0, 1, 2, 3, 4, 5, 6, 7};
  wl->load_batch(data.train, idx.data(), idx.size());
  const double plain = wl->forward(params.data());
  std::vector<size_t> seen;
  wl->set_forward_hook(
      LayerHook{[](void* ctx, size_t i) { static_cast<std::vector<size_t>*>(ctx)->push_back(i); }, &seen});
  wl->load_batch(data.train, idx.data(), idx.size());
  EXPECT_EQ(wl->forward(params.data()), plain);
  ASSERT_EQ(seen.size(), 12u);
  for (size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i], i);
  seen.clear();
  wl->evaluate(params.data(), data.test, 0, data.test.rows);
  EXPECT_TRUE(seen.empty()) << "an evaluation called the forward hook";
}

// The whole network's gradient against central differences of the training loss (BatchNorm
// in training mode, so the loss is a smooth function of the parameters apart from ReLU
// kinks), at sampled coordinates of every layer. h = 2e-3: small enough that ±h rarely moves
// a ReLU input across 0 (h = 1e-2 did for one stem weight: 0.033 vs 0.027), large enough
// that float rounding of the loss (~1e-6 through 10 layers) stays ~2.5e-4 after dividing by
// 2h. Tolerance atol 3e-3 + rtol 5e-2; the loss is accumulated in double.
TEST(ResNet, GradientMatchesFiniteDifferences) {
  const DatasetPair data = tiny_images(2, 6, 16, 3, 5);
  auto wl = resnet_create("resnet8", data.train, false, 1);
  wl->reserve(6);
  std::vector<float> params(wl->param_count()), grads(wl->param_count());
  wl->init_params(params.data(), 9);
  const std::vector<uint32_t> idx = {0, 1, 2, 3, 4, 5};
  wl->load_batch(data.train, idx.data(), idx.size());
  wl->forward(params.data());
  wl->backward(params.data(), grads.data(), LayerHook{});
  int checked = 0, bad = 0;
  const double h = 2e-3;
  for (const LayerView& v : wl->layers()) {
    for (size_t s = 0; s < 6; ++s) {
      const size_t k = v.offset + (s * 7919 + 13) % v.count;
      const float saved = params[k];
      params[k] = static_cast<float>(saved + h);
      const double plus = wl->forward(params.data());
      params[k] = static_cast<float>(saved - h);
      const double minus = wl->forward(params.data());
      params[k] = saved;
      const double fd = (plus - minus) / (2 * h);
      ++checked;
      if (std::fabs(fd - grads[k]) > 3e-3 + 5e-2 * std::fabs(grads[k])) {
        ++bad;
        ADD_FAILURE() << v.name << " param " << k - v.offset << ": fd " << fd << " vs analytic " << grads[k];
      }
    }
  }
  EXPECT_EQ(bad, 0) << "of " << checked;
}

TEST(ResNet, EvaluationModeDoesNotChangeTrainingState) {
  const DatasetPair data = tiny_images();
  auto wl_base = resnet_create("resnet8", data.train, false, 1);
  auto* wl = dynamic_cast<ResNetWorkload*>(wl_base.get());
  ASSERT_NE(wl, nullptr);
  wl->reserve(8);
  std::vector<float> params(wl->param_count()), g1(wl->param_count()), g2(wl->param_count());
  wl->init_params(params.data(), 3);
  const std::vector<uint32_t> idx = {3, 1, 4, 1, 5, 9, 2, 6};
  const std::vector<float> running0 = wl->bn_running_stats();
  wl->load_batch(data.train, idx.data(), idx.size());
  const double loss1 = wl->forward(params.data());
  const std::vector<float> running1 = wl->bn_running_stats();
  EXPECT_NE(running0, running1);  // a training forward moves the running statistics
  // evaluate between forward and backward: running statistics and the pending backward unchanged.
  const EvalSums e1 = wl->evaluate(params.data(), data.test, 0, data.test.rows);
  EXPECT_EQ(wl->bn_running_stats(), running1);
  wl->backward(params.data(), g1.data(), LayerHook{});
  EXPECT_EQ(e1.count, double(data.test.rows));
  // Same batch again from scratch gives the same loss and gradient (no hidden state but the
  // running statistics, which the training forward does not read).
  wl->load_batch(data.train, idx.data(), idx.size());
  EXPECT_EQ(wl->forward(params.data()), loss1);
  wl->backward(params.data(), g2.data(), LayerHook{});
  EXPECT_EQ(g1, g2);
  // Evaluation uses the running statistics: evaluating twice gives identical sums.
  const EvalSums e2 = wl->evaluate(params.data(), data.test, 0, data.test.rows);
  const EvalSums e3 = wl->evaluate(params.data(), data.test, 0, data.test.rows);
  EXPECT_EQ(e2.loss_sum, e3.loss_sum);
  EXPECT_NE(e1.loss_sum, e2.loss_sum);  // the running statistics moved in between
}

// Plain SGD with momentum on one batch: a tiny ResNet must drive the loss near zero.
TEST(ResNet, TinyResNetOverfitsASmallBatch) {
  const DatasetPair data = tiny_images(3, 8, 64, 8, 2);
  auto wl = resnet_create("resnet8", data.train, false, 4);
  const size_t n = 16;
  wl->reserve(n);
  std::vector<float> params(wl->param_count()), grads(wl->param_count()), mom(wl->param_count(), 0.0f);
  wl->init_params(params.data(), 4);
  std::vector<uint32_t> idx(n);
  for (size_t i = 0; i < n; ++i) idx[i] = static_cast<uint32_t>(i);
  wl->load_batch(data.train, idx.data(), n);
  double first = 0, loss = 0;
  for (int step = 0; step < 60; ++step) {
    loss = wl->forward(params.data());
    if (step == 0) first = loss;
    wl->backward(params.data(), grads.data(), LayerHook{});
    for (size_t k = 0; k < params.size(); ++k) {
      mom[k] = 0.9f * mom[k] + grads[k];
      params[k] -= 0.05f * mom[k];
    }
  }
  EXPECT_GT(first, 1.5);  // about log(8) at the start
  EXPECT_LT(loss, 0.05) << "started at " << first;
}

TEST(ResNet, ParameterAndFlopCounts) {
  Dataset cifar_like;
  cifar_like.name = "shape-only";
  cifar_like.rows = 1;
  cifar_like.features = 3 * 32 * 32;
  cifar_like.channels = 3;
  cifar_like.height = cifar_like.width = 32;
  cifar_like.classes = 10;
  cifar_like.dense.assign(cifar_like.features, 0.5f);
  cifar_like.labels = {0};
  // The CIFAR ResNet-18 with projection shortcuts and BN has 11,173,962 parameters (the
  // figure PyTorch reports for the same architecture).
  EXPECT_EQ(resnet_create("resnet18", cifar_like, false, 1)->param_count(), 11173962u);
  auto r8 = resnet_create("resnet8", cifar_like, false, 1);
  // By hand: convs (Cout · Cin·k·k · Ho·Wo multiply-adds) and the head, ×2 FLOPs, ×3 for
  // forward + backward.
  const double macs = 16.0 * 27 * 1024 + 2 * (16.0 * 144 * 1024)               // stem, stage 1
                      + 32.0 * 144 * 256 + 32.0 * 288 * 256 + 32.0 * 16 * 256  // stage 2 (+ shortcut)
                      + 64.0 * 288 * 64 + 64.0 * 576 * 64 + 64.0 * 32 * 64     // stage 3 (+ shortcut)
                      + 64.0 * 10;                                             // head
  EXPECT_DOUBLE_EQ(r8->flops_per_sample(), 3 * 2 * macs);
  // resnet20 has 3 blocks per stage: 1 + 18 convs + 2 shortcuts + head = 22 layers.
  EXPECT_EQ(resnet_create("resnet20", cifar_like, false, 1)->layers().size(), 22u);
  EXPECT_EQ(resnet_create("resnet56", cifar_like, false, 1)->layers().size(), 1u + 54u + 2u + 1u);
}

TEST(ResNet, SameSeedSameResultAndAugmentationIsSeeded) {
  const DatasetPair data = tiny_images();
  auto run = [&](bool augment, uint64_t seed) {
    auto wl = resnet_create("resnet8", data.train, augment, seed);
    wl->reserve(4);
    std::vector<float> params(wl->param_count()), grads(wl->param_count());
    wl->init_params(params.data(), seed);
    const std::vector<uint32_t> idx = {7, 8, 9, 10};
    wl->load_batch(data.train, idx.data(), idx.size());
    const double loss = wl->forward(params.data());
    wl->backward(params.data(), grads.data(), LayerHook{});
    return std::make_pair(loss, grads);
  };
  EXPECT_EQ(run(false, 5), run(false, 5));
  EXPECT_EQ(run(true, 5), run(true, 5));
  EXPECT_NE(run(true, 5).first, run(false, 5).first);
  EXPECT_NE(run(true, 5).first, run(true, 6).first);
}

// The two convolution backends compute the same network, and each alone is deterministic.
// Forward losses agree to float rounding. Gradients are compared per layer in relative L2:
// the backends round differently (~1e-6 relative per convolution), and a ReLU input within
// that distance of 0 flips one unit's mask, which moves a few upstream gradients by up to
// ~1e-2 relative (measured: perturbing the parameters by 1e-5 relative changes the im2col
// gradient by 6e-3 with this data). A layout or index error gives O(1), so the bound is 2e-2.
TEST(ResNet, ConvBackendsAgreeAndEachIsDeterministic) {
  if (!conv2d_dnnl_available()) GTEST_SKIP() << "built without oneDNN";
  const DatasetPair data = tiny_images(3, 8, 64, 4, 3);
  std::vector<LayerView> layers;
  auto run = [&](const std::string& backend) {
    auto base = resnet_create("resnet8", data.train, false, 2);
    auto* wl = dynamic_cast<ResNetWorkload*>(base.get());
    wl->set_conv_backend(backend);
    for (size_t u = 0; u < wl->conv_layer_count(); ++u)
      EXPECT_EQ(conv_backend_name(wl->conv_backend(u)), backend) << "unit " << u;
    layers = wl->layers();
    wl->reserve(8);
    std::vector<float> params(wl->param_count()), grads(wl->param_count());
    wl->init_params(params.data(), 2);
    const std::vector<uint32_t> idx = {0, 1, 2, 3, 4, 5, 6, 7};
    wl->load_batch(data.train, idx.data(), idx.size());
    const double loss = wl->forward(params.data());
    wl->backward(params.data(), grads.data(), LayerHook{});
    const EvalSums ev = wl->evaluate(params.data(), data.test, 0, data.test.rows);
    return std::make_tuple(loss, grads, ev.loss_sum);
  };
  const auto a = run("im2col"), b = run("onednn");
  EXPECT_EQ(b, run("onednn"));
  EXPECT_TRUE(testing::near_rel(std::get<0>(a), std::get<0>(b), 1e-5));  // ~1e-6 per layer, relative
  EXPECT_NEAR(std::get<2>(a), std::get<2>(b), 1e-4 * std::fabs(std::get<2>(a)));
  expect_layers_close(layers, std::get<1>(a), std::get<1>(b));
  auto base = resnet_create("resnet8", data.train, false, 2);
  auto* wl = dynamic_cast<ResNetWorkload*>(base.get());
  EXPECT_NE(input_error_of([&] { wl->set_conv_backend("cudnn"); }).find("unknown convolution backend"),
            std::string::npos);
}

// The two activation layouts compute the same network (oneDNN convolutions in both; the
// nChw8c one with an im2col stem, as ResNet-20 runs): losses to float rounding, gradients per
// layer in relative L2 with the bound and reasoning of ConvBackendsAgreeAndEachIsDeterministic
// (the BN sums round in another order), running statistics, and each layout deterministic.
// "auto" picks nChw8c exactly where every convolution after the stem is on oneDNN, and then the
// direct kernels for the 3×3 stride-1 convolutions (so this also checks those in a network).
TEST(ResNet, ActivationLayoutsAgreeAndAutoPicksBlockedWherePossible) {
  if (!conv2d_dnnl_available()) GTEST_SKIP() << "built without oneDNN";
  const DatasetPair data = tiny_images(1, 8, 64, 4, 3);
  std::vector<LayerView> layers;
  auto run = [&](const std::string& layout) {
    auto base = resnet_create("resnet8", data.train, false, 2);
    auto* wl = dynamic_cast<ResNetWorkload*>(base.get());
    EXPECT_EQ(wl->activation_layout(), ActivationLayout::nchw8c);  // auto, with oneDNN
    EXPECT_EQ(wl->conv_backend(0), ConvBackend::im2col);           // the 1-channel stem
    wl->set_activation_layout(layout);
    // nChw8c: the 3×3 stride-1 convolutions on the direct kernels, the rest on oneDNN.
    size_t direct = 0;
    for (size_t u = 1; u < wl->conv_layer_count(); ++u) {
      const Conv2dShape& cs = wl->conv_shape(u);
      const bool d = layout == "nchw8c" && cs.k == 3 && cs.stride == 1 &&
                     conv3x3_blocked_supported({1, cs.c_in, cs.h, cs.w, cs.c_out, 3, 1, 1});
      EXPECT_EQ(wl->conv_backend(u), d ? ConvBackend::direct : ConvBackend::onednn) << "unit " << u;
      direct += d;
    }
    // resnet8: stage 1's conv1 and conv2, stages 2 and 3's conv2 (an AVX2 + FMA build).
    if (layout == "nchw8c" && conv3x3_blocked_supported({1, 16, 8, 8, 16, 3, 1, 1})) {
      EXPECT_EQ(direct, 4u);
    }
    layers = wl->layers();
    wl->reserve(8);
    std::vector<float> params(wl->param_count()), grads(wl->param_count());
    wl->init_params(params.data(), 2);
    const std::vector<uint32_t> idx = {0, 1, 2, 3, 4, 5, 6, 7};
    double loss = 0;
    for (int step = 0; step < 2; ++step) {  // the second step sees the first's running statistics
      wl->load_batch(data.train, idx.data(), idx.size());
      loss = wl->forward(params.data());
      wl->backward(params.data(), grads.data(), LayerHook{});
    }
    const EvalSums ev = wl->evaluate(params.data(), data.test, 0, data.test.rows);
    return std::make_tuple(loss, grads, ev.loss_sum, wl->bn_running_stats());
  };
  const auto a = run("cnhw"), b = run("nchw8c");
  EXPECT_EQ(b, run("nchw8c"));
  EXPECT_EQ(a, run("cnhw"));
  EXPECT_TRUE(testing::near_rel(std::get<0>(a), std::get<0>(b), 1e-5));  // ~1e-6 per layer, relative
  EXPECT_NEAR(std::get<2>(a), std::get<2>(b), 1e-4 * std::fabs(std::get<2>(a)));
  const auto& ra = std::get<3>(a);
  const auto& rb = std::get<3>(b);
  for (size_t i = 0; i < ra.size(); ++i) ASSERT_NEAR(ra[i], rb[i], 1e-4 * (1 + std::fabs(ra[i]))) << "running " << i;
  expect_layers_close(layers, std::get<1>(a), std::get<1>(b));
  // Where a convolution after the stem runs on im2col, auto keeps CNHW and nchw8c is refused.
  auto base = resnet_create("resnet8", data.train, false, 2);
  auto* wl = dynamic_cast<ResNetWorkload*>(base.get());
  wl->set_conv_backend("im2col");
  EXPECT_EQ(wl->activation_layout(), ActivationLayout::cnhw);
  EXPECT_NE(input_error_of([&] { wl->set_activation_layout("nchw8c"); }).find("needs every convolution after the stem"),
            std::string::npos);
  EXPECT_EQ(wl->activation_layout(), ActivationLayout::cnhw);
  EXPECT_NE(input_error_of([&] { wl->set_activation_layout("nhwc"); }).find("unknown activation layout"),
            std::string::npos);
  wl->set_conv_backend("onednn");  // the refused choice was not kept: auto again
  EXPECT_EQ(wl->activation_layout(), ActivationLayout::nchw8c);
  // ResNet-18's wide layers run on im2col (conv2d_pick_backend): CNHW.
  const DatasetPair cifar = tiny_images(3, 8, 16, 4, 3);
  auto r18 = resnet_create("resnet18", cifar.train, false, 2);
  EXPECT_EQ(dynamic_cast<ResNetWorkload*>(r18.get())->activation_layout(), ActivationLayout::cnhw);
}

TEST(ImageDatasets, SyntheticImagesHaveShapeAndAreDeterministic) {
  const DatasetPair a = dataset_load("synthetic:shape=3x10x12,classes=5,n=50,test=10", 7);
  const DatasetPair b = dataset_load("synthetic:shape=3x10x12,classes=5,n=50,test=10", 7);
  EXPECT_EQ(a.train.channels, 3u);
  EXPECT_EQ(a.train.height, 10u);
  EXPECT_EQ(a.train.width, 12u);
  EXPECT_EQ(a.train.features, 360u);
  EXPECT_EQ(a.train.rows, 50u);
  EXPECT_EQ(a.test.rows, 10u);
  EXPECT_EQ(a.train.dense, b.train.dense);
  EXPECT_EQ(a.test.labels, b.test.labels);
  for (int32_t l : a.train.labels) EXPECT_TRUE(l >= 0 && l < 5);
  EXPECT_NE(dataset_load("synthetic:shape=3x10x12,classes=5,n=50,test=10", 8).train.dense, a.train.dense);
  EXPECT_NO_THROW(dataset_validate_spec("synthetic:shape=1x28x28,classes=10"));
  EXPECT_NE(input_error_of([] { dataset_validate_spec("synthetic:shape=3x32,classes=10"); }).find("CxHxW"),
            std::string::npos);
  // Fashion-MNIST carries its image shape.
  if (std::filesystem::exists("/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz")) {
    const Dataset t = dataset_read_idx("/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz",
                                       "/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz");
    EXPECT_EQ(t.channels, 1u);
    EXPECT_EQ(t.height, 28u);
    EXPECT_EQ(t.width, 28u);
  }
}

TEST(ImageDatasets, Cifar10BinaryReaderAndMissingFiles) {
  const auto dir = std::filesystem::temp_directory_path() / fmt::format("dsgd_cifar_{}", ::getpid());
  std::filesystem::create_directories(dir);
  auto write = [&](const std::string& name, int records, int label0) {
    std::ofstream f(dir / name, std::ios::binary);
    for (int r = 0; r < records; ++r) {
      f.put(static_cast<char>((label0 + r) % 10));
      for (int k = 0; k < 3072; ++k) f.put(static_cast<char>((k + r) % 256));
    }
  };
  for (int b = 1; b <= 4; ++b) write(fmt::format("data_batch_{}.bin", b), 2, b);
  // data_batch_5.bin missing: the message names it.
  std::string msg = input_error_of([&] { dataset_load("cifar10:" + dir.string(), 0); });
  EXPECT_NE(msg.find("data_batch_5.bin: no such file"), std::string::npos) << msg;
  msg = input_error_of([&] { dataset_validate_spec("cifar10:" + dir.string()); });
  EXPECT_NE(msg.find("data_batch_5.bin"), std::string::npos) << msg;
  write("data_batch_5.bin", 2, 5);
  write("test_batch.bin", 3, 0);
  const DatasetPair p = dataset_load("cifar10:" + dir.string(), 0);
  EXPECT_EQ(p.train.rows, 10u);
  EXPECT_EQ(p.test.rows, 3u);
  EXPECT_EQ(p.train.channels, 3u);
  EXPECT_EQ(p.train.height, 32u);
  EXPECT_EQ(p.train.labels[0], 1);
  EXPECT_EQ(p.train.labels[9], 6);
  EXPECT_FLOAT_EQ(p.train.dense[3072 + 5], 6.0f / 255.0f);  // record 1, pixel 5: (5 + 1) % 256
  // A truncated file is refused with its name.
  {
    std::ofstream f(dir / "test_batch.bin", std::ios::binary | std::ios::app);
    f.put('x');
  }
  msg = input_error_of([&] { dataset_load("cifar10:" + dir.string(), 0); });
  EXPECT_NE(msg.find("test_batch.bin"), std::string::npos) << msg;
  std::filesystem::remove_all(dir);
}

TEST(ResNet, BadInputMessages) {
  const DatasetPair images = tiny_images();
  std::string msg = input_error_of([&] { resnet_create("resnet19", images.train, false, 1); });
  EXPECT_NE(msg.find("unknown --model 'resnet19'"), std::string::npos) << msg;
  const DatasetPair flat = dataset_load("synthetic:n=20,d=30,classes=3", 1);
  msg = input_error_of([&] { resnet_create("resnet8", flat.train, false, 1); });
  EXPECT_NE(msg.find("needs images"), std::string::npos) << msg;
  const DatasetPair sparse = dataset_load("synthetic:n=20,d=1000,density=0.01,classes=3", 1);
  msg = input_error_of([&] { resnet_create("resnet20", sparse.train, false, 1); });
  EXPECT_NE(msg.find("sparse"), std::string::npos) << msg;
  // Through the registry, with the run configuration.
  RunConfig cfg;
  cfg.workload = "resnet";
  cfg.model = "gpt";
  msg = input_error_of([&] { workload_create(cfg, images.train); });
  EXPECT_NE(msg.find("unknown --model 'gpt'"), std::string::npos) << msg;
  cfg.model = "";
  EXPECT_EQ(workload_create(cfg, images.train)->name(), "resnet");  // default resnet20
}

}  // namespace
}  // namespace dsgd
