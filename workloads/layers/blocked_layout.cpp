// See blocked_layout.hpp.
#include "workloads/layers/blocked_layout.hpp"

#ifdef __AVX__
#include <immintrin.h>
#endif

#include "workloads/layers/layer_threads.hpp"

namespace dsgd {

namespace {

#ifdef __AVX__
// 8 rows of 8 floats → 8 vectors of the 8 rows at each column (out[k] = {r[0][k], …, r[7][k]}).
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

}  // namespace

void cnhw_to_nchw8c(const float* in, float* out, size_t n, size_t c, size_t hw) {
  const size_t blocks = c / kChannelBlock;
  for_each_image_block(n, blocks, n * c * hw, [&](size_t i, size_t b) {
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

void nchw8c_to_cnhw(const float* in, float* out, size_t n, size_t c, size_t hw, bool accumulate) {
  const size_t blocks = c / kChannelBlock;
  for_each_image_block(n, blocks, n * c * hw, [&](size_t i, size_t b) {
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

void add_into(float* y, const float* x, size_t count) {
  [[maybe_unused]] const int t = layer_threads();
#ifdef _OPENMP
#pragma omp parallel for num_threads(t) schedule(static) if (t > 1 && count >= kParallelMinFloats)
#endif
  for (size_t i = 0; i < count; ++i) y[i] += x[i];
}

}  // namespace dsgd
