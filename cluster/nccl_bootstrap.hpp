// The NCCL backend's bootstrap message: rank 0 creates the ncclUniqueId and broadcasts it to
// every rank over MPI (MPI's only job on this backend besides launching), with what the other
// ranks must agree on, so that a mismatch is a clear error before ncclCommInitRank would hang
// or fail obscurely. Layout (160 bytes, little-endian, a whole number of doubles so it rides
// on Communicator::untimed_broadcast):
//   [0, 8)     magic "DSGDNCCL"        [8, 12)    format version (1)
//   [12, 16)   ranks (int32)           [16, 20)   rank 0's NCCL version code (ncclGetVersion)
//   [20, 24)   rank 0's CUDA runtime version     [24, 152) the ncclUniqueId (128 bytes)
//   [152, 160) FNV-1a 64 checksum of bytes [0, 152)
// Pure host code, compiled in every build (tests/unit/test_nccl_host.cpp).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace dsgd {

class Communicator;

constexpr size_t kNcclUniqueIdBytes = 128;  // NCCL_UNIQUE_ID_BYTES
constexpr size_t kNcclBootstrapBytes = 160;
constexpr uint32_t kNcclBootstrapFormat = 1;

struct NcclBootstrap {
  int32_t ranks = 0;
  int32_t nccl_version = 0;
  int32_t cuda_runtime_version = 0;
  std::array<uint8_t, kNcclUniqueIdBytes> unique_id{};
};

std::array<uint8_t, kNcclBootstrapBytes> nccl_bootstrap_encode(const NcclBootstrap& b);
// Throws Error naming what does not match: a corrupt message (magic, format, checksum), or
// this rank's world size, NCCL or CUDA runtime version differing from rank 0's.
NcclBootstrap nccl_bootstrap_decode(const uint8_t* bytes, size_t size, int32_t expected_ranks,
                                    int32_t local_nccl_version, int32_t local_cuda_runtime_version, int rank);

// Collective over `world` (untimed): rank 0 sends `root_message` (ignored elsewhere), every
// rank returns the decoded message after checking it against its own size and versions.
NcclBootstrap nccl_bootstrap_exchange(Communicator& world, const NcclBootstrap& root_message,
                                      int32_t local_nccl_version, int32_t local_cuda_runtime_version);

}  // namespace dsgd
