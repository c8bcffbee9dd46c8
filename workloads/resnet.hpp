// The `resnet` workload: CIFAR-style residual networks (He et al. 2016) on images.
//   resnet8/20/32/56: 3×3 stem (16 channels), 3 stages of n = 1/3/5/9 basic blocks with
//     16/32/64 channels (stride 1/2/2), global average pooling, linear head.
//   resnet18 (CIFAR form): 3×3 stem (64), no max-pool, 4 stages of 2 basic blocks with
//     64/128/256/512 channels (stride 1/2/2/2), global average pooling, linear head.
// Basic block: out = relu(bn2(conv2(relu(bn1(conv1(x))))) + shortcut(x)); the shortcut is the
// identity when the shape is kept, else a projection 1×1 conv (stride 2) + BN ("option B"),
// in every model. Convolutions have no bias (BN follows each one). Loss: softmax cross-entropy.
// Input shape (channels × height × width) and classes come from the dataset; inputs are
// normalised per channel with the training set's mean and standard deviation; --augment adds a
// random crop (4-pixel zero padding, after normalisation) and a horizontal flip with p = 1/2,
// drawn from (seed, load_batch call, sample index).
// Parameters: one flat buffer; a *layer* is one conv+BN pair, laid out [conv weights (Cout,
// Cin, k, k) | γ (Cout) | β (Cout)], or the head [W (classes, C) | b (classes)]. Layers are
// numbered in forward order (stem, then per block conv1, conv2, shortcut, ..., head); backward
// runs the exact reverse and calls hook(layer) right after that layer's weight gradients are
// written, before its input gradient is computed.
// BatchNorm running statistics are state, not parameters: each workload instance (each worker)
// keeps its own, updated by its own training forwards; evaluate() uses them (evaluation mode)
// and never changes them. So under the trainer each rank evaluates its slice of the test set
// with the consensus parameters and its own running statistics.
// Each convolution runs on one of two backends, chosen per layer shape by the measured table
// of layers/conv2d_dnnl.cpp (conv2d_pick_backend): im2col + SGEMM over the whole batch, or
// oneDNN (when the build has it). set_conv_backend forces one for every layer (benchmarks,
// tests). With the nChw8c layout (below) and the "auto" choice, the 3×3 stride-1
// convolutions run on our own direct kernels instead of oneDNN (layers/conv3x3_blocked.hpp,
// faster on these shapes; backend "direct"). Activations (all but the input images, which are CNHW) are stored in one
// layout for the whole network: nChw8c (layers/blocked_layout.hpp) when every convolution after the stem runs on oneDNN
// and every channel count is a multiple of 8, so that the oneDNN convolutions read and write them in place with no
// conversion between layers (an im2col stem writes CNHW into a scratch tensor that is converted once); otherwise CNHW
// (see layers/conv2d.hpp). set_activation_layout forces one. The layouts round differently (BN sums in another order):
// same seed → same result for a given backend and layout. With nChw8c each block's second BN map runs fused into the
// residual join (one pass: out = max(BN(z) + shortcut, 0)), and the join's backward hands the masked gradient to that
// BN's backward directly; with an identity shortcut that gradient is added after conv1's
// input gradient, which oneDNN then writes in place.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "workloads/layers/batchnorm.hpp"
#include "workloads/layers/blocked_layout.hpp"
#include "workloads/layers/conv2d.hpp"
#include "workloads/layers/conv2d_dnnl.hpp"
#include "workloads/layers/conv3x3_blocked.hpp"
#include "workloads/workload.hpp"

namespace dsgd {

class SlotTimer;  // workloads/layers/kernel_profile.hpp

struct ImageShape {
  size_t channels = 0, height = 0, width = 0;
  size_t size() const { return channels * height * width; }
};

// The architecture of a named model.
struct ResNetArch {
  std::string name;
  size_t stem_channels = 16;
  std::vector<size_t> stage_channels;  // one per stage
  std::vector<size_t> stage_blocks;    // basic blocks per stage
};

// Known names: resnet8, resnet20, resnet32, resnet56, resnet18. Throws InputError otherwise.
ResNetArch resnet_arch(const std::string& model);
std::vector<std::string> resnet_model_names();

class ResNetWorkload final : public Workload {
 public:
  // mean/stdev: per-channel input normalisation (input.channels entries each).
  ResNetWorkload(const ResNetArch& arch, ImageShape input, int classes, std::vector<float> mean,
                 const std::vector<float>& stdev, bool augment, uint64_t seed);

  std::string name() const override { return "resnet"; }
  const std::vector<LayerView>& layers() const override { return layers_; }
  size_t param_count() const override { return param_count_; }
  void reserve(size_t max_batch) override;
  // reserve()'s buffers, and per convolution its oneDNN operand copies (DnnlConv2d::
  // buffer_bytes) or the direct kernels' weight copies. Not counted: oneDNN's scratchpads, and
  // the primitives an evaluation's last, shorter chunk creates (tens of MB for ResNet-20).
  double reserve_bytes(size_t max_batch) const override;
  void load_batch(const Dataset& ds, const uint32_t* idx, size_t n) override;
  // The running statistics and the augmentation batch counter (throws Error for another workload or shape).
  void copy_training_state(const Workload& other) override;
  // Convolutions and the head: 2 FLOPs per multiply-add forward, backward 2× forward (weight
  // and input gradients; the stem's input gradient is not computed but counted, as usual).
  // BatchNorm, ReLU, pooling and the loss are left out.
  double flops_per_sample() const override;

  const ResNetArch& arch() const { return arch_; }
  ImageShape input_shape() const { return input_; }
  // BatchNorm running statistics, per conv+BN layer [mean (C) | var (C)], in layer order.
  const std::vector<float>& bn_running_stats() const { return running_; }
  size_t conv_layer_count() const { return units_.size(); }
  // "auto" (the per-shape table, and the direct kernels where the layout is nChw8c), "im2col"
  // or "onednn" for every convolution. Throws InputError on another name, or "onednn" in a
  // build without oneDNN.
  void set_conv_backend(const std::string& which);
  // "auto" (nChw8c where possible, see above), "cnhw" or "nchw8c". Throws InputError on
  // another name, or "nchw8c" where the network cannot keep it.
  void set_activation_layout(const std::string& which);
  ActivationLayout activation_layout() const { return layout_; }
  // The backend of conv+BN layer `unit` (0 = stem, in forward order).
  ConvBackend conv_backend(size_t unit) const { return units_.at(unit).backend; }
  // The layer name of conv+BN unit `unit` (e.g. "stage1.block0.conv1").
  const std::string& conv_layer_name(size_t unit) const { return layers_.at(units_.at(unit).layer).name; }
  // The shape of conv+BN unit `unit` (n = 0: set per call).
  const Conv2dShape& conv_shape(size_t unit) const { return units_.at(unit).conv; }
  // Profiling (layers/kernel_profile.hpp enabled): seconds spent per unit since reserve() or
  // clear_unit_seconds(), [2u] forward (conv + BN/ReLU), [2u+1] backward (BN + conv gradients).
  const std::vector<double>& unit_seconds() const { return unit_seconds_; }
  void clear_unit_seconds() { std::fill(unit_seconds_.begin(), unit_seconds_.end(), 0.0); }

 protected:
  void do_init_params(float* params, uint64_t seed) const override;
  double do_forward(const float* params) override;
  void do_backward(const float* params, float* grads, const LayerHook& hook) override;
  EvalSums do_evaluate(const float* params, const Dataset& ds, size_t begin, size_t end) override;

 private:
  static constexpr size_t kNone = ~size_t{0};
  struct Tensor {
    size_t c = 0, h = 0, w = 0;
    size_t offset = 0;       // into the activation arenas (capacity samples)
    size_t grad_offset = 0;  // into the gradient arena (kNoGrad: none)
  };
  struct Unit {        // conv + BN (+ ReLU)
    Conv2dShape conv;  // n is set per call
    size_t in = 0, z = 0, out = 0;
    bool relu = true;
    bool needs_dx = true;
    ConvBackend backend = ConvBackend::im2col;
    size_t layer = 0;
    size_t w_off = 0, gamma_off = 0, beta_off = 0;  // into params
    size_t stat_off = 0;                            // into running_/batch_mean_/batch_invstd_
    size_t join_block = kNone;                      // a block's conv2: with nChw8c its BN map runs in the join
    // A block's conv1 where the shortcut is the identity: with nChw8c the shortcut's gradient
    // is added onto this unit's input gradient after it (which then needs no accumulate).
    size_t identity_block = kNone;
  };
  struct Block {
    size_t conv1 = 0, conv2 = 0, shortcut = kNone;  // units
    size_t in = 0, out = 0;                         // tensors
  };
  enum class OpKind { op_unit, op_join };
  struct Op {
    OpKind kind;
    size_t index;  // unit or block
  };

  size_t add_tensor(size_t c, size_t h, size_t w, bool grad);
  size_t add_unit(size_t in, size_t c_out, size_t k, size_t stride, size_t pad, bool relu, bool needs_dx,
                  const std::string& name);
  void copy_input(const Dataset& ds, size_t row, size_t slot, size_t n, float* input, bool augment_this,
                  uint64_t stream);
  void check_dataset(const Dataset& ds, const char* what) const;
  // Runs the network on the n samples already in arena's input; returns the logits pointer.
  const float* run_forward(float* arena, float* pooled, float* logits, size_t n, const float* params, bool train);
  // The steps of run_forward and do_backward (resnet_passes.cpp), one per kind of op.
  void forward_conv(float* arena, size_t n, size_t index, const float* params);
  void forward_batchnorm(float* arena, size_t n, size_t index, const float* params, bool train);
  void forward_join(float* arena, size_t n, size_t index, bool train);
  void forward_head(float* arena, float* pooled, float* logits, size_t n, const float* params);
  void backward_head(const float* params, float* grads, const LayerHook& hook);
  void backward_join(size_t index);
  void backward_unit(size_t index, const float* params, float* grads, const LayerHook& hook);
  void backward_batchnorm(size_t index, const float* params, float* grads, float* d);
  void backward_conv_primitive(size_t index, const float* params, float* grads, const float* d,
                               std::optional<SlotTimer>& ut, const LayerHook& hook);
  void backward_conv_im2col(size_t index, const float* params, float* grads, float* d, std::optional<SlotTimer>& ut,
                            const LayerHook& hook);
  // The oneDNN convolution of unit u for batch n at the current thread count and layouts
  // (created on first use, then kept).
  DnnlConv2d& dnnl_conv(size_t u, size_t n);
  // Whether every unit and tensor can keep nChw8c (see the header comment).
  bool blocked_possible() const;
  // Sets every unit's backend from conv_choice_ and layout_ from layout_choice_ (throws when
  // nchw8c is forced but not possible).
  void resolve_backends_and_layout();
  // The direct 3×3 convolution of unit u for batch n (created on first use, then kept).
  BlockedConv3x3& direct_conv(size_t u, size_t n);
  // The layout of unit u's input (the images are CNHW).
  ActivationLayout in_layout(const Unit& u) const { return u.in == 0 ? ActivationLayout::cnhw : layout_; }

  ResNetArch arch_;
  ImageShape input_;
  size_t classes_;
  std::vector<float> mean_, inv_std_;
  bool augment_;
  uint64_t seed_;

  std::vector<Tensor> tensors_;
  std::vector<Unit> units_;
  std::vector<Block> blocks_;
  std::vector<Op> ops_;
  std::vector<LayerView> layers_;
  size_t per_sample_floats_ = 0;       // activation floats per sample
  size_t per_sample_grad_floats_ = 0;  // gradient floats per sample
  size_t head_in_ = 0, head_w_off_ = 0, head_b_off_ = 0, head_layer_ = 0;
  size_t last_tensor_ = 0;
  size_t param_count_ = 0;
  size_t bn_stat_count_ = 0;
  std::vector<float> running_;  // running mean/var per unit
  BatchNormOptions bn_;
  std::string layout_choice_ = "auto";
  std::string conv_choice_ = "auto";
  ActivationLayout layout_ = ActivationLayout::cnhw;

  // Step buffers (reserve).
  size_t cap_ = 0;
  size_t batch_n_ = 0;
  bool have_forward_ = false;
  uint64_t load_calls_ = 0;
  std::vector<float> act_, act_grad_, eval_act_, col_;
  std::vector<float> stem_cnhw_;  // nChw8c with an im2col stem: its CNHW output / gradient
  std::vector<float> batch_mean_, batch_invstd_;
  std::vector<float> batch_affine_;  // per unit [scale (C) | shift (C)] of the training forward's BN
  std::vector<float> eval_affine_;   // the same from the running statistics (evaluation forward)
  std::vector<float> pooled_, dpooled_, logits_, eval_pooled_, eval_logits_;
  std::vector<int32_t> labels_;
  std::vector<unsigned char> grad_written_;
  std::vector<double> unit_seconds_;                                  // profiling only
  std::vector<std::vector<std::unique_ptr<DnnlConv2d>>> dnnl_;        // per unit, one per batch size
  std::vector<std::vector<std::unique_ptr<BlockedConv3x3>>> direct_;  // likewise
};

// Creates the workload for `train` (which must be an image dataset); model "" = resnet20.
// Throws InputError on an unknown model or a dataset without an image shape.
std::unique_ptr<Workload> resnet_create(const std::string& model, const Dataset& train, bool augment, uint64_t seed);

}  // namespace dsgd
