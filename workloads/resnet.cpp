// The `resnet` workload (see resnet.hpp): graph construction, batch assembly (normalisation
// and augmentation), and the evaluate pass; the training step's forward / backward passes over
// workloads/layers/ are in resnet_passes.cpp.
// BatchNorm, ReLU and the residual join run on the --threads threads too (layers/
// layer_threads.hpp); im2col/col2im and the loss are single-threaded. forward/backward/load_batch
// never allocate at the reserved batch size (another batch size makes its oneDNN primitives
// once, on first use).
#include "workloads/resnet.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/errors.hpp"
#include "core/rng.hpp"
#include "workloads/layers/softmax_cross_entropy.hpp"

namespace dsgd {

namespace {
constexpr uint64_t kStreamInit = 0x7e5;
constexpr uint64_t kStreamAugment = 0x7e6;
constexpr long kCropPad = 4;
}  // namespace

std::vector<std::string> resnet_model_names() {
  return {"resnet8", "resnet20", "resnet32", "resnet56", "resnet18"};
}

ResNetArch resnet_arch(const std::string& model) {
  ResNetArch a;
  a.name = model;
  auto cifar = [&](size_t n) {
    a.stem_channels = 16;
    a.stage_channels = {16, 32, 64};
    a.stage_blocks = {n, n, n};
  };
  if (model == "resnet8") {
    cifar(1);
  } else if (model == "resnet20") {
    cifar(3);
  } else if (model == "resnet32") {
    cifar(5);
  } else if (model == "resnet56") {
    cifar(9);
  } else if (model == "resnet18") {
    a.stem_channels = 64;
    a.stage_channels = {64, 128, 256, 512};
    a.stage_blocks = {2, 2, 2, 2};
  } else {
    DSGD_THROW(InputError, "known models for --workload resnet: resnet8, resnet20, resnet32, resnet56, resnet18",
               "unknown --model '{}' for --workload resnet", model);
  }
  return a;
}

ResNetWorkload::ResNetWorkload(const ResNetArch& arch, ImageShape input, int classes, std::vector<float> mean,
                               const std::vector<float>& stdev, bool augment, uint64_t seed)
    : arch_(arch),
      input_(input),
      classes_(static_cast<size_t>(classes)),
      mean_(std::move(mean)),
      augment_(augment),
      seed_(seed) {
  for (float s : stdev) inv_std_.push_back(s > 0 ? 1.0f / s : 1.0f);
  size_t x = add_tensor(input.channels, input.height, input.width, false);
  x = units_[add_unit(x, arch.stem_channels, 3, 1, 1, true, false, "stem")].out;
  for (size_t s = 0; s < arch.stage_channels.size(); ++s) {
    const size_t c = arch.stage_channels[s];
    for (size_t b = 0; b < arch.stage_blocks[s]; ++b) {
      const size_t stride = (s > 0 && b == 0) ? 2 : 1;
      const std::string prefix = fmt::format("stage{}.block{}.", s + 1, b);
      Block blk;
      blk.in = x;
      const bool project = stride != 1 || tensors_[x].c != c;
      blk.conv1 = add_unit(x, c, 3, stride, 1, true, true, prefix + "conv1");
      blk.conv2 = add_unit(units_[blk.conv1].out, c, 3, 1, 1, false, true, prefix + "conv2");
      units_[blk.conv2].join_block = blocks_.size();
      if (!project) units_[blk.conv1].identity_block = blocks_.size();
      if (project) blk.shortcut = add_unit(x, c, 1, stride, 0, false, true, prefix + "shortcut");
      const Tensor& o = tensors_[units_[blk.conv2].out];
      blk.out = add_tensor(o.c, o.h, o.w, true);
      blocks_.push_back(blk);
      ops_.push_back(Op{OpKind::op_join, blocks_.size() - 1});
      x = blk.out;
    }
  }
  last_tensor_ = x;
  head_in_ = tensors_[x].c;
  head_layer_ = layers_.size();
  head_w_off_ = param_count_;
  head_b_off_ = param_count_ + classes_ * head_in_;
  layers_.push_back(LayerView{"head", param_count_, classes_ * head_in_ + classes_});
  param_count_ += classes_ * head_in_ + classes_;
  running_.assign(bn_stat_count_, 0.0f);
  for (const Unit& u : units_)  // running variance starts at 1
    std::fill(running_.begin() + long(u.stat_off + u.conv.c_out),
              running_.begin() + long(u.stat_off + 2 * u.conv.c_out), 1.0f);
  resolve_backends_and_layout();
}

size_t ResNetWorkload::add_tensor(size_t c, size_t h, size_t w, bool grad) {
  Tensor t;
  t.c = c;
  t.h = h;
  t.w = w;
  t.offset = per_sample_floats_;
  per_sample_floats_ += c * h * w;
  t.grad_offset = kNone;
  if (grad) {
    t.grad_offset = per_sample_grad_floats_;
    per_sample_grad_floats_ += c * h * w;
  }
  tensors_.push_back(t);
  return tensors_.size() - 1;
}

size_t ResNetWorkload::add_unit(size_t in, size_t c_out, size_t k, size_t stride, size_t pad, bool relu, bool needs_dx,
                                const std::string& name) {
  Unit u;
  const Tensor t = tensors_[in];
  u.conv = Conv2dShape{0, t.c, t.h, t.w, c_out, k, stride, pad};
  u.in = in;
  u.relu = relu;
  u.needs_dx = needs_dx;
  u.backend = conv2d_pick_backend(u.conv);
  u.z = add_tensor(c_out, u.conv.h_out(), u.conv.w_out(), false);
  u.out = add_tensor(c_out, u.conv.h_out(), u.conv.w_out(), true);
  u.layer = layers_.size();
  u.w_off = param_count_;
  u.gamma_off = u.w_off + u.conv.weight_count();
  u.beta_off = u.gamma_off + c_out;
  const size_t count = u.conv.weight_count() + 2 * c_out;
  layers_.push_back(LayerView{name, param_count_, count});
  param_count_ += count;
  u.stat_off = bn_stat_count_;
  bn_stat_count_ += 2 * c_out;
  units_.push_back(u);
  ops_.push_back(Op{OpKind::op_unit, units_.size() - 1});
  return units_.size() - 1;
}

void ResNetWorkload::set_conv_backend(const std::string& which) {
  if (which != "auto" && which != "im2col" && which != "onednn") {
    DSGD_THROW(InputError, "use auto, im2col or onednn", "unknown convolution backend '{}'", which);
  }
  if (which == "onednn" && !conv2d_dnnl_available()) {
    DSGD_THROW(InputError, "install libdnnl-dev and rebuild (cmake -DDSGD_WITH_DNNL=ON), or use im2col",
               "convolution backend onednn requested, but this build has no oneDNN");
  }
  conv_choice_ = which;
  resolve_backends_and_layout();
  if (cap_ > 0) reserve(cap_);
}

bool ResNetWorkload::blocked_possible() const {
  for (size_t t = 1; t < tensors_.size(); ++t)
    if (tensors_[t].c % kChannelBlock != 0) return false;
  for (const Unit& u : units_)  // only the stem (reading the CNHW images) may be im2col
    if (u.backend == ConvBackend::im2col && (u.in != 0 || u.needs_dx)) return false;
  return true;
}

void ResNetWorkload::set_activation_layout(const std::string& which) {
  if (which != "auto" && which != "cnhw" && which != "nchw8c") {
    DSGD_THROW(InputError, "use auto, cnhw or nchw8c", "unknown activation layout '{}'", which);
  }
  const std::string before = layout_choice_;
  layout_choice_ = which;
  try {
    resolve_backends_and_layout();
  } catch (...) {
    layout_choice_ = before;
    throw;
  }
  if (cap_ > 0) reserve(cap_);
}

void ResNetWorkload::resolve_backends_and_layout() {
  for (Unit& u : units_) {
    if (conv_choice_ == "auto")
      u.backend = conv2d_pick_backend(u.conv);
    else
      u.backend = conv_choice_ == "onednn" ? ConvBackend::onednn : ConvBackend::im2col;
  }
  const bool possible = blocked_possible();
  if (layout_choice_ == "nchw8c" && !possible) {
    DSGD_THROW(InputError, "use the oneDNN backend for every convolution after the stem, or the cnhw layout",
               "activation layout nchw8c needs every convolution after the stem on oneDNN and channel counts "
               "divisible by 8");
  }
  layout_ = layout_choice_ == "cnhw" || !possible ? ActivationLayout::cnhw : ActivationLayout::nchw8c;
  if (conv_choice_ != "auto" || layout_ != ActivationLayout::nchw8c) return;
  for (Unit& u : units_) {
    Conv2dShape s = u.conv;
    s.n = 1;
    if (u.backend == ConvBackend::onednn && conv3x3_blocked_supported(s)) u.backend = ConvBackend::direct;
  }
}

BlockedConv3x3& ResNetWorkload::direct_conv(size_t u, size_t n) {
  auto& cache = direct_[u];
  for (auto& c : cache)
    if (c->shape().n == n) return *c;
  Conv2dShape s = units_[u].conv;
  s.n = n;
  cache.push_back(std::make_unique<BlockedConv3x3>(s));
  return *cache.back();
}

DnnlConv2d& ResNetWorkload::dnnl_conv(size_t u, size_t n) {
  auto& cache = dnnl_[u];
  const int threads = DnnlConv2d::current_threads();
  const ActivationLayout in = in_layout(units_[u]);
  for (auto& c : cache)
    if (c->shape().n == n && c->threads() == threads && c->in_layout() == in && c->out_layout() == layout_) return *c;
  Conv2dShape s = units_[u].conv;
  s.n = n;
  cache.push_back(std::make_unique<DnnlConv2d>(s, in, layout_));
  return *cache.back();
}

void ResNetWorkload::do_init_params(float* params, uint64_t seed) const {
  Rng rng(rng_derive_seed(seed, kStreamInit));
  // He (Kaiming) normal init, fan-in: std = sqrt(2 / (Cin k k)); γ = 1, β = 0.
  for (const Unit& u : units_) {
    const double std = std::sqrt(2.0 / static_cast<double>(u.conv.patch()));
    for (size_t i = 0; i < u.conv.weight_count(); ++i) params[u.w_off + i] = static_cast<float>(std * rng.normal());
    for (size_t c = 0; c < u.conv.c_out; ++c) {
      params[u.gamma_off + c] = 1.0f;
      params[u.beta_off + c] = 0.0f;
    }
  }
  // Head: uniform(−1/sqrt(C), 1/sqrt(C)) for W and b (PyTorch's nn.Linear default).
  const double bound = 1.0 / std::sqrt(static_cast<double>(head_in_));
  for (size_t i = 0; i < classes_ * head_in_ + classes_; ++i)
    params[head_w_off_ + i] = static_cast<float>(bound * (2.0 * rng.uniform() - 1.0));
}

void ResNetWorkload::reserve(size_t max_batch) {
  cap_ = max_batch;
  act_.assign(per_sample_floats_ * cap_, 0.0f);
  eval_act_.assign(per_sample_floats_ * cap_, 0.0f);
  act_grad_.assign(per_sample_grad_floats_ * cap_, 0.0f);
  size_t col = 1;
  dnnl_.clear();
  dnnl_.resize(units_.size());
  direct_.clear();
  direct_.resize(units_.size());
  for (size_t i = 0; i < units_.size(); ++i) {
    Conv2dShape s = units_[i].conv;
    s.n = cap_;
    // The step's primitives, kernels and buffers, made here, not during a step.
    if (units_[i].backend == ConvBackend::onednn)
      dnnl_conv(i, cap_);
    else if (units_[i].backend == ConvBackend::direct)
      direct_conv(i, cap_);
    else
      col = std::max(col, s.col_size());
  }
  col_.assign(col, 0.0f);
  const Unit& stem = units_.front();
  const bool stem_scratch = layout_ == ActivationLayout::nchw8c && stem.backend == ConvBackend::im2col;
  stem_cnhw_.assign(stem_scratch ? stem.conv.c_out * cap_ * stem.conv.h_out() * stem.conv.w_out() : 0, 0.0f);
  batch_mean_.assign(bn_stat_count_, 0.0f);
  batch_invstd_.assign(bn_stat_count_, 0.0f);
  batch_affine_.assign(bn_stat_count_, 0.0f);
  eval_affine_.assign(bn_stat_count_, 0.0f);
  pooled_.assign(cap_ * head_in_, 0.0f);
  dpooled_.assign(cap_ * head_in_, 0.0f);
  eval_pooled_.assign(cap_ * head_in_, 0.0f);
  logits_.assign(cap_ * classes_, 0.0f);
  eval_logits_.assign(cap_ * classes_, 0.0f);
  labels_.assign(cap_, 0);
  grad_written_.assign(tensors_.size(), 0);
  unit_seconds_.assign(2 * units_.size(), 0.0);
  have_forward_ = false;
  batch_n_ = 0;
}

double ResNetWorkload::reserve_bytes(size_t max_batch) const {
  const double cap = static_cast<double>(max_batch), f = sizeof(float);
  // Activations (training and evaluation) and their gradients.
  double bytes =
      (2.0 * static_cast<double>(per_sample_floats_) + static_cast<double>(per_sample_grad_floats_)) * cap * f;
  double col = 1;
  for (size_t i = 0; i < units_.size(); ++i) {
    Conv2dShape s = units_[i].conv;
    s.n = max_batch;
    if (units_[i].backend == ConvBackend::onednn)
      bytes += DnnlConv2d::buffer_bytes(s, in_layout(units_[i]), layout_);
    else if (units_[i].backend == ConvBackend::direct)
      bytes += 3.0 * static_cast<double>(s.weight_count()) * f;
    else
      col = std::max(col, static_cast<double>(s.col_size()));
  }
  bytes += col * f;
  const Unit& stem = units_.front();
  if (layout_ == ActivationLayout::nchw8c && stem.backend == ConvBackend::im2col)
    bytes += static_cast<double>(stem.conv.c_out * stem.conv.h_out() * stem.conv.w_out()) * cap * f;
  bytes += 4.0 * static_cast<double>(bn_stat_count_) * f;  // batch mean, inverse stdev, two affines
  bytes += (3.0 * static_cast<double>(head_in_) + 2.0 * static_cast<double>(classes_)) * cap * f;  // pooled, logits
  bytes += cap * sizeof(int32_t) + static_cast<double>(tensors_.size()) + 2.0 * static_cast<double>(units_.size()) * 8;
  return bytes;
}

void ResNetWorkload::check_dataset(const Dataset& ds, const char* what) const {
  if (ds.channels != input_.channels || ds.height != input_.height || ds.width != input_.width) {
    DSGD_THROW(Error, "train and evaluate on datasets with the same image shape",
               "resnet: {} on dataset {} with images {}x{}x{}, but the model takes {}x{}x{}", what, ds.name,
               ds.channels, ds.height, ds.width, input_.channels, input_.height, input_.width);
  }
}

// Copies sample `row` of ds into slot `slot` of the CNHW input (batch n), normalised, and
// (augment_this) cropped from the 4-pixel zero-padded image and maybe flipped.
void ResNetWorkload::copy_input(const Dataset& ds, size_t row, size_t slot, size_t n, float* input, bool augment_this,
                                uint64_t stream) {
  const size_t H = input_.height, W = input_.width, hw = H * W;
  const float* src = ds.dense.data() + row * input_.size();
  long oy = 0, ox = 0;
  bool flip = false;
  if (augment_this) {
    Rng rng(rng_derive_seed(seed_, kStreamAugment, stream, row));
    oy = static_cast<long>(rng.below(2 * kCropPad + 1)) - kCropPad;
    ox = static_cast<long>(rng.below(2 * kCropPad + 1)) - kCropPad;
    flip = rng.below(2) == 1;
  }
  for (size_t c = 0; c < input_.channels; ++c) {
    const float m = mean_[c], is = inv_std_[c];
    const float* sc = src + c * hw;
    float* dst = input + (c * n + slot) * hw;
    if (!augment_this) {
      for (size_t i = 0; i < hw; ++i) dst[i] = (sc[i] - m) * is;
      continue;
    }
    for (size_t y = 0; y < H; ++y) {
      const long sy = static_cast<long>(y) + oy;
      for (size_t x = 0; x < W; ++x) {
        const size_t xo = flip ? W - 1 - x : x;  // flip the output column
        const long sx = static_cast<long>(x) + ox;
        const bool inside = sy >= 0 && sy < long(H) && sx >= 0 && sx < long(W);
        dst[y * W + xo] = inside ? (sc[size_t(sy) * W + size_t(sx)] - m) * is : 0.0f;
      }
    }
  }
}

void ResNetWorkload::copy_training_state(const Workload& other) {
  const auto* from = dynamic_cast<const ResNetWorkload*>(&other);
  if (!from || from->running_.size() != running_.size())
    DSGD_THROW(Error, "this is a bug: copy the training state between instances of one configuration",
               "resnet: copy_training_state from {} with {} running statistics, this one has {}", other.name(),
               from ? from->running_.size() : 0, running_.size());
  std::copy(from->running_.begin(), from->running_.end(), running_.begin());
  load_calls_ = from->load_calls_;
}

void ResNetWorkload::load_batch(const Dataset& ds, const uint32_t* idx, size_t n) {
  if (n == 0 || n > cap_) {
    DSGD_THROW(Error, "call reserve(max_batch) with the largest batch first",
               "resnet: load_batch of {} samples, but reserve() sized the buffers for {}", n, cap_);
  }
  check_dataset(ds, "load_batch");
  float* input = act_.data() + tensors_[0].offset * cap_;
  const uint64_t stream = load_calls_++;
  for (size_t i = 0; i < n; ++i) {
    copy_input(ds, idx[i], i, n, input, augment_, stream);
    labels_[i] = ds.labels[idx[i]];
  }
  batch_n_ = n;
  have_forward_ = false;
}

EvalSums ResNetWorkload::do_evaluate(const float* params, const Dataset& ds, size_t begin, size_t end) {
  EvalSums sums;
  if (begin >= end) return sums;
  check_dataset(ds, "evaluate");
  if (end > ds.rows) {
    DSGD_THROW(Error, "", "resnet: evaluate range [{}, {}) is beyond the {} rows of {}", begin, end, ds.rows, ds.name);
  }
  if (cap_ == 0) reserve(64);  // not part of the step: allocate when reserve() was never called
  float* input = eval_act_.data() + tensors_[0].offset * cap_;
  for (size_t r0 = begin; r0 < end; r0 += cap_) {
    const size_t n = std::min(cap_, end - r0);
    for (size_t i = 0; i < n; ++i) copy_input(ds, r0 + i, i, n, input, false, 0);
    run_forward(eval_act_.data(), eval_pooled_.data(), eval_logits_.data(), n, params, false);
    double correct = 0;
    const double loss =
        softmax_cross_entropy_forward(eval_logits_.data(), ds.labels.data() + r0, n, classes_, &correct);
    sums.loss_sum += loss * static_cast<double>(n);
    sums.correct += correct;
    sums.count += static_cast<double>(n);
  }
  return sums;
}

double ResNetWorkload::flops_per_sample() const {
  double f = 0;
  for (const Unit& u : units_) {
    Conv2dShape s = u.conv;
    s.n = 1;
    f += s.forward_flops();
  }
  f += 2.0 * static_cast<double>(head_in_ * classes_);
  return 3.0 * f;
}

std::unique_ptr<Workload> resnet_create(const std::string& model, const Dataset& train, bool augment, uint64_t seed) {
  const ResNetArch arch = resnet_arch(model.empty() ? "resnet20" : model);
  if (train.sparse || train.channels == 0 || train.height == 0 || train.width == 0) {
    DSGD_THROW(InputError, "use an image dataset: fashion-mnist, cifar10:DIR or synthetic:shape=CxHxW,classes=K",
               "--workload resnet needs images, but dataset {} is {} with {} features and no image shape", train.name,
               train.sparse ? "sparse" : "dense", train.features);
  }
  if (train.classes < 2 || train.rows == 0) {
    DSGD_THROW(InputError, "check the dataset spec", "resnet: dataset {} has {} rows and {} class(es)", train.name,
               train.rows, train.classes);
  }
  const ImageShape shape{train.channels, train.height, train.width};
  // Per-channel mean and standard deviation of the training images.
  std::vector<float> mean(shape.channels), stdev(shape.channels);
  const size_t hw = shape.height * shape.width;
  for (size_t c = 0; c < shape.channels; ++c) {
    double s = 0, s2 = 0;
    for (size_t r = 0; r < train.rows; ++r) {
      const float* p = train.dense.data() + r * shape.size() + c * hw;
      for (size_t i = 0; i < hw; ++i) {
        s += p[i];
        s2 += double(p[i]) * p[i];
      }
    }
    const double cnt = double(train.rows) * double(hw);
    const double mu = s / cnt;
    mean[c] = static_cast<float>(mu);
    stdev[c] = static_cast<float>(std::sqrt(std::max(0.0, s2 / cnt - mu * mu)));
  }
  return std::make_unique<ResNetWorkload>(arch, shape, train.classes, std::move(mean), stdev, augment, seed);
}

}  // namespace dsgd
