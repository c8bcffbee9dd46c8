// The real CollectiveDevice (cluster/collective_device.hpp): NCCL collectives on a communication
// stream of its own, separate from the compute stream (the workload's; one is created when none
// is given), and a pool of CUDA events for the request table and the timing. One process per
// GPU: the device is chosen by the rank's index on its host (rank % GPUs on this host, or
// $DSGD_GPU), the NCCL communicator initialised from the bootstrap message
// (cluster/nccl_bootstrap.hpp) that rank 0 sends over MPI. Only built with CUDA.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <memory>
#include <vector>

#include "cluster/collective_device.hpp"
#include "cluster/nccl_bootstrap.hpp"

namespace dsgd {

class Communicator;

class NcclDevice final : public CollectiveDevice {
 public:
  // Collective over `world` (MPI): bootstraps NCCL and creates the streams and `events` events.
  NcclDevice(Communicator& world, int device, int events, cudaStream_t compute = nullptr);
  ~NcclDevice() override;
  NcclDevice(const NcclDevice&) = delete;
  NcclDevice& operator=(const NcclDevice&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string description() const override;
  cudaStream_t compute_stream() const { return compute_; }
  cudaStream_t comm_stream() const { return comm_; }
  int device() const { return device_; }

  void all_reduce_sum(float* data, size_t count) override;
  void reduce_scatter_sum(const float* send, float* shard, size_t block) override;
  void reduce_sum(const float* send, float* recv, size_t count, int root) override;
  void all_gather(float* data, size_t block) override;
  void broadcast(float* data, size_t count, int root) override;
  void send(const float* data, size_t count, int peer) override;
  void recv(float* data, size_t count, int peer) override;
  void group_start() override;
  void group_end() override;
  void scale(float* data, size_t count, float factor) override;

  int event_count() const override { return static_cast<int>(events_.size()); }
  void record_on_compute(int event) override;
  void record_on_comm(int event) override;
  void comm_waits_for(int event) override;
  void compute_waits_for(int event) override;
  bool query(int event) override;
  void synchronize(int event) override;
  void synchronize_compute() override;
  double seconds_between(int from, int to) override;

 private:
  int rank_ = 0, size_ = 1, device_ = 0;
  ncclComm_t comm_nccl_ = nullptr;
  cudaStream_t comm_ = nullptr;
  cudaStream_t compute_ = nullptr;
  bool own_compute_ = false;
  std::vector<cudaEvent_t> events_;
};

// The GPU this rank uses: $DSGD_GPU when set, else local_rank % devices (local_rank: the
// rank's index among the ranks on its host). Throws InputError naming the problem when there
// is no device or $DSGD_GPU is out of range.
int nccl_device_for_rank(int local_rank);

// ncclScale on device memory (the kernel behind NcclDevice::scale).
void nccl_scale_kernel_launch(float* data, size_t count, float factor, cudaStream_t stream);

}  // namespace dsgd
