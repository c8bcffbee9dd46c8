// See calibration_ops.hpp.
#include "engine/calibration_ops.hpp"

#include "core/errors.hpp"

namespace dsgd {

namespace {

constexpr int kPeerA = 0, kPeerB = 1;  // the pair of the point-to-point and one-sided rows

double factor_allreduce(int n) {
  return n < 1 ? 0.0 : 2.0 * (n - 1) / n;
}
double factor_scatter_gather(int n) {
  return n < 1 ? 0.0 : double(n - 1) / n;
}
double factor_one(int) {
  return 1.0;
}

double sent_allreduce(double bytes, int n) {
  return ring_allreduce_bytes_sent(bytes, n);
}
double sent_scatter_gather(double bytes, int n) {
  return ring_scatter_gather_bytes_sent(bytes, n);
}
double sent_whole(double bytes, int) {
  return bytes;
}  // rank 0 sends the whole buffer (root / first peer)
double sent_nothing(double, int) {
  return 0.0;
}

void run_allreduce(Communicator& comm, CalibrationBuffers& buf, size_t count) {
  comm.allreduce_sum(buf.a.slice(0, count));
}
void run_allreduce_bare(Communicator& comm, CalibrationBuffers& buf, size_t count) {
  comm.bare_allreduce_sum(buf.a.slice(0, count));
}
void run_reduce_scatter(Communicator& comm, CalibrationBuffers& buf, size_t count) {
  comm.reduce_scatter_sum(buf.a.slice(0, count), buf.b.slice(0, comm.shard_count(count)));
}
void run_allgather(Communicator& comm, CalibrationBuffers& buf, size_t count) {
  comm.allgather(buf.b.slice(0, count));
}
void run_broadcast(Communicator& comm, CalibrationBuffers& buf, size_t count) {
  comm.broadcast(buf.a.slice(0, count), 0);
}

// Ping-pong: A sends `count` floats to B, then B sends them back (each leg an exchange whose
// other direction is an empty message, so the leg's time is the one-way transfer).
void run_pingpong(Communicator& comm, CalibrationBuffers& buf, size_t count) {
  const int r = comm.rank();
  const BufferView a = buf.a.slice(0, count), b = buf.b.slice(0, count), none = buf.b.slice(0, 0);
  if (r == kPeerA) {
    comm.sendrecv(a, kPeerB, none, kPeerB);
    comm.sendrecv(none, kPeerB, b, kPeerB);
  } else if (r == kPeerB) {
    comm.sendrecv(none, kPeerA, b, kPeerA);
    comm.sendrecv(a, kPeerA, none, kPeerA);
  }
}

// Ranks A and B send each other `count` floats at once (a gossip exchange on a ring of two).
void run_exchange(Communicator& comm, CalibrationBuffers& buf, size_t count) {
  const int r = comm.rank();
  if (r != kPeerA && r != kPeerB) return;
  const int peer = r == kPeerA ? kPeerB : kPeerA;
  comm.sendrecv(buf.a.slice(0, count), peer, buf.b.slice(0, count), peer);
}

// One access epoch of A on B's window: lock, put (or get) `count` floats, unlock.
void run_put(Communicator& comm, CalibrationBuffers& buf, size_t count) {
  if (comm.rank() != kPeerA) return;
  comm.window_lock(kPeerB);
  comm.window_put(buf.a.slice(0, count), kPeerB, 1);
  comm.window_unlock(kPeerB);
}
void run_get(Communicator& comm, CalibrationBuffers& buf, size_t count) {
  if (comm.rank() != kPeerA) return;
  uint64_t version = 0;
  comm.window_lock(kPeerB);
  comm.window_get(buf.b.slice(0, count), kPeerB, &version);
  comm.window_unlock(kPeerB);
}

}  // namespace

const std::vector<CalibrationOp>& calibration_ops() {
  // name, description, min ranks, per-rank blocks, recorded, window, interleaved, time scale,
  // busbw factor, bytes rank 0 sends, run.
  static const std::vector<CalibrationOp> ops = {
      {"allreduce", "harness Communicator::allreduce_sum (recorded, as in training) | bare all-reduce; in place, sum",
       2, false, true, false, false, 1.0, factor_allreduce, sent_allreduce, run_allreduce},
      {"allreduce_mpi", "bare backend all-reduce (untimed_allreduce_sum: not recorded), in place, sum", 2, false, false,
       false, true, 1.0, factor_allreduce, sent_allreduce, run_allreduce_bare},
      {"reduce_scatter", "Communicator::reduce_scatter_sum; size = the whole send buffer", 2, true, true, false, false,
       1.0, factor_scatter_gather, sent_scatter_gather, run_reduce_scatter},
      {"allgather", "Communicator::allgather, in place; size = the whole receive buffer", 2, true, true, false, false,
       1.0, factor_scatter_gather, sent_scatter_gather, run_allgather},
      {"broadcast", "Communicator::broadcast from rank 0", 2, false, true, false, false, 1.0, factor_one, sent_whole,
       run_broadcast},
      {"sendrecv", "Communicator::sendrecv ping-pong, ranks 0 and 1; time = half the round trip", 2, false, true, false,
       false, 0.5, factor_one, sent_whole, run_pingpong},
      {"onesided_put", "one-sided epoch of rank 0 on rank 1's window: lock, put, unlock", 2, false, true, true, false,
       1.0, factor_one, sent_whole, run_put},
      {"onesided_get", "one-sided epoch of rank 0 on rank 1's window: lock, get, unlock", 2, false, true, true, false,
       1.0, factor_one, sent_nothing, run_get},
      {"allreduce_after_compute", "the harness all-reduce after a stretch of compute (as in a training step)", 2, false,
       true, false, false, 1.0, factor_allreduce, sent_allreduce, run_allreduce, true},
      {"sendrecv_after_compute",
       "ranks 0 and 1 exchange the buffer at once (Communicator::sendrecv) after a stretch of compute", 2, false, true,
       false, false, 1.0, factor_one, sent_whole, run_exchange, true},
      {"onesided_put_after_compute", "rank 0's lock, put, unlock on rank 1's window after a stretch of compute", 2,
       false, true, true, false, 1.0, factor_one, sent_whole, run_put, true},
  };
  return ops;
}

const CalibrationOp& calibration_op_find(std::string_view name) {
  for (const CalibrationOp& op : calibration_ops())
    if (name == op.name) return op;
  DSGD_THROW(Error, "", "calibration: unknown operation '{}'", name);
}

size_t calibration_op_count(const CalibrationOp& op, int64_t bytes, int n) {
  const size_t count = static_cast<size_t>(bytes) / sizeof(float);
  if (!op.per_rank_blocks || n < 1) return count;
  return count / static_cast<size_t>(n) * static_cast<size_t>(n);
}

bool calibration_op_runs_on(const CalibrationOp& op, int n) {
  return n >= op.min_ranks;
}

bool calibration_op_runs_on_device(const CalibrationOp& op, Device device) {
  return device.is_host() || (op.recorded && !op.needs_window && !op.after_compute);
}

void calibration_after_compute_prepare(Communicator& comm, CalibrationBuffers& buf, size_t count) {
  if (comm.virtual_clock() || !buf.device.is_host()) return;
  if (buf.stream.empty()) buf.stream.assign(kAfterComputeStreamBytes, 1);
  for (size_t i = 0; i < buf.stream.size(); i += 64) buf.stream[i] = static_cast<char>(buf.stream[i] + 1);
  VectorOps& vec = vector_ops_for(buf.device);
  vec.fill(buf.a.slice(0, count), 0.0f);
  vec.fill(buf.b.slice(0, count), 0.0f);
}

}  // namespace dsgd
