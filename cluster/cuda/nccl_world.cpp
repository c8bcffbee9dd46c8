// The nccl backend's world (the backend table's nccl row, cluster/backends.cpp): MPI's world
// for the bootstrap and the harness, this rank's GPU, the CUDA vector operations on it (their
// stream is the compute stream), the NCCL device on that stream, and the NcclCommunicator.
// Only built with CUDA.
#include <cuda_runtime_api.h>

#include <cstdlib>
#include <memory>
#include <string>

#include "cluster/cuda/nccl_device.hpp"
#include "cluster/nccl_communicator.hpp"
#include "core/cuda/cuda_check.hpp"
#include "core/cuda/vector_ops_cuda.hpp"
#include "core/gpu_info.hpp"

namespace dsgd {

namespace {

constexpr int kRecords = 256;  // operations in flight or awaiting their device times

// This rank's index among the ranks on its host, from the launcher's environment (Hydra:
// MPI_LOCALRANKID; Open MPI: OMPI_COMM_WORLD_LOCAL_RANK; Slurm: SLURM_LOCALID), else rank modulo
// the ranks on the host (ranks placed in blocks).
int local_rank(const Communicator& world) {
  for (const char* var : {"MPI_LOCALRANKID", "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID"})
    if (const char* v = std::getenv(var); v && *v) return std::atoi(v);
  const int per_host = world.ranks_on_this_host() > 0 ? world.ranks_on_this_host() : 1;
  return world.rank() % per_host;
}

}  // namespace

std::string nccl_unavailable_reason() {
  const GpuInfo g = gpu_info_probe();
  return g.available ? std::string() : g.reason;
}

std::unique_ptr<Communicator> communicator_create_nccl(int* argc, char*** argv) {
  std::unique_ptr<Communicator> world = communicator_create_world(argc, argv);
  const int device = nccl_device_for_rank(local_rank(*world));
  DSGD_CUDA_CHECK(cudaSetDevice(device));
  CudaVectorOps& ops = vector_ops_cuda();  // registered for cuda:<device>
  auto nccl = std::make_unique<NcclDevice>(*world, device, 1 + kRecords * kRequestEvents, ops.stream());
  return std::make_unique<NcclCommunicator>(std::move(world), std::move(nccl), Device{DeviceKind::device_cuda, device},
                                            kRecords);
}

}  // namespace dsgd
