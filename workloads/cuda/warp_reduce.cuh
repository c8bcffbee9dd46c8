// Warp- and block-level sums and maxima for the row kernels (one warp per row: LayerNorm,
// softmax, cross-entropy). The butterfly (__shfl_xor_sync) leaves the result in every lane
// and sums in the same order on every run, so the kernels are deterministic.
#pragma once

namespace dsgd::cuda_detail {

constexpr int kWarp = 32;

__device__ inline float warp_sum(float v) {
  for (int o = kWarp / 2; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ inline double warp_sum(double v) {
  for (int o = kWarp / 2; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ inline float warp_max(float v) {
  for (int o = kWarp / 2; o > 0; o /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Launch geometry of a one-warp-per-row kernel: 8 warps (256 threads) per block.
constexpr int kRowsPerBlock = 8;
inline unsigned row_blocks(size_t rows) {
  return static_cast<unsigned>((rows + kRowsPerBlock - 1) / kRowsPerBlock);
}

// Blocks of 256 threads covering n elements (grid-stride loops cover any remainder).
inline unsigned elem_blocks(size_t n) {
  const size_t b = (n + 255) / 256;
  return static_cast<unsigned>(b < 65535 * 8 ? (b ? b : 1) : 65535 * 8);
}

}  // namespace dsgd::cuda_detail
