// See conv2d_dnnl.hpp. Per object: the three convolution primitives (forward training,
// backward data, backward weights) with format `any`, their internal buffers, and one reorder
// per conversion between the user layouts (CNHW activations, OIHW weights) and the formats
// the primitives chose. The input gradient with accumulate uses a reorder with a sum post-op
// (dx += converted result) where oneDNN offers one, else a scratch copy and an add loop.
// Activations to and from oneDNN's nChw8c (the jit:avx2 kernels' format for 8 | C) are
// converted by our own 8×8 transposes (cnhw_to_nchw8c / nchw8c_to_cnhw below) instead of
// oneDNN's generic reorder, which moved about 2 GB/s on this machine (ResNet-20 b128 spent
// ~20 % of its step in it).
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

#include <immintrin.h>

#include <algorithm>
#include <oneapi/dnnl/dnnl.hpp>
#include <vector>
#endif

namespace dsgd {

const char* conv_backend_name(ConvBackend b) { return b == ConvBackend::onednn ? "onednn" : "im2col"; }

ConvBackend conv2d_pick_backend(const Conv2dShape& s) {
  if (!conv2d_dnnl_available()) return ConvBackend::im2col;
  if (s.k == 1) return ConvBackend::onednn;
  return s.c_in >= 3 && s.c_out <= 128 ? ConvBackend::onednn : ConvBackend::im2col;
}

#if DSGD_HAVE_DNNL

bool conv2d_dnnl_available() { return true; }

namespace {
using dnnl::memory;
using dt = memory::data_type;
using tag = memory::format_tag;

// A (N, C, H, W) tensor stored CNHW.
memory::desc cnhw_desc(size_t n, size_t c, size_t h, size_t w) {
  const auto N = memory::dim(n), C = memory::dim(c), H = memory::dim(h), W = memory::dim(w);
  return memory::desc({N, C, H, W}, dt::f32, memory::dims{H * W, N * H * W, W, 1});
}

int blas_threads() { return std::max(1, openblas_get_num_threads()); }
void use_blas_thread_count() { omp_set_num_threads(blas_threads()); }

// nChw8c: (N, C/8, H, W, 8), the channel's position in its block of 8 innermost.
bool is_nchw8c(const memory::desc& d, size_t n, size_t c, size_t h, size_t w) {
  if (c % 8 != 0) return false;
  return d == memory::desc({memory::dim(n), memory::dim(c), memory::dim(h), memory::dim(w)}, dt::f32, tag::nChw8c);
}

// 8 rows of 8 floats (row r at src[r], columns p..p+7) → 8 vectors of the 8 rows at each
// column (out[k] = {src[0][p+k], …, src[7][p+k]}).
#ifdef __AVX__
inline void transpose8(__m256 r[8]) {
  const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
  const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
  const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
  const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
  const __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
  const __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
  const __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
  const __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
  r[0] = _mm256_permute2f128_ps(u0, u4, 0x20);
  r[1] = _mm256_permute2f128_ps(u1, u5, 0x20);
  r[2] = _mm256_permute2f128_ps(u2, u6, 0x20);
  r[3] = _mm256_permute2f128_ps(u3, u7, 0x20);
  r[4] = _mm256_permute2f128_ps(u0, u4, 0x31);
  r[5] = _mm256_permute2f128_ps(u1, u5, 0x31);
  r[6] = _mm256_permute2f128_ps(u2, u6, 0x31);
  r[7] = _mm256_permute2f128_ps(u3, u7, 0x31);
}
#endif

// f(image i, channel block b) for every pair, split over the BLAS thread count; each pair's
// output is written by one thread, so results do not depend on the thread count.
template <class F>
void for_each_image_block(size_t n, size_t blocks, F f) {
  const long work = static_cast<long>(n * blocks);
  [[maybe_unused]] const int nt = blas_threads();
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1)
  for (long it = 0; it < work; ++it) f(static_cast<size_t>(it) / blocks, static_cast<size_t>(it) % blocks);
}

// CNHW (C, N, HW) → nChw8c (N, C/8, HW, 8).
void cnhw_to_nchw8c(const float* in, float* out, size_t n, size_t c, size_t hw) {
  const size_t blocks = c / 8;
  for_each_image_block(n, blocks, [&](size_t i, size_t b) {
    const float* src[8];
    for (size_t l = 0; l < 8; ++l) src[l] = in + ((b * 8 + l) * n + i) * hw;
    float* dst = out + (i * blocks + b) * hw * 8;
    size_t p = 0;
#ifdef __AVX__
    for (; p + 8 <= hw; p += 8) {
      __m256 r[8];
      for (size_t l = 0; l < 8; ++l) r[l] = _mm256_loadu_ps(src[l] + p);
      transpose8(r);
      for (size_t k = 0; k < 8; ++k) _mm256_storeu_ps(dst + (p + k) * 8, r[k]);
    }
#endif
    for (; p < hw; ++p)
      for (size_t l = 0; l < 8; ++l) dst[p * 8 + l] = src[l][p];
  });
}

// nChw8c → CNHW; with accumulate, out += the converted values (one rounding, as dx + g).
void nchw8c_to_cnhw(const float* in, float* out, size_t n, size_t c, size_t hw, bool accumulate) {
  const size_t blocks = c / 8;
  for_each_image_block(n, blocks, [&](size_t i, size_t b) {
    float* dst[8];
    for (size_t l = 0; l < 8; ++l) dst[l] = out + ((b * 8 + l) * n + i) * hw;
    const float* src = in + (i * blocks + b) * hw * 8;
    size_t p = 0;
#ifdef __AVX__
    for (; p + 8 <= hw; p += 8) {
      __m256 r[8];
      for (size_t k = 0; k < 8; ++k) r[k] = _mm256_loadu_ps(src + (p + k) * 8);
      transpose8(r);  // r[l] = channel l at columns p..p+7
      for (size_t l = 0; l < 8; ++l) {
        if (accumulate) r[l] = _mm256_add_ps(_mm256_loadu_ps(dst[l] + p), r[l]);
        _mm256_storeu_ps(dst[l] + p, r[l]);
      }
    }
#endif
    for (; p < hw; ++p)
      for (size_t l = 0; l < 8; ++l) dst[l][p] = accumulate ? dst[l][p] + src[p * 8 + l] : src[p * 8 + l];
  });
}
}  // namespace

struct DnnlConv2d::Impl {
  dnnl::engine eng{dnnl::engine::kind::cpu, 0};
  dnnl::stream str{eng};
  memory::desc x_md, y_md, w_md;  // user layouts
  dnnl::convolution_forward fwd;
  dnnl::convolution_backward_data bwd_d;
  dnnl::convolution_backward_weights bwd_w;
  // Internal buffers in the primitives' formats.
  memory x_f, w_f, y_f;       // forward
  memory x_w, dy_w, dw_w;     // backward weights (x_w aliases x_f when the formats agree)
  memory dy_d, w_d, dx_d;     // backward data (dy_d aliases dy_w when the formats agree)
  // User-side memories; their data handles are set per call.
  memory x_u, y_u, w_u, dy_u, dw_u, dx_u;
  dnnl::reorder r_x_f, r_w_f, r_y, r_x_w, r_dy_w, r_dw, r_dy_d, r_w_d, r_dx, r_dx_sum;
  bool x_w_is_x_f = false, dy_d_is_dy_w = false, have_sum = false;
  const float* x_f_from = nullptr;  // the user pointer x_f was converted from
  const float* dy_w_from = nullptr; // the user pointer dy_w was converted from (this step)
  // Which activation buffers are nChw8c (converted by our transposes, not oneDNN's reorder).
  bool x_f_blk = false, y_f_blk = false, x_w_blk = false, dy_w_blk = false, dy_d_blk = false, dx_d_blk = false;
  std::vector<float> dx_scratch;    // accumulate without a sum post-op

  static dnnl::reorder make_reorder(const memory& from, const memory& to) {
    return dnnl::reorder(dnnl::reorder::primitive_desc(from, to));
  }
  // user CNHW → primitive buffer: our transpose when blk, else the oneDNN reorder.
  void to_primitive(dnnl::reorder& r, memory& user, memory& prim, bool blk, size_t n, size_t c, size_t hw) {
    if (blk) {
      str.wait();  // earlier primitives on the stream may still be reading prim
      cnhw_to_nchw8c(static_cast<const float*>(user.get_data_handle()), static_cast<float*>(prim.get_data_handle()),
                     n, c, hw);
    } else {
      r.execute(str, user, prim);
    }
  }
};

DnnlConv2d::DnnlConv2d(const Conv2dShape& s) : s_(s), threads_(blas_threads()) {
  using namespace dnnl;
  // oneDNN fixes a primitive's work split (its thread count) when it creates it.
  use_blas_thread_count();
  impl_ = std::make_unique<Impl>();
  Impl& m = *impl_;
  const auto O = memory::dim(s.c_out), C = memory::dim(s.c_in), K = memory::dim(s.k);
  const memory::dims strides{memory::dim(s.stride), memory::dim(s.stride)}, pad{memory::dim(s.pad), memory::dim(s.pad)};
  m.x_md = cnhw_desc(s.n, s.c_in, s.h, s.w);
  m.y_md = cnhw_desc(s.n, s.c_out, s.h_out(), s.w_out());
  m.w_md = memory::desc({O, C, K, K}, dt::f32, tag::oihw);
  const memory::desc x_any({memory::dim(s.n), C, memory::dim(s.h), memory::dim(s.w)}, dt::f32, tag::any);
  const memory::desc y_any({memory::dim(s.n), O, memory::dim(s.h_out()), memory::dim(s.w_out())}, dt::f32, tag::any);
  const memory::desc w_any({O, C, K, K}, dt::f32, tag::any);
  const convolution_forward::primitive_desc fwd_pd(
      convolution_forward::desc(prop_kind::forward_training, algorithm::convolution_direct, x_any, w_any, y_any,
                                strides, pad, pad),
      m.eng);
  const convolution_backward_data::primitive_desc bwd_d_pd(
      convolution_backward_data::desc(algorithm::convolution_direct, x_any, w_any, y_any, strides, pad, pad), m.eng,
      fwd_pd);
  const convolution_backward_weights::primitive_desc bwd_w_pd(
      convolution_backward_weights::desc(algorithm::convolution_direct, x_any, w_any, y_any, strides, pad, pad), m.eng,
      fwd_pd);
  m.fwd = convolution_forward(fwd_pd);
  m.bwd_d = convolution_backward_data(bwd_d_pd);
  m.bwd_w = convolution_backward_weights(bwd_w_pd);

  m.x_f = memory(fwd_pd.src_desc(), m.eng);
  m.w_f = memory(fwd_pd.weights_desc(), m.eng);
  m.y_f = memory(fwd_pd.dst_desc(), m.eng);
  m.x_w_is_x_f = bwd_w_pd.src_desc() == fwd_pd.src_desc();
  m.x_w = m.x_w_is_x_f ? m.x_f : memory(bwd_w_pd.src_desc(), m.eng);
  m.dy_w = memory(bwd_w_pd.diff_dst_desc(), m.eng);
  m.dw_w = memory(bwd_w_pd.diff_weights_desc(), m.eng);
  m.dy_d_is_dy_w = bwd_d_pd.diff_dst_desc() == bwd_w_pd.diff_dst_desc();
  m.dy_d = m.dy_d_is_dy_w ? m.dy_w : memory(bwd_d_pd.diff_dst_desc(), m.eng);
  m.w_d = memory(bwd_d_pd.weights_desc(), m.eng);
  m.dx_d = memory(bwd_d_pd.diff_src_desc(), m.eng);
  const size_t ho = s.h_out(), wo = s.w_out();
  m.x_f_blk = is_nchw8c(m.x_f.get_desc(), s.n, s.c_in, s.h, s.w);
  m.y_f_blk = is_nchw8c(m.y_f.get_desc(), s.n, s.c_out, ho, wo);
  m.x_w_blk = is_nchw8c(m.x_w.get_desc(), s.n, s.c_in, s.h, s.w);
  m.dy_w_blk = is_nchw8c(m.dy_w.get_desc(), s.n, s.c_out, ho, wo);
  m.dy_d_blk = is_nchw8c(m.dy_d.get_desc(), s.n, s.c_out, ho, wo);
  m.dx_d_blk = is_nchw8c(m.dx_d.get_desc(), s.n, s.c_in, s.h, s.w);

  m.x_u = memory(m.x_md, m.eng, nullptr);
  m.y_u = memory(m.y_md, m.eng, nullptr);
  m.w_u = memory(m.w_md, m.eng, nullptr);
  m.dy_u = memory(m.y_md, m.eng, nullptr);
  m.dw_u = memory(m.w_md, m.eng, nullptr);
  m.dx_u = memory(m.x_md, m.eng, nullptr);

  m.r_x_f = Impl::make_reorder(m.x_u, m.x_f);
  m.r_w_f = Impl::make_reorder(m.w_u, m.w_f);
  m.r_y = Impl::make_reorder(m.y_f, m.y_u);
  if (!m.x_w_is_x_f) m.r_x_w = Impl::make_reorder(m.x_u, m.x_w);
  m.r_dy_w = Impl::make_reorder(m.dy_u, m.dy_w);
  m.r_dw = Impl::make_reorder(m.dw_w, m.dw_u);
  if (!m.dy_d_is_dy_w) m.r_dy_d = Impl::make_reorder(m.dy_u, m.dy_d);
  m.r_w_d = Impl::make_reorder(m.w_u, m.w_d);
  m.r_dx = Impl::make_reorder(m.dx_d, m.dx_u);
  try {
    post_ops po;
    po.append_sum(1.0f);
    primitive_attr attr;
    attr.set_post_ops(po);
    m.r_dx_sum = reorder(reorder::primitive_desc(m.eng, m.dx_d.get_desc(), m.eng, m.x_md, attr));
    m.have_sum = true;
  } catch (const dnnl::error&) {
    m.have_sum = false;
  }
}

DnnlConv2d::~DnnlConv2d() = default;

int DnnlConv2d::current_threads() { return blas_threads(); }

void DnnlConv2d::forward(const float* x, const float* w, float* y) {
  Impl& m = *impl_;
  use_blas_thread_count();
  m.x_u.set_data_handle(const_cast<float*>(x));
  m.w_u.set_data_handle(const_cast<float*>(w));
  m.y_u.set_data_handle(y);
  m.to_primitive(m.r_x_f, m.x_u, m.x_f, m.x_f_blk, s_.n, s_.c_in, s_.h * s_.w);
  m.r_w_f.execute(m.str, m.w_u, m.w_f);
  m.fwd.execute(m.str, {{DNNL_ARG_SRC, m.x_f}, {DNNL_ARG_WEIGHTS, m.w_f}, {DNNL_ARG_DST, m.y_f}});
  if (m.y_f_blk) {
    m.str.wait();
    nchw8c_to_cnhw(static_cast<const float*>(m.y_f.get_data_handle()), y, s_.n, s_.c_out, s_.h_out() * s_.w_out(),
                   false);
  } else {
    m.r_y.execute(m.str, m.y_f, m.y_u);
  }
  m.str.wait();
  m.x_f_from = x;
}

void DnnlConv2d::backward_weights(const float* x, const float* dy, float* dw) {
  Impl& m = *impl_;
  use_blas_thread_count();
  m.dy_u.set_data_handle(const_cast<float*>(dy));
  m.dw_u.set_data_handle(dw);
  if (!m.x_w_is_x_f || m.x_f_from != x) {
    m.x_u.set_data_handle(const_cast<float*>(x));
    if (m.x_w_is_x_f) {
      m.to_primitive(m.r_x_f, m.x_u, m.x_f, m.x_f_blk, s_.n, s_.c_in, s_.h * s_.w);
      m.x_f_from = x;
    } else {
      m.to_primitive(m.r_x_w, m.x_u, m.x_w, m.x_w_blk, s_.n, s_.c_in, s_.h * s_.w);
    }
  }
  m.to_primitive(m.r_dy_w, m.dy_u, m.dy_w, m.dy_w_blk, s_.n, s_.c_out, s_.h_out() * s_.w_out());
  m.bwd_w.execute(m.str, {{DNNL_ARG_SRC, m.x_w}, {DNNL_ARG_DIFF_DST, m.dy_w}, {DNNL_ARG_DIFF_WEIGHTS, m.dw_w}});
  m.r_dw.execute(m.str, m.dw_w, m.dw_u);
  m.str.wait();
  m.dy_w_from = dy;
}

void DnnlConv2d::backward_input(const float* w, const float* dy, float* dx, bool accumulate) {
  Impl& m = *impl_;
  use_blas_thread_count();
  m.dy_u.set_data_handle(const_cast<float*>(dy));
  m.w_u.set_data_handle(const_cast<float*>(w));
  // backward_weights(…, dy, …) right before, with the same (unchanged) dy and the same
  // format, already converted it.
  const size_t hwo = s_.h_out() * s_.w_out();
  if (!m.dy_d_is_dy_w)
    m.to_primitive(m.r_dy_d, m.dy_u, m.dy_d, m.dy_d_blk, s_.n, s_.c_out, hwo);
  else if (m.dy_w_from != dy)
    m.to_primitive(m.r_dy_w, m.dy_u, m.dy_w, m.dy_w_blk, s_.n, s_.c_out, hwo);
  m.dy_w_from = nullptr;
  m.r_w_d.execute(m.str, m.w_u, m.w_d);
  m.bwd_d.execute(m.str, {{DNNL_ARG_DIFF_DST, m.dy_d}, {DNNL_ARG_WEIGHTS, m.w_d}, {DNNL_ARG_DIFF_SRC, m.dx_d}});
  const size_t count = s_.c_in * s_.n * s_.h * s_.w;
  if (m.dx_d_blk) {
    m.str.wait();
    nchw8c_to_cnhw(static_cast<const float*>(m.dx_d.get_data_handle()), dx, s_.n, s_.c_in, s_.h * s_.w, accumulate);
  } else if (!accumulate) {
    m.dx_u.set_data_handle(dx);
    m.r_dx.execute(m.str, m.dx_d, m.dx_u);
  } else if (m.have_sum) {
    m.dx_u.set_data_handle(dx);
    m.r_dx_sum.execute(m.str, m.dx_d, m.dx_u);
  } else {
    m.dx_scratch.resize(count);
    m.dx_u.set_data_handle(m.dx_scratch.data());
    m.r_dx.execute(m.str, m.dx_d, m.dx_u);
    m.str.wait();
    for (size_t i = 0; i < count; ++i) dx[i] += m.dx_scratch[i];
  }
  m.str.wait();
}

#else  // no oneDNN in this build

bool conv2d_dnnl_available() { return false; }

struct DnnlConv2d::Impl {};

int DnnlConv2d::current_threads() { return 1; }

DnnlConv2d::DnnlConv2d(const Conv2dShape& s) : s_(s) {
  DSGD_THROW(InputError, "use the im2col backend, or install libdnnl-dev and rebuild with -DDSGD_WITH_DNNL=ON",
             "this build has no oneDNN convolution backend");
}
DnnlConv2d::~DnnlConv2d() = default;
void DnnlConv2d::forward(const float*, const float*, float*) {}
void DnnlConv2d::backward_weights(const float*, const float*, float*) {}
void DnnlConv2d::backward_input(const float*, const float*, float*, bool) {}

#endif

}  // namespace dsgd
