// Deterministic random numbers. std:: distributions are not portable across standard
// libraries, so the few we need are written here on top of splitmix64 / xoshiro256**:
// the same seed gives the same stream on every platform and build.
#pragma once

#include <cmath>
#include <cstdint>

namespace dsgd {

inline uint64_t rng_splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Mixes several integers (seed, rank, epoch, ...) into one stream seed.
inline uint64_t rng_derive_seed(uint64_t seed, uint64_t a, uint64_t b = 0, uint64_t c = 0) {
  uint64_t s = seed ^ 0x5851f42d4c957f2dULL;
  uint64_t h = rng_splitmix64(s);
  s = h ^ a;
  h = rng_splitmix64(s);
  s = h ^ b;
  h = rng_splitmix64(s);
  s = h ^ c;
  return rng_splitmix64(s);
}

class Rng {
 public:
  explicit Rng(uint64_t seed) {
    uint64_t s = seed;
    for (auto& x : s_) x = rng_splitmix64(s);
  }
  uint64_t next_u64() {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }
  // Uniform in [0, 1).
  double uniform() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }
  // Uniform integer in [0, n), n > 0 (Lemire's multiply-shift, negligible bias for our n).
  uint64_t below(uint64_t n) { return static_cast<uint64_t>((static_cast<unsigned __int128>(next_u64()) * n) >> 64); }
  // Standard normal by Box-Muller (one value per call; simple and portable).
  double normal() {
    double u1 = uniform();
    double u2 = uniform();
    if (u1 < 1e-300) u1 = 1e-300;
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }
  // Fisher-Yates shuffle of [first, first+n).
  template <typename T>
  void shuffle(T* first, uint64_t n) {
    for (uint64_t i = n; i > 1; --i) {
      uint64_t j = below(i);
      T tmp = first[i - 1];
      first[i - 1] = first[j];
      first[j] = tmp;
    }
  }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

}  // namespace dsgd
