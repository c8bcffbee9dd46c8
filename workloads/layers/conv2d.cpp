// See conv2d.hpp. im2col works row by row of the col matrix: for one (ci, ky, kx) and one
// (n, oy), the valid output columns ox form one range, copied (stride 1: memcpy) with zeros
// on either side; col2im is its adjoint, adding.
#include "workloads/layers/conv2d.hpp"

#include <cblas.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "workloads/layers/kernel_profile.hpp"
#include "workloads/layers/layer_threads.hpp"

namespace dsgd {

namespace {

// Valid output range [lo, hi) of ox for kernel offset kx: 0 <= ox·s − p + kx < W.
struct OxRange {
  size_t lo, hi;
};
OxRange ox_range(const Conv2dShape& s, size_t kx) {
  const long p = static_cast<long>(s.pad), st = static_cast<long>(s.stride), k = static_cast<long>(kx);
  const long w = static_cast<long>(s.w), wo = static_cast<long>(s.w_out());
  long lo = p - k <= 0 ? 0 : (p - k + st - 1) / st;
  long hi = (w - 1 + p - k) < 0 ? 0 : (w - 1 + p - k) / st + 1;
  lo = std::min(lo, wo);
  hi = std::clamp(hi, lo, wo);
  return {static_cast<size_t>(lo), static_cast<size_t>(hi)};
}

}  // namespace

void conv2d_im2col(const Conv2dShape& s, const float* x, size_t n0, size_t n1, float* col) {
  const size_t ho = s.h_out(), wo = s.w_out(), ncols = (n1 - n0) * ho * wo;
  const long rows = static_cast<long>(s.patch());
  [[maybe_unused]] const int t = layer_threads();
  // Each thread fills whole col rows (one (ci, ky, kx) each, or the row's half of the images when
  // there are fewer rows than threads): pure copies, so the result never depends on the thread count.
  const long parts = rows >= t ? rows : rows * t;
#ifdef _OPENMP
#pragma omp parallel for num_threads(t) schedule(static) if (t > 1 && rows * long(ncols) >= long(kParallelMinFloats))
#endif
  for (long part = 0; part < parts; ++part) {
    const size_t rr = static_cast<size_t>(rows >= t ? part : part / t);
    const size_t ci = rr / (s.k * s.k), ky = rr / s.k % s.k, kx = rr % s.k;
    const size_t span = rows >= t ? n1 - n0 : (n1 - n0 + size_t(t) - 1) / size_t(t);
    const size_t na = rows >= t ? n0 : std::min(n1, n0 + size_t(part % t) * span);
    const size_t nb = rows >= t ? n1 : std::min(n1, na + span);
    float* row = col + rr * ncols;
    const OxRange r = ox_range(s, kx);
    for (size_t n = na; n < nb; ++n) {
      const float* xn = x + (ci * s.n + n) * s.h * s.w;
      for (size_t oy = 0; oy < ho; ++oy) {
        float* out = row + ((n - n0) * ho + oy) * wo;
        const long iy = static_cast<long>(oy * s.stride + ky) - static_cast<long>(s.pad);
        if (iy < 0 || iy >= static_cast<long>(s.h)) {
          std::memset(out, 0, wo * sizeof(float));
          continue;
        }
        const float* xr = xn + static_cast<size_t>(iy) * s.w;
        for (size_t ox = 0; ox < r.lo; ++ox) out[ox] = 0.0f;
        const long ix0 = static_cast<long>(r.lo * s.stride + kx) - static_cast<long>(s.pad);
        if (s.stride == 1) {
          if (r.hi > r.lo) std::memcpy(out + r.lo, xr + ix0, (r.hi - r.lo) * sizeof(float));
        } else {
          const float* src = xr + ix0;
          for (size_t ox = r.lo; ox < r.hi; ++ox, src += s.stride) out[ox] = *src;
        }
        for (size_t ox = r.hi; ox < wo; ++ox) out[ox] = 0.0f;
      }
    }
  }
}

void conv2d_col2im_add(const Conv2dShape& s, const float* dcol, size_t n0, size_t n1, float* dx) {
  const size_t ho = s.h_out(), wo = s.w_out(), ncols = (n1 - n0) * ho * wo;
  [[maybe_unused]] const int t = layer_threads();
  // Work items are (input channel, image) pairs: each owns its dx image plane and adds the k·k
  // rows into it in the fixed (ky, kx, oy) order, so the sums do not depend on the thread count.
  const long items = static_cast<long>(s.c_in * (n1 - n0));
#ifdef _OPENMP
#pragma omp parallel for num_threads(t) \
    schedule(static) if (t > 1 && items > 1 && long(s.patch() * ncols) >= long(kParallelMinFloats))
#endif
  for (long item = 0; item < items; ++item) {
    const size_t ci = static_cast<size_t>(item) / (n1 - n0), n = n0 + static_cast<size_t>(item) % (n1 - n0);
    for (size_t ky = 0; ky < s.k; ++ky)
      for (size_t kx = 0; kx < s.k; ++kx) {
        const float* row = dcol + ((ci * s.k + ky) * s.k + kx) * ncols;
        const OxRange r = ox_range(s, kx);
        float* xn = dx + (ci * s.n + n) * s.h * s.w;
        for (size_t oy = 0; oy < ho; ++oy) {
          const long iy = static_cast<long>(oy * s.stride + ky) - static_cast<long>(s.pad);
          if (iy < 0 || iy >= static_cast<long>(s.h)) continue;
          const float* in = row + ((n - n0) * ho + oy) * wo;
          float* xr = xn + static_cast<size_t>(iy) * s.w;
          const long ix0 = static_cast<long>(r.lo * s.stride + kx) - static_cast<long>(s.pad);
          float* dst = xr + ix0;
          if (s.stride == 1) {
            for (size_t ox = r.lo; ox < r.hi; ++ox) dst[ox - r.lo] += in[ox];
          } else {
            for (size_t ox = r.lo; ox < r.hi; ++ox, dst += s.stride) *dst += in[ox];
          }
        }
      }
  }
}

void conv2d_forward(const Conv2dShape& s, const float* x, const float* w, float* y, float* col) {
  const int m = static_cast<int>(s.c_out), n = static_cast<int>(s.cols()), k = static_cast<int>(s.patch());
  if (s.direct()) {
    // y (Cout, cols) = W (Cout, K) · x (K, cols)
    KernelTimer kt(Kernel::gemm_fwd);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, w, k, x, n, 0.0f, y, n);
    return;
  }
  const size_t per = s.h_out() * s.w_out(), step = s.chunk_images();
  for (size_t n0 = 0; n0 < s.n; n0 += step) {
    const size_t n1 = std::min(s.n, n0 + step);
    const int nc = static_cast<int>((n1 - n0) * per);
    {
      KernelTimer kt(Kernel::im2col);
      conv2d_im2col(s, x, n0, n1, col);
    }
    KernelTimer kt(Kernel::gemm_fwd);
    // y[:, chunk] (Cout, nc) = W (Cout, K) · col (K, nc)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, nc, k, 1.0f, w, k, col, nc, 0.0f, y + n0 * per, n);
  }
}

void conv2d_backward_weights(const Conv2dShape& s, const float* x, const float* dy, float* dw, float* col) {
  const int m = static_cast<int>(s.c_out), n = static_cast<int>(s.cols()), k = static_cast<int>(s.patch());
  if (s.direct()) {
    // dW (Cout, K) = dy (Cout, cols) · xᵀ (cols, K)
    KernelTimer kt(Kernel::gemm_bwd_w);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, k, n, 1.0f, dy, n, x, n, 0.0f, dw, k);
    return;
  }
  const size_t per = s.h_out() * s.w_out(), step = s.chunk_images();
  for (size_t n0 = 0; n0 < s.n; n0 += step) {
    const size_t n1 = std::min(s.n, n0 + step);
    const int nc = static_cast<int>((n1 - n0) * per);
    {
      KernelTimer kt(Kernel::im2col);
      conv2d_im2col(s, x, n0, n1, col);
    }
    KernelTimer kt(Kernel::gemm_bwd_w);
    // dW (Cout, K) (+)= dy[:, chunk] (Cout, nc) · colᵀ (nc, K)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, k, nc, 1.0f, dy + n0 * per, n, col, nc,
                n0 == 0 ? 0.0f : 1.0f, dw, k);
  }
}

void conv2d_backward_input(const Conv2dShape& s, const float* w, const float* dy, float* dx, float* dcol,
                           bool accumulate) {
  const int m = static_cast<int>(s.c_out), n = static_cast<int>(s.cols()), k = static_cast<int>(s.patch());
  if (s.direct()) {
    // dx (Cin, cols) (+)= Wᵀ (Cin, Cout) · dy (Cout, cols)
    KernelTimer kt(Kernel::gemm_bwd_in);
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, k, n, m, 1.0f, w, k, dy, n, accumulate ? 1.0f : 0.0f, dx, n);
    return;
  }
  if (!accumulate) {
    KernelTimer kt(Kernel::zero_dx);
    std::memset(dx, 0, s.c_in * s.n * s.h * s.w * sizeof(float));
  }
  const size_t per = s.h_out() * s.w_out(), step = s.chunk_images();
  for (size_t n0 = 0; n0 < s.n; n0 += step) {
    const size_t n1 = std::min(s.n, n0 + step);
    const int nc = static_cast<int>((n1 - n0) * per);
    // dcol (K, nc) = Wᵀ (K, Cout) · dy[:, chunk] (Cout, nc), then scattered back onto dx.
    {
      KernelTimer kt(Kernel::gemm_bwd_in);
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, k, nc, m, 1.0f, w, k, dy + n0 * per, n, 0.0f, dcol, nc);
    }
    KernelTimer kt(Kernel::col2im);
    conv2d_col2im_add(s, dcol, n0, n1, dx);
  }
}

void conv2d_forward_naive(const Conv2dShape& s, const float* x, const float* w, float* y) {
  const size_t ho = s.h_out(), wo = s.w_out();
  for (size_t co = 0; co < s.c_out; ++co)
    for (size_t n = 0; n < s.n; ++n)
      for (size_t oy = 0; oy < ho; ++oy)
        for (size_t ox = 0; ox < wo; ++ox) {
          double acc = 0;
          for (size_t ci = 0; ci < s.c_in; ++ci)
            for (size_t ky = 0; ky < s.k; ++ky)
              for (size_t kx = 0; kx < s.k; ++kx) {
                const long iy = long(oy * s.stride + ky) - long(s.pad), ix = long(ox * s.stride + kx) - long(s.pad);
                if (iy < 0 || ix < 0 || iy >= long(s.h) || ix >= long(s.w)) continue;
                acc += double(x[((ci * s.n + n) * s.h + size_t(iy)) * s.w + size_t(ix)]) *
                       w[((co * s.c_in + ci) * s.k + ky) * s.k + kx];
              }
          y[((co * s.n + n) * ho + oy) * wo + ox] = static_cast<float>(acc);
        }
}

void conv2d_backward_naive(const Conv2dShape& s, const float* x, const float* w, const float* dy, float* dx,
                           float* dw) {
  const size_t ho = s.h_out(), wo = s.w_out();
  std::vector<double> gx(s.c_in * s.n * s.h * s.w, 0.0), gw(s.weight_count(), 0.0);
  for (size_t co = 0; co < s.c_out; ++co)
    for (size_t n = 0; n < s.n; ++n)
      for (size_t oy = 0; oy < ho; ++oy)
        for (size_t ox = 0; ox < wo; ++ox) {
          const double g = dy[((co * s.n + n) * ho + oy) * wo + ox];
          for (size_t ci = 0; ci < s.c_in; ++ci)
            for (size_t ky = 0; ky < s.k; ++ky)
              for (size_t kx = 0; kx < s.k; ++kx) {
                const long iy = long(oy * s.stride + ky) - long(s.pad), ix = long(ox * s.stride + kx) - long(s.pad);
                if (iy < 0 || ix < 0 || iy >= long(s.h) || ix >= long(s.w)) continue;
                const size_t xi = ((ci * s.n + n) * s.h + size_t(iy)) * s.w + size_t(ix);
                const size_t wi = ((co * s.c_in + ci) * s.k + ky) * s.k + kx;
                gx[xi] += g * w[wi];
                gw[wi] += g * x[xi];
              }
        }
  for (size_t i = 0; i < gx.size(); ++i) dx[i] = static_cast<float>(gx[i]);
  for (size_t i = 0; i < gw.size(); ++i) dw[i] = static_cast<float>(gw[i]);
}

}  // namespace dsgd
