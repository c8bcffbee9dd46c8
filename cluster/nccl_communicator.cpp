// See nccl_communicator.hpp.
#include "cluster/nccl_communicator.hpp"

#include <nlohmann/json.hpp>

#include "core/errors.hpp"
#include "core/gpu_info.hpp"

namespace dsgd {

NcclCommunicator::NcclCommunicator(std::unique_ptr<Communicator> world, std::unique_ptr<CollectiveDevice> device,
                                   Device memory, int records)
    : world_(std::move(world)), device_(std::move(device)), memory_(memory), records_(records) {
  if (device_->event_count() < kAnchorEvents + records_.capacity() * kRequestEvents)
    DSGD_THROW(Error, "this is a bug", "nccl: the device has {} events, the request table needs {}",
               device_->event_count(), kAnchorEvents + records_.capacity() * kRequestEvents);
  if (device_->rank() != world_->rank() || device_->size() != world_->size())
    DSGD_THROW(Error, "this is a bug", "nccl: device rank {}/{} differs from MPI's {}/{}", device_->rank(),
               device_->size(), world_->rank(), world_->size());
  anchor();
}

NcclCommunicator::~NcclCommunicator() = default;

// Stored with the run's configuration ("backend-details"): the NCCL device, the MPI library that
// bootstrapped it, and the GPU's context (name, memory, compute capability, driver release, the
// CUDA version the driver supports, the CUDA runtime, cuDNN and NCCL versions: core/gpu_info.hpp).
std::string NcclCommunicator::backend_details() const {
  nlohmann::json j;
  j["nccl"] = device_->description();
  j["bootstrap"] = world_->library_version();
  if (memory_.kind == DeviceKind::device_cuda)
    j["gpu"] = nlohmann::json::parse(gpu_info_json(gpu_info_probe(memory_.index)));
  return j.dump();
}

void NcclCommunicator::anchor() {
  device_->synchronize_compute();
  device_->record_on_compute(0);
  device_->synchronize(0);
  anchor_.host_s = now();
}

template <class Body>
int NcclCommunicator::launch(CollKind kind, bool blocking, Body body) {
  const int k = records_.next();
  if (!records_.at(k).resolved) resolve(k);  // the ring came round: read its times first
  records_.acquire(kind, 0, blocking);
  device_->record_on_compute(event(k, RequestEvent::ready));
  device_->comm_waits_for(event(k, RequestEvent::ready));
  device_->record_on_comm(event(k, RequestEvent::start));
  body();
  device_->record_on_comm(event(k, RequestEvent::done));
  return k;
}

// A blocking operation: the compute stream waits for it; the host does not (the next kernel,
// an averaging scale or a copy to the host, is ordered after it on the compute stream).
void NcclCommunicator::finish_blocking_record(int k) {
  device_->compute_waits_for(event(k, RequestEvent::done));
  records_.finish(k);
  CollEventLog* log = event_log();
  records_.at(k).log_index = log ? int64_t(log->size()) : -1;  // the base records it next
}

void NcclCommunicator::resolve(int k) {
  DeviceRequest& r = records_.at(k);
  if (r.resolved) return;
  if (r.in_flight)
    DSGD_THROW(Error, "wait for every request before a flush", "nccl: request record {} still in flight", k);
  device_->synchronize(event(k, RequestEvent::done));
  CollEventLog* log = event_log();
  if (log && r.log_index >= 0 && size_t(r.log_index) < log->size()) {
    DeviceCollTimes t;
    t.start = device_->seconds_between(0, event(k, RequestEvent::start));
    t.done = device_->seconds_between(0, event(k, RequestEvent::done));
    t.reached = r.blocking ? -1.0 : device_->seconds_between(0, event(k, RequestEvent::reached));
    const CollEvent recorded = log->data()[r.log_index];
    CollEvent e = coll_event_from_device(anchor_, t, CollKind(recorded.kind), recorded.bytes_sent);
    log->replace(size_t(r.log_index), e);
  }
  records_.mark_resolved(k);
}

void NcclCommunicator::flush_device_timing() {
  for (int k = 0; k < records_.capacity(); ++k) resolve(k);
  anchor();
}

namespace {
[[noreturn]] void host_refused(const char* what) {
  DSGD_THROW(Error, "keep parameters and gradients on the GPU with --backend nccl (or use --backend mpi)",
             "nccl: {} of host memory: the nccl backend moves GPU memory only", what);
}
}  // namespace

void NcclCommunicator::do_allreduce_sum(BufferView data) {
  if (data.device.is_host()) host_refused("allreduce");
  finish_blocking_record(
      launch(CollKind::coll_allreduce, true, [&] { device_->all_reduce_sum(data.f32(), data.count); }));
}

void NcclCommunicator::do_broadcast(BufferView data, int root) {
  if (data.device.is_host()) host_refused("broadcast");
  finish_blocking_record(
      launch(CollKind::coll_broadcast, true, [&] { device_->broadcast(data.f32(), data.count, root); }));
}

void NcclCommunicator::do_barrier() {
  device_->synchronize_compute();
  world_->untimed_barrier();
}

int NcclCommunicator::do_iallreduce_sum_start(BufferView data) {
  if (data.device.is_host()) host_refused("iallreduce");
  return launch(CollKind::coll_allreduce, false, [&] { device_->all_reduce_sum(data.f32(), data.count); });
}

// Completion is on the device: progress() never completes a request on the host (the wait
// orders the compute stream after it without blocking the host, and the in-flight interval
// comes from the device events), so the base always calls do_wait. The query only notes it.
bool NcclCommunicator::do_test(int k) {
  DeviceRequest& r = records_.at(k);
  if (!r.complete && device_->query(event(k, RequestEvent::done))) records_.mark_complete(k);
  return false;
}

void NcclCommunicator::do_wait(int k) {
  device_->record_on_compute(event(k, RequestEvent::reached));
  device_->compute_waits_for(event(k, RequestEvent::done));
  records_.finish(k);
  CollEventLog* log = event_log();
  records_.at(k).log_index = log ? int64_t(log->size()) : -1;  // the base records it after this returns
}

void NcclCommunicator::reduce_blocks(const float* send, float* shard, size_t count) {
  const int n = size();
  if (count % size_t(n) == 0) {
    device_->reduce_scatter_sum(send, shard, count / size_t(n));
    return;
  }
  // Unequal blocks (Communicator::shard_begin): one reduce per block to its owner, grouped.
  device_->group_start();
  for (int r = 0; r < n; ++r) {
    const size_t b = shard_begin(count, n, r), e = shard_begin(count, n, r + 1);
    device_->reduce_sum(send + b, shard, e - b, r);
  }
  device_->group_end();
}

void NcclCommunicator::gather_blocks(float* data, size_t count) {
  const int n = size();
  if (count % size_t(n) == 0) {
    device_->all_gather(data, count / size_t(n));
    return;
  }
  device_->group_start();
  for (int r = 0; r < n; ++r) {
    const size_t b = shard_begin(count, n, r), e = shard_begin(count, n, r + 1);
    device_->broadcast(data + b, e - b, r);
  }
  device_->group_end();
}

void NcclCommunicator::do_reduce_scatter_sum(ConstBufferView send, BufferView shard) {
  if (send.device.is_host() || shard.device.is_host()) host_refused("reduce_scatter");
  finish_blocking_record(
      launch(CollKind::coll_reduce_scatter, true, [&] { reduce_blocks(send.f32(), shard.f32(), send.count); }));
}

void NcclCommunicator::do_allgather(BufferView data) {
  if (data.device.is_host()) host_refused("allgather");
  finish_blocking_record(launch(CollKind::coll_allgather, true, [&] { gather_blocks(data.f32(), data.count); }));
}

int NcclCommunicator::do_iallgather_start(BufferView data) {
  if (data.device.is_host()) host_refused("iallgather");
  return launch(CollKind::coll_allgather, false, [&] { gather_blocks(data.f32(), data.count); });
}

int NcclCommunicator::do_exchange_start(ConstBufferView send, const int* dests, size_t n_dests, BufferView recv,
                                        size_t recv_count, const int* sources, size_t n_sources) {
  if ((n_dests && send.device.is_host()) || (n_sources && recv.device.is_host())) host_refused("sendrecv");
  return launch(CollKind::coll_sendrecv, false, [&] {
    device_->group_start();
    for (size_t k = 0; k < n_dests; ++k) device_->send(send.f32(), send.count, dests[k]);
    for (size_t k = 0; k < n_sources; ++k) device_->recv(recv.f32() + k * recv_count, recv_count, sources[k]);
    device_->group_end();
  });
}

}  // namespace dsgd
