// See nccl_bootstrap.hpp.
#include "cluster/nccl_bootstrap.hpp"

#include <cstring>

#include "cluster/communicator.hpp"
#include "core/errors.hpp"

namespace dsgd {

namespace {

constexpr char kMagic[8] = {'D', 'S', 'G', 'D', 'N', 'C', 'C', 'L'};
constexpr size_t kChecksumAt = 152;
static_assert(kNcclBootstrapBytes % sizeof(double) == 0);

uint64_t fnv1a64(const uint8_t* p, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

template <class T>
void put(uint8_t* out, size_t at, T v) {
  std::memcpy(out + at, &v, sizeof v);  // x86-64 and aarch64: little-endian, as documented
}
template <class T>
T get(const uint8_t* in, size_t at) {
  T v;
  std::memcpy(&v, in + at, sizeof v);
  return v;
}

std::string version_text(int32_t code, bool nccl) {
  if (code <= 0) return "none";
  if (nccl) return fmt::format("{}.{}.{}", code / 10000, (code % 10000) / 100, code % 100);
  return fmt::format("{}.{}", code / 1000, (code % 1000) / 10);
}

}  // namespace

std::array<uint8_t, kNcclBootstrapBytes> nccl_bootstrap_encode(const NcclBootstrap& b) {
  std::array<uint8_t, kNcclBootstrapBytes> out{};
  std::memcpy(out.data(), kMagic, sizeof kMagic);
  put(out.data(), 8, kNcclBootstrapFormat);
  put(out.data(), 12, b.ranks);
  put(out.data(), 16, b.nccl_version);
  put(out.data(), 20, b.cuda_runtime_version);
  std::memcpy(out.data() + 24, b.unique_id.data(), kNcclUniqueIdBytes);
  put(out.data(), kChecksumAt, fnv1a64(out.data(), kChecksumAt));
  return out;
}

NcclBootstrap nccl_bootstrap_decode(const uint8_t* in, size_t size, int32_t expected_ranks, int32_t local_nccl_version,
                                    int32_t local_cuda_runtime_version, int rank) {
  const char* hint = "every rank must run the same dsgd-bench build with the same NCCL and CUDA libraries";
  if (size != kNcclBootstrapBytes)
    DSGD_THROW(Error, hint, "NCCL bootstrap on rank {}: message of {} bytes, expected {}", rank, size,
               kNcclBootstrapBytes);
  if (std::memcmp(in, kMagic, sizeof kMagic) != 0)
    DSGD_THROW(Error, hint, "NCCL bootstrap on rank {}: not a dsgd-bench bootstrap message (bad magic)", rank);
  if (get<uint32_t>(in, 8) != kNcclBootstrapFormat)
    DSGD_THROW(Error, hint, "NCCL bootstrap on rank {}: message format {}, this build reads format {}", rank,
               get<uint32_t>(in, 8), kNcclBootstrapFormat);
  if (get<uint64_t>(in, kChecksumAt) != fnv1a64(in, kChecksumAt))
    DSGD_THROW(Error, hint, "NCCL bootstrap on rank {}: checksum mismatch (the message was corrupted)", rank);
  NcclBootstrap b;
  b.ranks = get<int32_t>(in, 12);
  b.nccl_version = get<int32_t>(in, 16);
  b.cuda_runtime_version = get<int32_t>(in, 20);
  std::memcpy(b.unique_id.data(), in + 24, kNcclUniqueIdBytes);
  if (b.ranks != expected_ranks)
    DSGD_THROW(Error, hint, "NCCL bootstrap on rank {}: rank 0 expects {} ranks, this rank's world has {}", rank,
               b.ranks, expected_ranks);
  if (b.nccl_version != local_nccl_version)
    DSGD_THROW(Error, hint, "NCCL bootstrap on rank {}: rank 0 runs NCCL {}, this rank NCCL {}", rank,
               version_text(b.nccl_version, true), version_text(local_nccl_version, true));
  if (b.cuda_runtime_version != local_cuda_runtime_version)
    DSGD_THROW(Error, hint, "NCCL bootstrap on rank {}: rank 0 runs CUDA runtime {}, this rank {}", rank,
               version_text(b.cuda_runtime_version, false), version_text(local_cuda_runtime_version, false));
  return b;
}

NcclBootstrap nccl_bootstrap_exchange(Communicator& world, const NcclBootstrap& root_message,
                                      int32_t local_nccl_version, int32_t local_cuda_runtime_version) {
  double words[kNcclBootstrapBytes / sizeof(double)] = {};
  if (world.rank() == 0) {
    const auto bytes = nccl_bootstrap_encode(root_message);
    std::memcpy(words, bytes.data(), kNcclBootstrapBytes);
  }
  // The bytes travel as doubles (bit patterns copied, never computed on).
  world.untimed_broadcast(words, kNcclBootstrapBytes / sizeof(double), 0);
  uint8_t bytes[kNcclBootstrapBytes];
  std::memcpy(bytes, words, kNcclBootstrapBytes);
  return nccl_bootstrap_decode(bytes, kNcclBootstrapBytes, world.size(), local_nccl_version, local_cuda_runtime_version,
                               world.rank());
}

}  // namespace dsgd
