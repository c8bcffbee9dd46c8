// See nccl_device.hpp.
#include "cluster/cuda/nccl_device.hpp"

#include <cstdlib>
#include <cstring>
#include <string>

#include "cluster/communicator.hpp"
#include "core/cuda/cuda_check.hpp"
#include "core/errors.hpp"
#include "core/gpu_info.hpp"

namespace dsgd {

int nccl_device_for_rank(int local_rank) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  (void)cudaGetLastError();
  if (e != cudaSuccess || count <= 0)
    DSGD_THROW(InputError, "use --backend mpi or sim on this machine, or run on a machine with a GPU",
               "--backend nccl: {}", gpu_info_probe().reason);
  if (const char* v = std::getenv("DSGD_GPU"); v && *v) {
    char* end = nullptr;
    const long d = std::strtol(v, &end, 10);
    if (*end || d < 0 || d >= count)
      DSGD_THROW(InputError, "set DSGD_GPU to a device index below the device count", "DSGD_GPU={}: {} GPUs visible", v,
                 count);
    return int(d);
  }
  return local_rank % count;
}

NcclDevice::NcclDevice(Communicator& world, int device, int events, cudaStream_t compute)
    : rank_(world.rank()), size_(world.size()), device_(device) {
  DSGD_CUDA_CHECK(cudaSetDevice(device_));
  int nccl_version = 0, runtime = 0;
  DSGD_CUDA_CHECK(ncclGetVersion(&nccl_version));
  DSGD_CUDA_CHECK(cudaRuntimeGetVersion(&runtime));
  NcclBootstrap root;
  if (rank_ == 0) {
    ncclUniqueId id;
    DSGD_CUDA_CHECK(ncclGetUniqueId(&id));
    static_assert(sizeof(id.internal) == kNcclUniqueIdBytes);
    std::memcpy(root.unique_id.data(), id.internal, kNcclUniqueIdBytes);
    root.ranks = size_;
    root.nccl_version = nccl_version;
    root.cuda_runtime_version = runtime;
  }
  const NcclBootstrap got = nccl_bootstrap_exchange(world, root, nccl_version, runtime);
  ncclUniqueId id;
  std::memcpy(id.internal, got.unique_id.data(), kNcclUniqueIdBytes);
  DSGD_CUDA_CHECK(ncclCommInitRank(&comm_nccl_, size_, id, rank_));
  DSGD_CUDA_CHECK(cudaStreamCreateWithFlags(&comm_, cudaStreamNonBlocking));
  if (compute) {
    compute_ = compute;
  } else {
    DSGD_CUDA_CHECK(cudaStreamCreateWithFlags(&compute_, cudaStreamNonBlocking));
    own_compute_ = true;
  }
  events_.resize(size_t(events > 0 ? events : 0), nullptr);
  for (auto& ev : events_) DSGD_CUDA_CHECK(cudaEventCreate(&ev));
}

NcclDevice::~NcclDevice() {
  for (auto ev : events_)
    if (ev) (void)cudaEventDestroy(ev);
  if (comm_nccl_) (void)ncclCommDestroy(comm_nccl_);
  if (comm_) (void)cudaStreamDestroy(comm_);
  if (own_compute_ && compute_) (void)cudaStreamDestroy(compute_);
}

std::string NcclDevice::description() const {
  const GpuInfo g = gpu_info_probe(device_);
  return fmt::format("NCCL {}, {} (device {})", g.nccl_version, g.name, device_);
}

void NcclDevice::all_reduce_sum(float* data, size_t count) {
  DSGD_CUDA_CHECK(ncclAllReduce(data, data, count, ncclFloat32, ncclSum, comm_nccl_, comm_));
}
void NcclDevice::reduce_scatter_sum(const float* send, float* shard, size_t block) {
  DSGD_CUDA_CHECK(ncclReduceScatter(send, shard, block, ncclFloat32, ncclSum, comm_nccl_, comm_));
}
void NcclDevice::reduce_sum(const float* send, float* recv, size_t count, int root) {
  DSGD_CUDA_CHECK(ncclReduce(send, recv, count, ncclFloat32, ncclSum, root, comm_nccl_, comm_));
}
void NcclDevice::all_gather(float* data, size_t block) {
  // In place: NCCL's in-place all-gather has sendbuff = recvbuff + rank·sendcount.
  DSGD_CUDA_CHECK(ncclAllGather(data + size_t(rank_) * block, data, block, ncclFloat32, comm_nccl_, comm_));
}
void NcclDevice::broadcast(float* data, size_t count, int root) {
  DSGD_CUDA_CHECK(ncclBroadcast(data, data, count, ncclFloat32, root, comm_nccl_, comm_));
}
void NcclDevice::send(const float* data, size_t count, int peer) {
  DSGD_CUDA_CHECK(ncclSend(data, count, ncclFloat32, peer, comm_nccl_, comm_));
}
void NcclDevice::recv(float* data, size_t count, int peer) {
  DSGD_CUDA_CHECK(ncclRecv(data, count, ncclFloat32, peer, comm_nccl_, comm_));
}
void NcclDevice::group_start() {
  DSGD_CUDA_CHECK(ncclGroupStart());
}
void NcclDevice::group_end() {
  DSGD_CUDA_CHECK(ncclGroupEnd());
}
void NcclDevice::scale(float* data, size_t count, float factor) {
  nccl_scale_kernel_launch(data, count, factor, comm_);
}

void NcclDevice::record_on_compute(int e) {
  DSGD_CUDA_CHECK(cudaEventRecord(events_.at(size_t(e)), compute_));
}
void NcclDevice::record_on_comm(int e) {
  DSGD_CUDA_CHECK(cudaEventRecord(events_.at(size_t(e)), comm_));
}
void NcclDevice::comm_waits_for(int e) {
  DSGD_CUDA_CHECK(cudaStreamWaitEvent(comm_, events_.at(size_t(e)), 0));
}
void NcclDevice::compute_waits_for(int e) {
  DSGD_CUDA_CHECK(cudaStreamWaitEvent(compute_, events_.at(size_t(e)), 0));
}
bool NcclDevice::query(int e) {
  const cudaError_t r = cudaEventQuery(events_.at(size_t(e)));
  if (r == cudaErrorNotReady) {
    (void)cudaGetLastError();
    return false;
  }
  DSGD_CUDA_CHECK(r);
  return true;
}
void NcclDevice::synchronize(int e) {
  DSGD_CUDA_CHECK(cudaEventSynchronize(events_.at(size_t(e))));
}
void NcclDevice::synchronize_compute() {
  DSGD_CUDA_CHECK(cudaStreamSynchronize(compute_));
}
double NcclDevice::seconds_between(int from, int to) {
  float ms = 0;
  DSGD_CUDA_CHECK(cudaEventElapsedTime(&ms, events_.at(size_t(from)), events_.at(size_t(to))));
  return double(ms) * 1e-3;
}

}  // namespace dsgd
