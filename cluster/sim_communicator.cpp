// The Communicator of one simulated worker, forwarding to its SimWorld; see sim_world.hpp.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <limits>

#include "cluster/sim_world.hpp"
#include "core/errors.hpp"

namespace dsgd {

// ---- SimCommunicator -------------------------------------------------------------------------

int SimCommunicator::size() const {
  return world_.size();
}
double SimCommunicator::now() const {
  return world_.time(rank_);
}
void SimCommunicator::hold_until(double deadline) {
  world_.hold_until(rank_, deadline);
}

void SimCommunicator::compute_done(ComputePhase phase, size_t layer) {
  world_.advance(rank_, compute_cost_s(phase, layer));
}

void SimCommunicator::averaging_pass_done(double bytes) {
  world_.advance(rank_, world_.options().cost.pass_s(bytes));
}

double SimCommunicator::compute_cost_s(ComputePhase phase, size_t layer) const {
  const SimComputeCost& c = world_.options().cost;
  switch (phase) {
    case ComputePhase::phase_data: return c.data_s;
    case ComputePhase::phase_forward: return c.fwd_s;
    case ComputePhase::phase_backward_layer: return layer < c.bwd_layer_s.size() ? c.bwd_layer_s[layer] : 0.0;
    case ComputePhase::phase_backward: return c.bwd_rest_s;
    case ComputePhase::phase_optimizer: return c.opt_s;
    case ComputePhase::phase_model_passes: return static_cast<double>(layer) * c.model_pass_s;
  }
  return 0.0;
}

std::string SimCommunicator::backend_details() const {
  return world_.options().details_json;
}

ComputeJitter SimCommunicator::compute_jitter() const {
  return world_.options().jitter;
}

using Op = SimWorld::Op;

void SimCommunicator::untimed_allreduce_sum(double* data, size_t count) {
  world_.collective_wait(
      rank_, world_.collective_start(rank_, Op::op_sum_f64, CollKind::coll_allreduce, false, data, nullptr, count, 0));
}
void SimCommunicator::untimed_allreduce_sum(float* data, size_t count) {
  world_.collective_wait(
      rank_, world_.collective_start(rank_, Op::op_sum_f32, CollKind::coll_allreduce, false, data, nullptr, count, 0));
}
void SimCommunicator::untimed_allreduce_max(double* data, size_t count) {
  world_.collective_wait(
      rank_, world_.collective_start(rank_, Op::op_max_f64, CollKind::coll_allreduce, false, data, nullptr, count, 0));
}
void SimCommunicator::untimed_gather(const double* send, size_t count, double* recv, int root) {
  world_.collective_wait(rank_, world_.collective_start(rank_, Op::op_gather_f64, CollKind::coll_allgather, false, recv,
                                                        send, count, root));
}
void SimCommunicator::untimed_broadcast(double* data, size_t count, int root) {
  world_.collective_wait(rank_, world_.collective_start(rank_, Op::op_bcast_f64, CollKind::coll_broadcast, false, data,
                                                        nullptr, count, root));
}
void SimCommunicator::untimed_send(const double* data, size_t count, int peer) {
  world_.send(rank_, peer, data, count);
}
void SimCommunicator::untimed_recv(double* data, size_t count, int peer) {
  world_.recv(rank_, peer, data, count);
}
void SimCommunicator::untimed_barrier() {
  world_.collective_wait(
      rank_, world_.collective_start(rank_, Op::op_barrier, CollKind::coll_barrier, false, nullptr, nullptr, 0, 0));
}
void SimCommunicator::abort(int code) {
  throw SimPeerFailed();
}

void SimCommunicator::do_allreduce_sum(BufferView data) {
  world_.collective_wait(rank_, world_.collective_start(rank_, Op::op_sum_f32, CollKind::coll_allreduce, true,
                                                        data.data, nullptr, data.count, 0));
}
void SimCommunicator::do_broadcast(BufferView data, int root) {
  world_.collective_wait(rank_, world_.collective_start(rank_, Op::op_bcast_f32, CollKind::coll_broadcast, true,
                                                        data.data, nullptr, data.count, root));
}
void SimCommunicator::do_barrier() {
  world_.collective_wait(
      rank_, world_.collective_start(rank_, Op::op_barrier, CollKind::coll_barrier, true, nullptr, nullptr, 0, 0));
}
int SimCommunicator::slot_for(int64_t id, bool exchange) {
  for (size_t i = 0; i < slots_.size(); ++i) {
    if (slots_[i].id < 0) {
      slots_[i] = Slot{id, exchange};
      return static_cast<int>(i);
    }
  }
  slots_.push_back(Slot{id, exchange});
  return static_cast<int>(slots_.size() - 1);
}
int SimCommunicator::do_iallreduce_sum_start(BufferView data) {
  return slot_for(
      world_.collective_start(rank_, Op::op_sum_f32, CollKind::coll_allreduce, true, data.data, nullptr, data.count, 0),
      false);
}
bool SimCommunicator::do_test(int slot) {
  Slot& s = slots_[static_cast<size_t>(slot)];
  const bool done = s.exchange ? world_.exchange_test(rank_, s.id) : world_.collective_test(rank_, s.id);
  if (done) s.id = -1;
  return done;
}
void SimCommunicator::do_wait(int slot) {
  Slot& s = slots_[static_cast<size_t>(slot)];
  if (s.exchange)
    world_.exchange_wait(rank_, s.id);
  else
    world_.collective_wait(rank_, s.id);
  s.id = -1;
}
void SimCommunicator::do_reduce_scatter_sum(ConstBufferView send, BufferView shard) {
  world_.collective_wait(rank_, world_.collective_start(rank_, Op::op_reduce_scatter_f32, CollKind::coll_reduce_scatter,
                                                        true, shard.data, send.data, send.count, 0));
}
void SimCommunicator::do_allgather(BufferView data) {
  world_.collective_wait(rank_, world_.collective_start(rank_, Op::op_allgather_f32, CollKind::coll_allgather, true,
                                                        data.data, nullptr, data.count, 0));
}
int SimCommunicator::do_iallgather_start(BufferView data) {
  return slot_for(world_.collective_start(rank_, Op::op_allgather_f32, CollKind::coll_allgather, true, data.data,
                                          nullptr, data.count, 0),
                  false);
}
int SimCommunicator::do_exchange_start(ConstBufferView send, const int* dests, size_t n_dests, BufferView recv,
                                       size_t recv_count, const int* sources, size_t n_sources) {
  return slot_for(
      world_.exchange_start(rank_, send.f32(), send.count, dests, n_dests, recv.f32(), recv_count, sources, n_sources),
      true);
}
// Creating and freeing a window synchronise every worker (MPI_Win_allocate / MPI_Win_free
// are collective), without virtual time.
void SimCommunicator::do_window_create(size_t count) {
  world_.window_create(rank_, count);
  untimed_barrier();
}
void SimCommunicator::do_window_free() {
  untimed_barrier();
  world_.window_free(rank_);
}
void SimCommunicator::do_window_lock(int rank) {
  world_.window_lock(rank_, rank);
}
void SimCommunicator::do_window_unlock(int rank) {
  world_.window_unlock(rank_, rank);
}
void SimCommunicator::do_window_get(BufferView dst, int rank, uint64_t* version) {
  world_.window_get(rank_, rank, dst.f32(), dst.count, version);
}
void SimCommunicator::do_window_put(ConstBufferView src, int rank, uint64_t version) {
  world_.window_put(rank_, rank, src.f32(), src.count, version);
}
void SimCommunicator::do_window_poll_wait(int rank, double polled_at) {
  world_.window_poll_wait(rank_, rank, polled_at);
}

}  // namespace dsgd
