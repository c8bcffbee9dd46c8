// The `resnet` workload's training step (see resnet.hpp): the forward pass (conv, BatchNorm,
// residual join, pooling and head) and the backward pass over workloads/layers/, one helper per
// kind of step. Graph construction, batch assembly and evaluation are in resnet.cpp.
#include <cblas.h>

#include <algorithm>
#include <optional>

#include "core/errors.hpp"
#include "workloads/layers/batchnorm_blocked.hpp"
#include "workloads/layers/kernel_profile.hpp"
#include "workloads/layers/linear.hpp"
#include "workloads/layers/pooling.hpp"
#include "workloads/layers/relu.hpp"
#include "workloads/layers/softmax_cross_entropy.hpp"
#include "workloads/resnet.hpp"

namespace dsgd {

// Unit `index`'s convolution for batch n: its input to z.
void ResNetWorkload::forward_conv(float* arena, size_t n, size_t index, const float* params) {
  auto val = [&](size_t t) { return arena + tensors_[t].offset * cap_; };
  const Unit& u = units_[index];
  Conv2dShape s = u.conv;
  s.n = n;
  float* z = val(u.z);
  if (u.backend == ConvBackend::onednn) {
    KernelTimer kt(Kernel::onednn_fwd);
    dnnl_conv(index, n).forward(val(u.in), params + u.w_off, z);
  } else if (u.backend == ConvBackend::direct) {
    KernelTimer kt(Kernel::direct_fwd);
    direct_conv(index, n).forward(val(u.in), params + u.w_off, z);
  } else if (layout_ == ActivationLayout::nchw8c) {  // the stem: CNHW, converted once
    conv2d_forward(s, val(u.in), params + u.w_off, stem_cnhw_.data(), col_.data());
    cnhw_to_nchw8c(stem_cnhw_.data(), z, n, s.c_out, s.h_out() * s.w_out());
  } else {
    conv2d_forward(s, val(u.in), params + u.w_off, z, col_.data());
  }
}

// Unit `index`'s BatchNorm (+ ReLU) for batch n: z to out (training: batch statistics, which
// also update the running ones; evaluation: the running statistics).
void ResNetWorkload::forward_batchnorm(float* arena, size_t n, size_t index, const float* params, bool train) {
  auto val = [&](size_t t) { return arena + tensors_[t].offset * cap_; };
  const Unit& u = units_[index];
  Conv2dShape s = u.conv;
  s.n = n;
  float* z = val(u.z);
  float* out = val(u.out);
  KernelTimer kt(Kernel::bn_fwd);
  if (layout_ == ActivationLayout::nchw8c) {
    const BlockedBatchNormShape bs{s.c_out, n, s.h_out() * s.w_out()};
    if (u.join_block != kNone) {  // statistics only: the map runs in the join
      if (train) {
        batchnorm_blocked_forward_train(bs, bn_, z, params + u.gamma_off, params + u.beta_off, nullptr,
                                        batch_mean_.data() + u.stat_off, batch_invstd_.data() + u.stat_off,
                                        running_.data() + u.stat_off, running_.data() + u.stat_off + s.c_out, false,
                                        batch_affine_.data() + u.stat_off);
      } else {
        batchnorm_eval_affine(s.c_out, bn_, params + u.gamma_off, params + u.beta_off, running_.data() + u.stat_off,
                              running_.data() + u.stat_off + s.c_out, eval_affine_.data() + u.stat_off);
      }
      return;
    }
    if (train) {
      batchnorm_blocked_forward_train(bs, bn_, z, params + u.gamma_off, params + u.beta_off, out,
                                      batch_mean_.data() + u.stat_off, batch_invstd_.data() + u.stat_off,
                                      running_.data() + u.stat_off, running_.data() + u.stat_off + s.c_out, u.relu,
                                      batch_affine_.data() + u.stat_off);
    } else {
      batchnorm_blocked_forward_eval(bs, bn_, z, params + u.gamma_off, params + u.beta_off,
                                     running_.data() + u.stat_off, running_.data() + u.stat_off + s.c_out, out, u.relu);
    }
    return;
  }
  const BatchNormShape bs{s.c_out, s.cols()};
  if (train) {
    batchnorm_forward_train(bs, bn_, z, params + u.gamma_off, params + u.beta_off, out, batch_mean_.data() + u.stat_off,
                            batch_invstd_.data() + u.stat_off, running_.data() + u.stat_off,
                            running_.data() + u.stat_off + s.c_out, u.relu, batch_affine_.data() + u.stat_off);
  } else {
    batchnorm_forward_eval(bs, bn_, z, params + u.gamma_off, params + u.beta_off, running_.data() + u.stat_off,
                           running_.data() + u.stat_off + s.c_out, out, u.relu);
  }
}

// Block `index`'s residual join for batch n: out = max(conv2's output + shortcut, 0).
void ResNetWorkload::forward_join(float* arena, size_t n, size_t index, bool train) {
  auto val = [&](size_t t) { return arena + tensors_[t].offset * cap_; };
  const Block& b = blocks_[index];
  const Tensor& t = tensors_[b.out];
  const size_t count = t.c * n * t.h * t.w;
  const size_t s = b.shortcut == kNone ? b.in : units_[b.shortcut].out;
  KernelTimer kt(Kernel::join_fwd);
  if (layout_ == ActivationLayout::nchw8c) {  // out = max(BN2(z2) + shortcut, 0)
    const Unit& c2 = units_[b.conv2];
    const float* affine = (train ? batch_affine_ : eval_affine_).data() + c2.stat_off;
    batchnorm_blocked_affine_add_relu(BlockedBatchNormShape{t.c, n, t.h * t.w}, val(c2.z), affine, val(s), val(b.out));
    return;
  }
  add_relu_forward(val(units_[b.conv2].out), val(s), val(b.out), count);
}

// Global average pooling of the last tensor into pooled, then the linear head into logits.
void ResNetWorkload::forward_head(float* arena, float* pooled, float* logits, size_t n, const float* params) {
  auto val = [&](size_t t) { return arena + tensors_[t].offset * cap_; };
  KernelTimer kt(Kernel::pool_head);
  const Tensor& last = tensors_[last_tensor_];
  if (layout_ == ActivationLayout::nchw8c)
    global_avg_pool_blocked_forward(PoolShape{last.c, n, last.h * last.w}, val(last_tensor_), pooled);
  else
    global_avg_pool_forward(PoolShape{last.c, n, last.h * last.w}, val(last_tensor_), pooled);
  linear_forward(LinearShape{n, head_in_, classes_}, pooled, params + head_w_off_, params + head_b_off_, logits);
}

const float* ResNetWorkload::run_forward(float* arena, float* pooled, float* logits, size_t n, const float* params,
                                         bool train) {
  for (size_t i = 0; i < ops_.size(); ++i) {
    const Op& op = ops_[i];
    if (train) forward_hook_(i);
    if (op.kind == OpKind::op_unit) {
      SlotTimer ut(unit_seconds_, 2 * op.index);
      forward_conv(arena, n, op.index, params);
      forward_batchnorm(arena, n, op.index, params, train);
    } else {
      forward_join(arena, n, op.index, train);
    }
  }
  forward_head(arena, pooled, logits, n, params);
  return logits;
}

double ResNetWorkload::do_forward(const float* params) {
  if (batch_n_ == 0)
    DSGD_THROW(Error, "call load_batch() before forward()", "resnet: forward() without a loaded batch");
  run_forward(act_.data(), pooled_.data(), logits_.data(), batch_n_, params, true);
  have_forward_ = true;
  KernelTimer kt(Kernel::loss);
  return softmax_cross_entropy_forward(logits_.data(), labels_.data(), batch_n_, classes_);
}

// The loss and head of the backward pass: dlogits in place, then dW, db (hook), then
// dpooled = dlogits · W and the pooling's backward into the last tensor's gradient.
void ResNetWorkload::backward_head(const float* params, float* grads, const LayerHook& hook) {
  const size_t n = batch_n_;
  auto grad = [&](size_t t) { return act_grad_.data() + tensors_[t].grad_offset * cap_; };
  {
    KernelTimer kt(Kernel::loss);
    softmax_cross_entropy_backward(logits_.data(), labels_.data(), n, classes_, 1.0f / static_cast<float>(n),
                                   logits_.data());
  }
  std::optional<KernelTimer> head_timer(std::in_place, Kernel::pool_head);
  const LinearShape hs{n, head_in_, classes_};
  linear_backward(hs, pooled_.data(), params + head_w_off_, logits_.data(), nullptr, grads + head_w_off_,
                  grads + head_b_off_);
  head_timer.reset();
  hook(head_layer_);
  head_timer.emplace(Kernel::pool_head);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(n), static_cast<int>(head_in_),
              static_cast<int>(classes_), 1.0f, logits_.data(), static_cast<int>(classes_), params + head_w_off_,
              static_cast<int>(head_in_), 0.0f, dpooled_.data(), static_cast<int>(head_in_));
  const Tensor& last = tensors_[last_tensor_];
  if (layout_ == ActivationLayout::nchw8c)
    global_avg_pool_blocked_backward(PoolShape{last.c, n, last.h * last.w}, dpooled_.data(), grad(last_tensor_));
  else
    global_avg_pool_backward(PoolShape{last.c, n, last.h * last.w}, dpooled_.data(), grad(last_tensor_));
  grad_written_[last_tensor_] = 1;
  head_timer.reset();
}

// Block `index`'s residual join backward: d(a + b) = dout · [out > 0] to both branches
// (written, or added where already written).
void ResNetWorkload::backward_join(size_t index) {
  const size_t n = batch_n_;
  auto val = [&](size_t t) { return act_.data() + tensors_[t].offset * cap_; };
  auto grad = [&](size_t t) { return act_grad_.data() + tensors_[t].grad_offset * cap_; };
  const Block& b = blocks_[index];
  const Tensor& t = tensors_[b.out];
  const size_t count = t.c * n * t.h * t.w;
  KernelTimer kt(Kernel::join_bwd);
  const size_t ta = units_[b.conv2].out, tb = b.shortcut == kNone ? b.in : units_[b.shortcut].out;
  if (layout_ == ActivationLayout::nchw8c) {
    // The shortcut branch only (an identity one after conv1, see below); conv2's BN
    // backward reads dout and the mask itself.
    if (b.shortcut != kNone) {
      relu_backward(val(b.out), grad(b.out), grad(tb), count, grad_written_[tb] != 0);
      grad_written_[tb] = 1;
    }
    return;
  }
  add_relu_backward(val(b.out), grad(b.out), grad(ta), grad_written_[ta] != 0, grad(tb), grad_written_[tb] != 0, count);
  grad_written_[ta] = grad_written_[tb] = 1;
}

// Unit `index`'s (ReLU and) BatchNorm backward in place: d (its output's gradient) becomes dz.
void ResNetWorkload::backward_batchnorm(size_t index, const float* params, float* grads, float* d) {
  const size_t n = batch_n_;
  auto val = [&](size_t t) { return act_.data() + tensors_[t].offset * cap_; };
  auto grad = [&](size_t t) { return act_grad_.data() + tensors_[t].grad_offset * cap_; };
  const Unit& u = units_[index];
  Conv2dShape s = u.conv;
  s.n = n;
  KernelTimer kt(Kernel::bn_bwd);
  const float* relu_affine = u.relu ? batch_affine_.data() + u.stat_off : nullptr;
  if (layout_ == ActivationLayout::nchw8c) {
    // A block's conv2: dy is the block output's gradient, masked by the join's ReLU.
    const size_t jb = u.join_block;
    const float* dy = jb == kNone ? d : grad(blocks_[jb].out);
    const float* relu_y = jb == kNone ? nullptr : val(blocks_[jb].out);
    batchnorm_blocked_backward(BlockedBatchNormShape{s.c_out, n, s.h_out() * s.w_out()}, val(u.z), params + u.gamma_off,
                               batch_mean_.data() + u.stat_off, batch_invstd_.data() + u.stat_off, dy, d,
                               grads + u.gamma_off, grads + u.beta_off, relu_affine, relu_y);
  } else {
    batchnorm_backward(BatchNormShape{s.c_out, s.cols()}, val(u.z), params + u.gamma_off,
                       batch_mean_.data() + u.stat_off, batch_invstd_.data() + u.stat_off, d, d, grads + u.gamma_off,
                       grads + u.beta_off, nullptr, relu_affine);
  }
}

// Unit `index`'s convolution backward on oneDNN or the direct 3×3 kernel: dW from dz (d), the
// hook (with the unit's timer paused), then dx, and with nChw8c an identity shortcut's gradient.
void ResNetWorkload::backward_conv_primitive(size_t index, const float* params, float* grads, const float* d,
                                             std::optional<SlotTimer>& ut, const LayerHook& hook) {
  const size_t n = batch_n_;
  auto val = [&](size_t t) { return act_.data() + tensors_[t].offset * cap_; };
  auto grad = [&](size_t t) { return act_grad_.data() + tensors_[t].grad_offset * cap_; };
  const Unit& u = units_[index];
  const bool dn = u.backend == ConvBackend::onednn;
  DnnlConv2d* dconv = dn ? &dnnl_conv(index, n) : nullptr;
  BlockedConv3x3* bconv = dn ? nullptr : &direct_conv(index, n);
  {
    KernelTimer kt(dn ? Kernel::onednn_bwd_w : Kernel::direct_bwd_w);
    if (dn)
      dconv->backward_weights(val(u.in), d, grads + u.w_off);
    else
      bconv->backward_weights(val(u.in), d, grads + u.w_off);
  }
  ut.reset();
  hook(u.layer);
  ut.emplace(unit_seconds_, 2 * index + 1);
  if (u.needs_dx) {
    KernelTimer kt(dn ? Kernel::onednn_bwd_in : Kernel::direct_bwd_in);
    const bool acc = grad_written_[u.in] != 0;
    if (dn)
      dconv->backward_input(params + u.w_off, d, grad(u.in), acc);
    else
      bconv->backward_input(params + u.w_off, d, grad(u.in), acc);
  }
  if (u.identity_block != kNone && layout_ == ActivationLayout::nchw8c) {
    // The identity shortcut's gradient dout·[out > 0], added (dx is final only now).
    const Block& b = blocks_[u.identity_block];
    const Tensor& t = tensors_[b.out];
    KernelTimer jt(Kernel::join_bwd);
    relu_backward(val(b.out), grad(b.out), grad(u.in), t.c * n * t.h * t.w, true);
  }
}

// Unit `index`'s im2col convolution backward (the stem, or every unit with CNHW): dW from dz
// (d), the hook (with the unit's timer paused), then dx.
void ResNetWorkload::backward_conv_im2col(size_t index, const float* params, float* grads, float* d,
                                          std::optional<SlotTimer>& ut, const LayerHook& hook) {
  const size_t n = batch_n_;
  auto val = [&](size_t t) { return act_.data() + tensors_[t].offset * cap_; };
  auto grad = [&](size_t t) { return act_grad_.data() + tensors_[t].grad_offset * cap_; };
  const Unit& u = units_[index];
  Conv2dShape s = u.conv;
  s.n = n;
  if (layout_ == ActivationLayout::nchw8c) {  // the stem (no input gradient): dz to CNHW
    nchw8c_to_cnhw(d, stem_cnhw_.data(), n, s.c_out, s.h_out() * s.w_out(), false);
    d = stem_cnhw_.data();
  }
  conv2d_backward_weights(s, val(u.in), d, grads + u.w_off, col_.data());
  ut.reset();
  hook(u.layer);
  ut.emplace(unit_seconds_, 2 * index + 1);
  if (u.needs_dx) conv2d_backward_input(s, params + u.w_off, d, grad(u.in), col_.data(), grad_written_[u.in] != 0);
}

// Unit `index`'s whole backward: BatchNorm (+ ReLU), then its convolution.
void ResNetWorkload::backward_unit(size_t index, const float* params, float* grads, const LayerHook& hook) {
  const Unit& u = units_[index];
  float* d = act_grad_.data() + tensors_[u.out].grad_offset * cap_;
  std::optional<SlotTimer> ut(std::in_place, unit_seconds_, 2 * index + 1);
  backward_batchnorm(index, params, grads, d);
  if (u.backend != ConvBackend::im2col)
    backward_conv_primitive(index, params, grads, d, ut, hook);
  else
    backward_conv_im2col(index, params, grads, d, ut, hook);
  if (u.needs_dx) grad_written_[u.in] = 1;
}

void ResNetWorkload::do_backward(const float* params, float* grads, const LayerHook& hook) {
  if (!have_forward_) {
    DSGD_THROW(Error, "call forward() on the loaded batch before backward()",
               "resnet: backward() without a forward() of the current batch");
  }
  std::fill(grad_written_.begin(), grad_written_.end(), 0);
  backward_head(params, grads, hook);
  for (size_t k = ops_.size(); k-- > 0;) {
    const Op& op = ops_[k];
    if (op.kind == OpKind::op_join)
      backward_join(op.index);
    else
      backward_unit(op.index, params, grads, hook);
  }
  have_forward_ = false;
}

}  // namespace dsgd
