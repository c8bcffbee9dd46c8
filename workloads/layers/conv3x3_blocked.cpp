// See conv3x3_blocked.hpp. Two kernels:
//  - conv_kernel<M, UR, L, R>: one block of 8 output channels × UR consecutive output pixels
//    of a row in each of M images (M·UR ≤ 12 ymm accumulators), for the whole sum (input
//    blocks, valid kh, kw, input lanes); details at the kernel. forward and backward_input (a
//    forward convolution of dy with the weights flipped in kh, kw and Cin ↔ Cout swapped)
//    share it.
//  - bww_item: the weight gradient of one (output block, input block, kh, half of the 8 input
//    lanes) over a chunk of images: 3 kw × 4 lanes = 12 accumulators of 8 output channels;
//    per input pixel q, 4 broadcasts of x and the dy vectors at q+1, q, q−1 (kw = 0, 1, 2).
//    Chunks of images (~256 KiB of x and dy) run outermost, with the partial sums stored
//    between chunks (in the order they would have in registers), so a chunk stays in L2.
// Each output's summation order is fixed by the shape alone, never by the thread count.
// GCC's register allocation needed help in three places, marked by empty asm statements that
// pin values in registers (each measured, see the comments there).
#include "workloads/layers/conv3x3_blocked.hpp"

#include <algorithm>
#include <cstddef>
#include <utility>

#include "core/errors.hpp"
#include "workloads/layers/layer_threads.hpp"

// The kernels are compiled for AVX2 + FMA in every x86-64 build. With -march=native on such a
// machine that is the build's own ISA; in a portable build (-DDSGD_NATIVE=OFF) the code from
// here to the end of the kernels is compiled under `#pragma GCC target("avx2,fma")` alone (the
// headers above, and so every inline or template function shared with other files, stay
// baseline x86-64), and conv3x3_blocked_supported() asks the CPU at run time, so a portable
// binary runs them only where they can run and falls back (oneDNN / im2col) elsewhere.
// (GCC's pragma: a Clang build without -mavx2 -mfma gets no direct kernels.)
#if defined(__x86_64__) && defined(__AVX2__) && defined(__FMA__)
#define DSGD_CONV3X3_AVX2 1
#include <immintrin.h>
#elif defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define DSGD_CONV3X3_AVX2 1
#define DSGD_CONV3X3_TARGET_PRAGMA 1
#include <immintrin.h>
#else
#define DSGD_CONV3X3_AVX2 0
#endif

#ifdef _OPENMP
#include <omp.h>
#endif

namespace dsgd {

bool conv3x3_blocked_cpu_supported() {
#if DSGD_CONV3X3_AVX2
  static const bool ok = [] {
    __builtin_cpu_init();  // in case this runs before the runtime's own initialisation
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  }();
  return ok;
#else
  return false;
#endif
}

bool conv3x3_blocked_supported(const Conv2dShape& s) {
  return conv3x3_blocked_cpu_supported() && s.k == 3 && s.stride == 1 && s.pad == 1 && s.c_in % 8 == 0 &&
         s.c_out % 8 == 0 && s.c_in > 0 && s.c_out > 0 && s.n > 0 && s.h > 0 && s.w > 0;
}

#if DSGD_CONV3X3_AVX2

#ifdef DSGD_CONV3X3_TARGET_PRAGMA
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#endif

namespace {

#define DSGD_INLINE __attribute__((always_inline))

// f(integral_constant<int, 0>), …, f(integral_constant<int, N−1>), unrolled at compile time.
template <class F, int... I>
inline DSGD_INLINE void unroll_impl(F&& f, std::integer_sequence<int, I...>) {
  (f(std::integral_constant<int, I>{}), ...);
}
template <int N, class F>
inline DSGD_INLINE void unroll(F&& f) {
  unroll_impl(f, std::make_integer_sequence<int, N>{});
}

// One kernel call: output pixels (oh, ow0 … ow0+UR−1) of one block of 8 output channels in
// M consecutive images.
struct KArgs {
  const float* x;   // input block 0 of the first image, at pixel (oh, ow0)
  const float* w;   // the output block's weights: [ib][kh][kw][lane][8]
  float* y;         // output block of the first image, at pixel (oh, ow0)
  ptrdiff_t x_row;  // W·8
  size_t x_block;   // H·W·8 (input block stride)
  size_t x_img;     // Cin·H·W (input image stride)
  size_t y_img;     // Cout·H·W (output image stride)
  int nib;          // input blocks
  int kh0, kh1;     // valid kh range for row oh
  bool load;        // start from y's values (accumulate) instead of 0
};

using Kernel = void (*)(const KArgs&);

// UR output pixels of one row in each of M images × 8 output channels, summed over all input
// blocks, the valid kh and all kw and input lanes. Per (input block, kh, lane l): the three kw
// weight vectors in registers, then each input pixel of the window ow0−1 … ow0+UR (UR + 2 of
// them, per image) broadcast once and used for every kw it meets (output pixel u = p − kw).
// Loads per FMA: (3 + M·(UR + 2)) / 3·M·UR (0.47 at M·UR = 12), against (1 + UR) / UR when
// each (kw, lane) step loads its own weight and broadcasts: on Zen 3 the loads, not the FMAs,
// limit these loops. M > 1 is for narrow rows (14 and 7 pixels): each accumulator takes a
// chain of 3 dependent FMAs per lane, so fewer than 8 of them leave the FMA pipes idle.
// L / R: the first / last pixel of the call is the row's first / last, whose kw = 0 / kw = 2
// tap falls in the zero padding: the window's first / last input pixel is skipped (no padded
// copy of x). M·UR accumulators + 3 weights + 1 broadcast ≤ 16 ymm registers.
template <int M, int UR, bool L, bool R>
void conv_kernel(const KArgs& a) {
  static_assert(M >= 1 && UR >= 1 && M * UR + 3 + 1 <= 16);
  __m256 acc[M][UR];
  unroll<M>([&](auto m) DSGD_INLINE {
    unroll<UR>([&](auto u) DSGD_INLINE {
      acc[m][u] = a.load ? _mm256_loadu_ps(a.y + m * a.y_img + u * 8) : _mm256_setzero_ps();
    });
  });
  const float* xb = a.x;
  const float* wb = a.w;
  const ptrdiff_t x_row = a.x_row;
  const size_t x_block = a.x_block, x_img = a.x_img;
  const int nib = a.nib, kh0 = a.kh0, kh1 = a.kh1;
  for (int ib = 0; ib < nib; ++ib, xb += x_block, wb += ptrdiff_t{9 * 8 * 8}) {
    for (int kh = kh0; kh < kh1; ++kh) {
      const float* wr = wb + static_cast<ptrdiff_t>(kh) * 3 * 8 * 8;
      // Input pixel ow0 − 1 (not read when L) of row oh + kh − 1, per image; opaque to GCC,
      // which would otherwise keep one induction pointer per broadcast address (on the stack).
      const float* xr[M];
      unroll<M>([&](auto m) DSGD_INLINE {
        xr[m] = xb + m * x_img + (kh - 1) * x_row - 8;
        asm("" : "+r"(xr[m]));
      });
      unroll<8>([&](auto l) DSGD_INLINE {
        // The asm statements pin values in registers for GCC: the weights (otherwise folded
        // into every FMA as memory operands, one load per FMA), and the weights and broadcasts
        // past their last FMA (otherwise GCC writes some FMA results into the dying operand's
        // register and adds a register move per FMA or two to put the accumulators back).
        __m256 wv[3];
        unroll<3>([&](auto kw) DSGD_INLINE {
          wv[kw] = _mm256_loadu_ps(wr + (kw * 8 + l) * 8);
          asm("" : "+x"(wv[kw]));
        });
        unroll<M>([&](auto m) DSGD_INLINE {
          unroll<UR + 2>([&](auto p) DSGD_INLINE {
            if constexpr (!((L && p == 0) || (R && p == UR + 1))) {
              const __m256 b = _mm256_broadcast_ss(xr[m] + p * 8 + l);
              unroll<3>([&](auto kw) DSGD_INLINE {
                constexpr int u = p - kw;
                if constexpr (u >= 0 && u < UR) acc[m][u] = _mm256_fmadd_ps(wv[kw], b, acc[m][u]);
              });
              asm("" ::"x"(b));
            }
          });
        });
        unroll<3>([&](auto kw) DSGD_INLINE { asm("" ::"x"(wv[kw])); });
      });
    }
  }
  unroll<M>([&](auto m) DSGD_INLINE {
    unroll<UR>([&](auto u) DSGD_INLINE { _mm256_storeu_ps(a.y + m * a.y_img + u * 8, acc[m][u]); });
  });
}

// Images per tile and largest segment: one image and up to 12 pixels for rows of 20 and more
// (28 → 10, 9, 9); 2 images and up to 6 for rows of 10 to 19 (14 → 5, 5, 4); 3 images and up
// to 4 for narrower rows (7 → 4, 3).
struct Tiling {
  int m, ur;
};
constexpr Tiling tiling_for_width(size_t w) {
  return w >= 20 ? Tiling{1, 12} : w >= 10 ? Tiling{2, 6} : Tiling{3, 4};
}
constexpr int kMaxUr = 12;

// The kernel for m images, a segment of ur pixels and its edge flags.
template <int M, int UR>
Kernel pick_ur(int ur, bool l, bool r) {
  if constexpr (UR == 0) {
    return nullptr;
  } else {
    if (ur != UR) return pick_ur<M, UR - 1>(ur, l, r);
    if (l) return r ? conv_kernel<M, UR, true, true> : conv_kernel<M, UR, true, false>;
    return r ? conv_kernel<M, UR, false, true> : conv_kernel<M, UR, false, false>;
  }
}
Kernel pick_kernel(int m, int ur, bool l, bool r) {
  switch (m) {
    case 1: return pick_ur<1, 12>(ur, l, r);
    case 2: return pick_ur<2, 6>(ur, l, r);
    case 3: return pick_ur<3, 4>(ur, l, r);
    default: return nullptr;
  }
}

// y (n, cb_out, h, w, 8) = (or +=, when accumulate) conv of x (n, cb_in, h, w, 8) with the
// repacked weights wp ([ob][ib][kh][kw][lane][8]). Work items (group of tiling.m images,
// output block; the last group may have fewer images), each computing its outputs alone in a
// fixed order. Rows are split into near-equal segments of at most tiling.ur pixels.
void conv_run(size_t n, size_t cb_in, size_t cb_out, size_t h, size_t w, const float* x, const float* wp, float* y,
              bool accumulate) {
  const size_t hw8 = h * w * 8;
  const Tiling t = tiling_for_width(w);
  const size_t tm = size_t(t.m), nseg = (w + size_t(t.ur) - 1) / size_t(t.ur);
  constexpr size_t kMaxSeg = 64;  // rows up to 768 pixels (checked by the constructor)
  Kernel seg_kernel[3][kMaxSeg];  // [images − 1][segment]
  size_t seg_start[kMaxSeg];
  for (size_t s = 0, ow = 0; s < nseg; ++s) {
    const size_t len = w / nseg + (s < w % nseg ? 1 : 0);
    seg_start[s] = ow;
    for (size_t m = 1; m <= tm; ++m) seg_kernel[m - 1][s] = pick_kernel(int(m), int(len), ow == 0, ow + len == w);
    ow += len;
  }
  const size_t groups = (n + tm - 1) / tm;
  const long items = long(groups * cb_out);
  [[maybe_unused]] const int nt = layer_threads();
#ifdef _OPENMP
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1)
#endif
  for (long it = 0; it < items; ++it) {
    const size_t img = size_t(it) / cb_out * tm, ob = size_t(it) % cb_out;
    const Kernel* kern = seg_kernel[std::min(tm, n - img) - 1];
    KArgs a;
    a.w = wp + ob * cb_in * 9 * 8 * 8;
    a.x_row = ptrdiff_t(w * 8);
    a.x_block = hw8;
    a.x_img = cb_in * hw8;
    a.y_img = cb_out * hw8;
    a.nib = int(cb_in);
    a.load = accumulate;
    const float* xi = x + img * cb_in * hw8;
    float* yo = y + (img * cb_out + ob) * hw8;
    for (size_t oh = 0; oh < h; ++oh) {
      a.kh0 = oh == 0 ? 1 : 0;
      a.kh1 = oh + 1 == h ? 2 : 3;
      for (size_t s = 0; s < nseg; ++s) {
        const size_t pix = oh * w + seg_start[s];
        a.x = xi + pix * 8;
        a.y = yo + pix * 8;
        kern[s](a);
      }
    }
  }
}

// wp[ob][ib][kh][kw][lane][o] = W(out = ob·8 + o, in = ib·8 + lane, kh, kw), where
// W(out, in, kh, kw) = w[out][in][kh][kw] (forward) or, for the input gradient (out ↔ in
// swapped, taps flipped), w[in][out][2−kh][2−kw].
void repack_weights(const float* w, size_t c_out, size_t c_in, bool flip, float* wp) {
  // Output / input channels of the convolution the kernel computes.
  const size_t lo = flip ? c_in : c_out, li = flip ? c_out : c_in;
  const size_t cb_in = li / 8;
  for (size_t out = 0; out < lo; ++out) {
    const size_t ob = out / 8, o = out % 8;
    for (size_t in = 0; in < li; ++in) {
      const size_t ib = in / 8, lane = in % 8;
      float* dst = wp + ((ob * cb_in + ib) * 9 * 8 + lane) * 8 + o;
      for (size_t t = 0; t < 9; ++t)
        dst[t * 8 * 8] = flip ? w[(in * c_in + out) * 9 + (8 - t)] : w[(out * c_in + in) * 9 + t];
    }
  }
}

// Weight-gradient step at input pixel q of a row: acc[kw][j] += dy(q+1−kw) · x(q, lane j)
// for the kw whose dy pixel exists (K0: q+1 < W; K2: q ≥ 1).
template <bool K0, bool K2>
inline DSGD_INLINE void bww_step(__m256 (&acc)[3][4], const float* xr, const float* dr, long q) {
  // The dy vectors are forced into registers (GCC would fold them into the FMAs as memory
  // operands: 12 loads per pixel instead of 3, which makes the loop load-bound).
  __m256 d0, d2;
  if constexpr (K0) {
    d0 = _mm256_loadu_ps(dr + (q + 1) * 8);
    asm("" : "+x"(d0));
  }
  __m256 d1 = _mm256_loadu_ps(dr + q * 8);
  asm("" : "+x"(d1));
  if constexpr (K2) {
    d2 = _mm256_loadu_ps(dr + (q - 1) * 8);
    asm("" : "+x"(d2));
  }
  unroll<4>([&](auto j) DSGD_INLINE {
    const __m256 b = _mm256_broadcast_ss(xr + q * 8 + j);
    if constexpr (K0) acc[0][j] = _mm256_fmadd_ps(d0, b, acc[0][j]);
    acc[1][j] = _mm256_fmadd_ps(d1, b, acc[1][j]);
    if constexpr (K2) acc[2][j] = _mm256_fmadd_ps(d2, b, acc[2][j]);
  });
}

// One work item for images [0, nimg) of a chunk: xb is input block ib (H, W, 8) of the first
// image, offset to lane 4·half; db the dy block ob (H, W, 8) of the first image; x_img / dy_img
// the image strides; pacc [kw][j][8] the running sums (ignored and overwritten when first).
// The images are summed in order, so chunks of any size give the same sums.
void bww_item(const float* xb, const float* db, size_t x_img, size_t dy_img, size_t nimg, long h, long w, int kh,
              float* pacc, bool first) {
  __m256 acc[3][4];
  unroll<3>([&](auto kw) DSGD_INLINE {
    unroll<4>([&](auto j)
                  DSGD_INLINE { acc[kw][j] = first ? _mm256_setzero_ps() : _mm256_loadu_ps(pacc + (kw * 4 + j) * 8); });
  });
  const long oh0 = kh == 0 ? 1 : 0, oh1 = kh == 2 ? h - 1 : h;
  for (size_t i = 0; i < nimg; ++i, xb += x_img, db += dy_img) {
    for (long oh = oh0; oh < oh1; ++oh) {
      const float* xr = xb + (oh + kh - 1) * w * 8;
      const float* dr = db + oh * w * 8;
      if (w == 1) {
        bww_step<false, false>(acc, xr, dr, 0);
        continue;
      }
      bww_step<true, false>(acc, xr, dr, 0);
      for (long q = 1; q + 1 < w; ++q) bww_step<true, true>(acc, xr, dr, q);
      bww_step<false, true>(acc, xr, dr, w - 1);
    }
  }
  unroll<3>([&](auto kw) DSGD_INLINE {
    unroll<4>([&](auto j) DSGD_INLINE { _mm256_storeu_ps(pacc + (kw * 4 + j) * 8, acc[kw][j]); });
  });
}

}  // namespace

// The class's own functions stay baseline x86-64 (the constructor must run, and throw, on
// any CPU); they call the kernels above only once the constructor has checked the CPU.
#ifdef DSGD_CONV3X3_TARGET_PRAGMA
#pragma GCC pop_options
#endif

BlockedConv3x3::BlockedConv3x3(const Conv2dShape& s) : s_(s) {
  if (!conv3x3_blocked_cpu_supported())
    DSGD_THROW(InputError, "use DnnlConv2d or the im2col convolution (conv2d.hpp)",
               "the direct 3x3 convolution kernels need a CPU with AVX2 and FMA, and this CPU lacks one of them");
  if (!conv3x3_blocked_supported(s))
    DSGD_THROW(InputError, "use DnnlConv2d or the im2col convolution (conv2d.hpp) for this shape",
               "BlockedConv3x3 takes 3x3 stride-1 pad-1 convolutions with channel counts that are multiples of 8 "
               "(got k={} stride={} pad={} c_in={} c_out={})",
               s.k, s.stride, s.pad, s.c_in, s.c_out);
  if (s.w > 64 * size_t(kMaxUr))
    DSGD_THROW(InputError, "", "BlockedConv3x3: rows of {} pixels are too wide (at most {})", s.w, 64 * kMaxUr);
  w_fwd_.resize(s.weight_count());
  w_bwd_.resize(s.weight_count());
  dw_acc_.resize(s.weight_count());
}

void BlockedConv3x3::forward(const float* x, const float* w, float* y) {
  repack_weights(w, s_.c_out, s_.c_in, false, w_fwd_.data());
  conv_run(s_.n, s_.c_in / 8, s_.c_out / 8, s_.h, s_.w, x, w_fwd_.data(), y, false);
}

void BlockedConv3x3::backward_input(const float* w, const float* dy, float* dx, bool accumulate) {
  repack_weights(w, s_.c_out, s_.c_in, true, w_bwd_.data());
  conv_run(s_.n, s_.c_out / 8, s_.c_in / 8, s_.h, s_.w, dy, w_bwd_.data(), dx, accumulate);
}

void BlockedConv3x3::backward_weights(const float* x, const float* dy, float* dw) {
  const size_t cbi = s_.c_in / 8, cbo = s_.c_out / 8, hw8 = s_.h * s_.w * 8;
  // Work items (ob, ib, kh, half), 96 partial sums each ([kw][j][8]).
  const size_t items = cbo * cbi * 3 * 2;
  float* acc = dw_acc_.data();
  // Images per chunk: the chunk's x and dy within ~256 KiB (L2), so each work item's call sums
  // several small images in registers.
  const size_t img_bytes = static_cast<size_t>(s_.c_in + s_.c_out) * s_.h * s_.w * sizeof(float);
  const size_t chunk = std::max<size_t>(1, (256 * 1024) / img_bytes);
  [[maybe_unused]] const int nt = layer_threads();
#ifdef _OPENMP
#pragma omp parallel num_threads(nt) if (nt > 1)
#endif
  {
    size_t t = 0, nthreads = 1;
#ifdef _OPENMP
    t = size_t(omp_get_thread_num());
    nthreads = size_t(omp_get_num_threads());
#endif
    const size_t i0 = items * t / nthreads, i1 = items * (t + 1) / nthreads;
    for (size_t img = 0; img < s_.n; img += chunk) {
      const size_t nimg = std::min(chunk, s_.n - img);
      for (size_t it = i0; it < i1; ++it) {
        const size_t half = it % 2, kh = (it / 2) % 3, ib = (it / 6) % cbi, ob = it / (6 * cbi);
        bww_item(x + (img * cbi + ib) * hw8 + half * 4, dy + (img * cbo + ob) * hw8, cbi * hw8, cbo * hw8, nimg,
                 long(s_.h), long(s_.w), int(kh), acc + it * 96, img == 0);
      }
    }
  }
  // dw[oc][ic][kh][kw] from acc[ob][ib][kh][half][kw][j][o], oc = ob·8 + o, ic = ib·8 + half·4 + j.
  for (size_t it = 0; it < items; ++it) {
    const size_t half = it % 2, kh = (it / 2) % 3, ib = (it / 6) % cbi, ob = it / (6 * cbi);
    for (size_t kw = 0; kw < 3; ++kw)
      for (size_t j = 0; j < 4; ++j)
        for (size_t o = 0; o < 8; ++o)
          dw[((ob * 8 + o) * s_.c_in + ib * 8 + half * 4 + j) * 9 + kh * 3 + kw] = acc[it * 96 + (kw * 4 + j) * 8 + o];
  }
}

#else  // not x86-64 (or Clang without AVX2 + FMA): every shape is unsupported.

BlockedConv3x3::BlockedConv3x3(const Conv2dShape& s) : s_(s) {
  DSGD_THROW(InputError, "use DnnlConv2d or the im2col convolution (conv2d.hpp)",
             "the direct 3x3 convolution kernels are x86-64 AVX2 + FMA only");
}
void BlockedConv3x3::forward(const float*, const float*, float*) {}
void BlockedConv3x3::backward_weights(const float*, const float*, float*) {}
void BlockedConv3x3::backward_input(const float*, const float*, float*, bool) {}

#endif

}  // namespace dsgd
