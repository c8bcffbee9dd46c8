// See conv2d_dnnl.hpp. Per object: the three convolution primitives (forward training,
// backward data, backward weights) with format `any`, and per activation operand (Operand
// below) either the caller's memory itself (when the primitive chose the caller's layout:
// nChw8c callers of the jit:avx2 kernels pay no conversion at all) or a buffer of its own and
// a conversion: our 8×8 AVX transposes between CNHW and nChw8c (blocked_layout.hpp) instead
// of oneDNN's generic reorder, which moved about 2 GB/s on this machine (ResNet-20 b128 spent
// ~20 % of its step in it), or a oneDNN reorder for any other pair. Weights are reordered
// from OIHW in every call. The input gradient with accumulate is written to a buffer and
// added (an add loop, an accumulating transpose, or a reorder with a sum post-op).
//
// The backend table (conv2d_pick_backend), from bench/bench_resnet_backends.sh: forward +
// weight gradient + input gradient per shape, 1 thread, OpenBLAS 0.3.21 vs oneDNN 2.6, ms
// (machine shared and loaded, so only the ratios mean something):
//   ResNet-18 b32:  3→64 @32² 41 / 20;  64→64 @32² 529 / 300;  64→128 s2 229 / 166;
//                   128→128 @16² 366 / 252;  128→256 s2 160 / 173;  256→256 @8² 362 / 347;
//                   256→512 s2 123 / 262;  512→512 @4² 317 / 553;  1×1 s2 shortcuts: 46 / 23,
//                   26 / 16, 24 / 14.
//   ResNet-20 b128: 1→16 @28² 9.7 / 16;  16→16 @28² 116 / 46;  16→32 s2 60 / 27;
//                   32→32 @14² 95 / 53;  32→64 s2 37 / 27;  64→64 @7² 84 / 47;  1×1 s2: 15 / 8.4,
//                   7.4 / 6.9.
// So: oneDNN for every 1×1 convolution, and for k×k ones with at least 3 input channels and
// at most 128 output channels; im2col + SGEMM for the rest (single-channel stems, and the
// wide late layers of ResNet-18 where one large SGEMM is at its best).
#include "workloads/layers/conv2d_dnnl.hpp"

#include "core/errors.hpp"

#if DSGD_HAVE_DNNL
#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <oneapi/dnnl/dnnl.hpp>
#include <vector>
#endif

namespace dsgd {

const char* conv_backend_name(ConvBackend b) {
  switch (b) {
    case ConvBackend::onednn: return "onednn";
    case ConvBackend::direct: return "direct";
    default: return "im2col";
  }
}

ConvBackend conv2d_pick_backend(const Conv2dShape& s) {
  if (!conv2d_dnnl_available()) return ConvBackend::im2col;
  if (s.k == 1) return ConvBackend::onednn;
  return s.c_in >= 3 && s.c_out <= 128 ? ConvBackend::onednn : ConvBackend::im2col;
}

#if DSGD_HAVE_DNNL

bool conv2d_dnnl_available() {
  return true;
}

namespace {
using dnnl::memory;
using dt = memory::data_type;
using tag = memory::format_tag;

// A (N, C, H, W) tensor in the caller's layout: CNHW as strides, or nChw8c.
memory::desc user_desc(ActivationLayout l, size_t n, size_t c, size_t h, size_t w) {
  const auto N = memory::dim(n), C = memory::dim(c), H = memory::dim(h), W = memory::dim(w);
  if (l == ActivationLayout::nchw8c) return memory::desc({N, C, H, W}, dt::f32, tag::nChw8c);
  return memory::desc({N, C, H, W}, dt::f32, memory::dims{H * W, N * H * W, W, 1});
}

int blas_threads() {
  return std::max(1, openblas_get_num_threads());
}
void use_blas_thread_count() {
  omp_set_num_threads(blas_threads());
}

// An activation operand of a primitive: the caller's tensor (`user`, data handle set per
// call) and what the primitive reads or writes (`prim`): the same memory when the formats
// agree, else a buffer of its own, converted by our transposes (CNHW ↔ nChw8c) or a oneDNN
// reorder.
struct Operand {
  enum class Kind { same, transpose, reorder };
  Kind kind = Kind::same;
  memory user, prim;
  dnnl::reorder r;  // reorder: user → prim for inputs, prim → user for outputs
  size_t n = 0, c = 0, hw = 0;

  void init(const dnnl::engine& eng, ActivationLayout l, const memory::desc& prim_md, size_t n_, size_t c_, size_t h,
            size_t w, bool input) {
    n = n_;
    c = c_;
    hw = h * w;
    const memory::desc user_md = user_desc(l, n, c, h, w);
    user = memory(user_md, eng, nullptr);
    if (user_md == prim_md) {
      kind = Kind::same;
      prim = user;
      return;
    }
    prim = memory(prim_md, eng);
    const bool blocked_prim = c % kChannelBlock == 0 && prim_md == user_desc(ActivationLayout::nchw8c, n, c, h, w);
    kind = l == ActivationLayout::cnhw && blocked_prim ? Kind::transpose : Kind::reorder;
    if (kind == Kind::reorder)
      r = input ? dnnl::reorder(dnnl::reorder::primitive_desc(user, prim))
                : dnnl::reorder(dnnl::reorder::primitive_desc(prim, user));
  }
  // Input: the primitive's copy of the caller's tensor at p.
  void convert_in(dnnl::stream& str, const float* p) {
    user.set_data_handle(const_cast<float*>(p));
    if (kind == Kind::transpose) {
      str.wait();  // earlier primitives on the stream may still be reading prim
      cnhw_to_nchw8c(p, static_cast<float*>(prim.get_data_handle()), n, c, hw);
    } else if (kind == Kind::reorder) {
      r.execute(str, user, prim);
    }
  }
};
// The three primitive descriptors of a convolution of shape s, every format `any` (oneDNN
// picks them for this CPU and batch).
struct ConvPds {
  dnnl::convolution_forward::primitive_desc fwd;
  dnnl::convolution_backward_data::primitive_desc bwd_d;
  dnnl::convolution_backward_weights::primitive_desc bwd_w;
  ConvPds(const dnnl::engine& eng, const Conv2dShape& s) {
    using namespace dnnl;
    const auto O = memory::dim(s.c_out), C = memory::dim(s.c_in), K = memory::dim(s.k);
    const memory::dims strides{memory::dim(s.stride), memory::dim(s.stride)},
        pad{memory::dim(s.pad), memory::dim(s.pad)};
    const memory::desc x_any({memory::dim(s.n), C, memory::dim(s.h), memory::dim(s.w)}, dt::f32, tag::any);
    const memory::desc y_any({memory::dim(s.n), O, memory::dim(s.h_out()), memory::dim(s.w_out())}, dt::f32, tag::any);
    const memory::desc w_any({O, C, K, K}, dt::f32, tag::any);
    fwd = convolution_forward::primitive_desc(
        convolution_forward::desc(prop_kind::forward_training, algorithm::convolution_direct, x_any, w_any, y_any,
                                  strides, pad, pad),
        eng);
    bwd_d = convolution_backward_data::primitive_desc(
        convolution_backward_data::desc(algorithm::convolution_direct, x_any, w_any, y_any, strides, pad, pad), eng,
        fwd);
    bwd_w = convolution_backward_weights::primitive_desc(
        convolution_backward_weights::desc(algorithm::convolution_direct, x_any, w_any, y_any, strides, pad, pad), eng,
        fwd);
  }
};
}  // namespace

struct DnnlConv2d::Impl {
  dnnl::engine eng{dnnl::engine::kind::cpu, 0};
  dnnl::stream str{eng};
  dnnl::convolution_forward fwd;
  dnnl::convolution_backward_data bwd_d;
  dnnl::convolution_backward_weights bwd_w;
  Operand x_f, y_f;    // forward: source, destination
  Operand x_w, dy_w;   // backward weights: source, destination gradient
  Operand dy_d, dx_d;  // backward data: destination gradient, source gradient
  // Weights: the caller's OIHW and the primitives' formats.
  memory w_u, dw_u, w_f, dw_w, w_d;
  dnnl::reorder r_w_f, r_dw, r_w_d;
  // The source gradient with accumulate: dx_buf is the primitive's output, then added to the
  // caller's dx (same: add_into; transpose: accumulating transpose; reorder: a reorder with a
  // sum post-op where oneDNN offers one, else into dx_scratch and an add).
  memory dx_buf;
  dnnl::reorder r_dx_sum;
  bool have_sum = false;
  std::vector<float> dx_scratch;
  bool x_w_is_x_f = false, dy_d_is_dy_w = false;  // the backward pass reuses the converted copy
  const float* x_f_from = nullptr;                // the caller's x that x_f holds a converted copy of
  const float* dy_w_from = nullptr;               // the caller's dy that dy_w holds a converted copy of (this step)
};

DnnlConv2d::DnnlConv2d(const Conv2dShape& s, ActivationLayout in, ActivationLayout out)
    : s_(s), in_(in), out_(out), threads_(blas_threads()) {
  using namespace dnnl;
  if ((in == ActivationLayout::nchw8c && s.c_in % kChannelBlock != 0) ||
      (out == ActivationLayout::nchw8c && s.c_out % kChannelBlock != 0)) {
    DSGD_THROW(InputError, "use the CNHW layout for this convolution",
               "the nChw8c layout needs channel counts divisible by 8, but this convolution is {} -> {}", s.c_in,
               s.c_out);
  }
  // oneDNN fixes a primitive's work split (its thread count) when it creates it.
  use_blas_thread_count();
  impl_ = std::make_unique<Impl>();
  Impl& m = *impl_;
  const auto O = memory::dim(s.c_out), C = memory::dim(s.c_in), K = memory::dim(s.k);
  const ConvPds pds(m.eng, s);
  const auto& [fwd_pd, bwd_d_pd, bwd_w_pd] = pds;
  m.fwd = convolution_forward(fwd_pd);
  m.bwd_d = convolution_backward_data(bwd_d_pd);
  m.bwd_w = convolution_backward_weights(bwd_w_pd);

  const size_t ho = s.h_out(), wo = s.w_out();
  m.x_f.init(m.eng, in, fwd_pd.src_desc(), s.n, s.c_in, s.h, s.w, true);
  m.y_f.init(m.eng, out, fwd_pd.dst_desc(), s.n, s.c_out, ho, wo, false);
  m.x_w_is_x_f = bwd_w_pd.src_desc() == fwd_pd.src_desc();
  if (m.x_w_is_x_f)
    m.x_w = m.x_f;
  else
    m.x_w.init(m.eng, in, bwd_w_pd.src_desc(), s.n, s.c_in, s.h, s.w, true);
  m.dy_w.init(m.eng, out, bwd_w_pd.diff_dst_desc(), s.n, s.c_out, ho, wo, true);
  m.dy_d_is_dy_w = bwd_d_pd.diff_dst_desc() == bwd_w_pd.diff_dst_desc();
  if (m.dy_d_is_dy_w)
    m.dy_d = m.dy_w;
  else
    m.dy_d.init(m.eng, out, bwd_d_pd.diff_dst_desc(), s.n, s.c_out, ho, wo, true);
  m.dx_d.init(m.eng, in, bwd_d_pd.diff_src_desc(), s.n, s.c_in, s.h, s.w, false);
  m.dx_buf = m.dx_d.kind == Operand::Kind::same ? memory(bwd_d_pd.diff_src_desc(), m.eng) : m.dx_d.prim;

  const memory::desc w_md({O, C, K, K}, dt::f32, tag::oihw);
  m.w_u = memory(w_md, m.eng, nullptr);
  m.dw_u = memory(w_md, m.eng, nullptr);
  m.w_f = memory(fwd_pd.weights_desc(), m.eng);
  m.dw_w = memory(bwd_w_pd.diff_weights_desc(), m.eng);
  m.w_d = memory(bwd_d_pd.weights_desc(), m.eng);
  m.r_w_f = reorder(reorder::primitive_desc(m.w_u, m.w_f));
  m.r_dw = reorder(reorder::primitive_desc(m.dw_w, m.dw_u));
  m.r_w_d = reorder(reorder::primitive_desc(m.w_u, m.w_d));
  if (m.dx_d.kind == Operand::Kind::reorder) {
    try {
      post_ops po;
      po.append_sum(1.0f);
      primitive_attr attr;
      attr.set_post_ops(po);
      m.r_dx_sum = reorder(reorder::primitive_desc(m.eng, m.dx_d.prim.get_desc(), m.eng, m.dx_d.user.get_desc(), attr));
      m.have_sum = true;
    } catch (const dnnl::error&) {
      m.have_sum = false;
    }
  }
}

DnnlConv2d::~DnnlConv2d() = default;

double DnnlConv2d::buffer_bytes(const Conv2dShape& s, ActivationLayout in, ActivationLayout out) {
  // The constructor's buffers: an operand's own copy where the primitive's format is not the
  // caller's (x_w and dy_d only where they are not x_f's and dy_w's), dx_buf (one
  // source-gradient tensor either way), the three weight copies.
  use_blas_thread_count();
  const dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  const size_t ho = s.h_out(), wo = s.w_out();
  std::unique_ptr<ConvPds> made;
  try {
    made = std::make_unique<ConvPds>(eng, s);
  } catch (const dnnl::error&) {
    // No primitive for this shape (the constructor would throw too): every operand's copy.
    const double x_bytes = double(s.n) * double(s.c_in * s.h * s.w) * sizeof(float);
    const double y_bytes = double(s.n) * double(s.c_out * ho * wo) * sizeof(float);
    return 3 * x_bytes + 3 * y_bytes + 3.0 * double(s.weight_count()) * sizeof(float);
  }
  const auto& [fwd, bwd_d, bwd_w] = *made;
  const memory::desc x = user_desc(in, s.n, s.c_in, s.h, s.w), y = user_desc(out, s.n, s.c_out, ho, wo);
  auto copy = [](const memory::desc& user, const memory::desc& prim) {
    return user == prim ? 0.0 : static_cast<double>(prim.get_size());
  };
  double bytes = copy(x, fwd.src_desc()) + copy(y, fwd.dst_desc()) + copy(y, bwd_w.diff_dst_desc());
  if (bwd_w.src_desc() != fwd.src_desc()) bytes += copy(x, bwd_w.src_desc());
  if (bwd_d.diff_dst_desc() != bwd_w.diff_dst_desc()) bytes += copy(y, bwd_d.diff_dst_desc());
  bytes += static_cast<double>(bwd_d.diff_src_desc().get_size());
  bytes += static_cast<double>(fwd.weights_desc().get_size() + bwd_w.diff_weights_desc().get_size() +
                               bwd_d.weights_desc().get_size());
  return bytes;
}

int DnnlConv2d::current_threads() {
  return blas_threads();
}

void DnnlConv2d::forward(const float* x, const float* w, float* y) {
  Impl& m = *impl_;
  use_blas_thread_count();
  m.x_f.convert_in(m.str, x);
  m.w_u.set_data_handle(const_cast<float*>(w));
  m.r_w_f.execute(m.str, m.w_u, m.w_f);
  m.y_f.user.set_data_handle(y);
  m.fwd.execute(m.str, {{DNNL_ARG_SRC, m.x_f.prim}, {DNNL_ARG_WEIGHTS, m.w_f}, {DNNL_ARG_DST, m.y_f.prim}});
  if (m.y_f.kind == Operand::Kind::transpose) {
    m.str.wait();
    nchw8c_to_cnhw(static_cast<const float*>(m.y_f.prim.get_data_handle()), y, s_.n, s_.c_out, s_.h_out() * s_.w_out(),
                   false);
  } else if (m.y_f.kind == Operand::Kind::reorder) {
    m.y_f.r.execute(m.str, m.y_f.prim, m.y_f.user);
  }
  m.str.wait();
  m.x_f_from = x;
}

void DnnlConv2d::backward_weights(const float* x, const float* dy, float* dw) {
  Impl& m = *impl_;
  use_blas_thread_count();
  // x_f still holds the converted x of the forward that read the same pointer.
  if (!m.x_w_is_x_f || m.x_f_from != x || m.x_w.kind == Operand::Kind::same) {
    m.x_w.convert_in(m.str, x);
    if (m.x_w_is_x_f) m.x_f_from = x;
  }
  m.dy_w.convert_in(m.str, dy);
  m.dw_u.set_data_handle(dw);
  m.bwd_w.execute(m.str,
                  {{DNNL_ARG_SRC, m.x_w.prim}, {DNNL_ARG_DIFF_DST, m.dy_w.prim}, {DNNL_ARG_DIFF_WEIGHTS, m.dw_w}});
  m.r_dw.execute(m.str, m.dw_w, m.dw_u);
  m.str.wait();
  m.dy_w_from = dy;
}

void DnnlConv2d::backward_input(const float* w, const float* dy, float* dx, bool accumulate) {
  Impl& m = *impl_;
  use_blas_thread_count();
  // backward_weights(…, dy, …) right before, with the same (unchanged) dy and the same
  // format, already converted it.
  if (!m.dy_d_is_dy_w || m.dy_w_from != dy || m.dy_d.kind == Operand::Kind::same) m.dy_d.convert_in(m.str, dy);
  m.dy_w_from = nullptr;
  m.w_u.set_data_handle(const_cast<float*>(w));
  m.r_w_d.execute(m.str, m.w_u, m.w_d);
  Operand& o = m.dx_d;
  o.user.set_data_handle(dx);
  // The primitive writes the caller's dx directly when the formats agree and nothing is added.
  const memory& out = o.kind == Operand::Kind::same && !accumulate ? o.user : m.dx_buf;
  m.bwd_d.execute(m.str, {{DNNL_ARG_DIFF_DST, m.dy_d.prim}, {DNNL_ARG_WEIGHTS, m.w_d}, {DNNL_ARG_DIFF_SRC, out}});
  const size_t count = s_.c_in * s_.n * s_.h * s_.w;
  const float* buf = static_cast<const float*>(m.dx_buf.get_data_handle());
  if (o.kind == Operand::Kind::same) {
    if (accumulate) {
      m.str.wait();
      add_into(dx, buf, count);
    }
  } else if (o.kind == Operand::Kind::transpose) {
    m.str.wait();
    nchw8c_to_cnhw(buf, dx, s_.n, s_.c_in, s_.h * s_.w, accumulate);
  } else if (!accumulate) {
    o.r.execute(m.str, o.prim, o.user);
  } else if (m.have_sum) {
    m.r_dx_sum.execute(m.str, o.prim, o.user);
  } else {
    m.dx_scratch.resize(count);
    memory scratch(o.user.get_desc(), m.eng, m.dx_scratch.data());
    o.r.execute(m.str, o.prim, scratch);
    m.str.wait();
    add_into(dx, m.dx_scratch.data(), count);
  }
  m.str.wait();
}

#else  // no oneDNN in this build

bool conv2d_dnnl_available() {
  return false;
}

struct DnnlConv2d::Impl {};

int DnnlConv2d::current_threads() {
  return 1;
}

DnnlConv2d::DnnlConv2d(const Conv2dShape& s, ActivationLayout in, ActivationLayout out) : s_(s), in_(in), out_(out) {
  DSGD_THROW(InputError, "use the im2col backend, or install libdnnl-dev and rebuild with -DDSGD_WITH_DNNL=ON",
             "this build has no oneDNN convolution backend");
}
DnnlConv2d::~DnnlConv2d() = default;
double DnnlConv2d::buffer_bytes(const Conv2dShape&, ActivationLayout, ActivationLayout) {
  return 0;
}
void DnnlConv2d::forward(const float*, const float*, float*) {}
void DnnlConv2d::backward_weights(const float*, const float*, float*) {}
void DnnlConv2d::backward_input(const float*, const float*, float*, bool) {}

#endif

}  // namespace dsgd
