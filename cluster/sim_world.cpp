// The simulated cluster's scheduler and communicator; see sim_world.hpp.
#include "cluster/sim_world.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <thread>

#include "core/errors.hpp"

namespace dsgd {

double SimComputeCost::step_compute_s() const {
  double total = data_s + fwd_s + bwd_rest_s + opt_s;
  for (double b : bwd_layer_s) total += b;
  return total;
}

// ---- SimWorld ------------------------------------------------------------------------------

SimWorld::SimWorld(SimWorldOptions options) : opt_(std::move(options)), n_(opt_.workers) {
  if (n_ < 1) DSGD_THROW(InputError, "pass --workers 1 or more", "sim: {} workers", n_);
  const size_t n = static_cast<size_t>(n_);
  comms_.reserve(n);
  for (int r = 0; r < n_; ++r) comms_.push_back(std::make_unique<SimCommunicator>(*this, r));
  clock_.assign(n, 0.0);
  state_.assign(n, State::state_ready);
  blocked_in_.assign(n, "");
  seq_.assign(n, 0);
  waiting_seq_.assign(n, -1);
  waiting_peer_.assign(n, -1);
  for (int r = 0; r < n_; ++r) cv_.push_back(std::make_unique<std::condition_variable>());
}

SimWorld::~SimWorld() = default;

void SimWorld::make_ready(int rank) {
  state_[static_cast<size_t>(rank)] = State::state_ready;
  ready_.insert({clock_[static_cast<size_t>(rank)], rank});
}

std::string SimWorld::blocked_list() const {
  std::string out;
  int shown = 0;
  for (int r = 0; r < n_ && shown < 8; ++r) {
    if (state_[static_cast<size_t>(r)] != State::state_blocked) continue;
    out += fmt::format("{}worker {} in {}", shown ? ", " : "", r, blocked_in_[static_cast<size_t>(r)]);
    ++shown;
  }
  return out;
}

void SimWorld::pass_baton() {
  if (!ready_.empty()) {
    owner_ = ready_.begin()->second;
    ready_.erase(ready_.begin());
    cv_[static_cast<size_t>(owner_)]->notify_one();
    return;
  }
  owner_ = -1;
  const bool anyone_blocked =
      std::any_of(state_.begin(), state_.end(), [](State s) { return s == State::state_blocked; });
  if (anyone_blocked && !failed_) {
    failed_ = true;
    failure_ = fmt::format("deadlock in the simulated cluster: every unfinished worker is blocked ({})",
                           blocked_list());
    for (auto& cv : cv_) cv->notify_all();
  }
}

void SimWorld::wait_for_baton(std::unique_lock<std::mutex>& lock, int rank) {
  cv_[static_cast<size_t>(rank)]->wait(lock, [&] { return owner_ == rank || failed_; });
  if (failed_) throw SimPeerFailed();
}

void SimWorld::yield(std::unique_lock<std::mutex>& lock, int rank) {
  ready_.insert({clock_[static_cast<size_t>(rank)], rank});
  pass_baton();
  wait_for_baton(lock, rank);
}

void SimWorld::block(std::unique_lock<std::mutex>& lock, int rank, const char* where) {
  state_[static_cast<size_t>(rank)] = State::state_blocked;
  blocked_in_[static_cast<size_t>(rank)] = where;
  pass_baton();
  wait_for_baton(lock, rank);
}

void SimWorld::hold_until(int rank, double deadline) {
  double& t = clock_[static_cast<size_t>(rank)];
  if (deadline > t) t = deadline;
}

void SimWorld::fail_and_throw(int rank, const std::string& why) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!failed_) {
      failed_ = true;
      failure_ = why;
    }
    for (auto& cv : cv_) cv->notify_all();
  }
  DSGD_THROW(Error, "this is a bug in the algorithm: every worker must run the same collectives", "worker {}: {}",
             rank, why);
}

void SimWorld::run(const std::function<void(int rank)>& body) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ready_.clear();
    for (int r = 0; r < n_; ++r) make_ready(r);
    pass_baton();
  }
  std::exception_ptr first_error;
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(n_));
  for (int r = 0; r < n_; ++r) {
    threads.emplace_back([this, r, &body, &first_error] {
      std::exception_ptr error;
      try {
        {
          std::unique_lock<std::mutex> lock(mutex_);
          wait_for_baton(lock, r);
        }
        body(r);
      } catch (const SimPeerFailed&) {
      } catch (...) {
        error = std::current_exception();
      }
      std::lock_guard<std::mutex> lock(mutex_);
      if (error) {
        if (!first_error) first_error = error;
        failed_ = true;
        for (auto& cv : cv_) cv->notify_all();
      }
      state_[static_cast<size_t>(r)] = State::state_done;
      if (owner_ == r) pass_baton();
    });
  }
  for (auto& t : threads) t.join();
  if (first_error) std::rethrow_exception(first_error);
  if (failed_) DSGD_THROW(Error, "this is a bug in the algorithm or the simulator", "{}", failure_);
}

namespace {

const char* op_name(SimWorld::Op op) {
  switch (op) {
    case SimWorld::Op::op_sum_f32: return "all-reduce(sum, float)";
    case SimWorld::Op::op_sum_f64: return "all-reduce(sum, double)";
    case SimWorld::Op::op_max_f64: return "all-reduce(max, double)";
    case SimWorld::Op::op_bcast_f32: return "broadcast(float)";
    case SimWorld::Op::op_bcast_f64: return "broadcast(double)";
    case SimWorld::Op::op_gather_f64: return "gather(double)";
    case SimWorld::Op::op_barrier: return "barrier";
  }
  return "?";
}

// In place into buffers[0] in rank order, then copied to every other buffer.
template <typename T, typename Combine>
void reduce_all(const std::vector<void*>& buffers, size_t count, Combine combine) {
  T* acc = static_cast<T*>(buffers[0]);
  for (size_t r = 1; r < buffers.size(); ++r) {
    const T* x = static_cast<const T*>(buffers[r]);
    for (size_t i = 0; i < count; ++i) acc[i] = combine(acc[i], x[i]);
  }
  for (size_t r = 1; r < buffers.size(); ++r) std::memcpy(buffers[r], acc, count * sizeof(T));
}

template <typename T>
void broadcast_all(const std::vector<void*>& buffers, size_t count, int root) {
  for (size_t r = 0; r < buffers.size(); ++r)
    if (static_cast<int>(r) != root) std::memcpy(buffers[r], buffers[static_cast<size_t>(root)], count * sizeof(T));
}

}  // namespace

void SimWorld::complete(Collective& c) {
  switch (c.op) {
    case Op::op_sum_f32: reduce_all<float>(c.data, c.count, [](float a, float b) { return a + b; }); break;
    case Op::op_sum_f64: reduce_all<double>(c.data, c.count, [](double a, double b) { return a + b; }); break;
    case Op::op_max_f64: reduce_all<double>(c.data, c.count, [](double a, double b) { return a < b ? b : a; }); break;
    case Op::op_bcast_f32: broadcast_all<float>(c.data, c.count, c.root); break;
    case Op::op_bcast_f64: broadcast_all<double>(c.data, c.count, c.root); break;
    case Op::op_gather_f64: {
      auto* out = static_cast<double*>(c.data[static_cast<size_t>(c.root)]);
      for (int r = 0; r < n_; ++r)
        std::memcpy(out + static_cast<size_t>(r) * c.count, c.send[static_cast<size_t>(r)], c.count * sizeof(double));
      break;
    }
    case Op::op_barrier: break;
  }
  double model = 0;
  if (c.timed && opt_.network) {
    const double bytes = c.op == Op::op_barrier ? 0.0 : static_cast<double>(c.count) * sizeof(float);
    model = network_collective_time(*opt_.network, c.kind, opt_.algo, bytes, n_);
  }
  c.completion = c.max_arrival + model;
  c.complete = true;
}

int64_t SimWorld::collective_start(int rank, Op op, CollKind kind, bool timed, void* data, const void* send,
                                   size_t count, int root) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (failed_) throw SimPeerFailed();
  const size_t r = static_cast<size_t>(rank);
  const int64_t seq = seq_[r]++;
  Collective& c = collectives_[seq];
  if (c.arrived == 0) {
    c.op = op;
    c.kind = kind;
    c.timed = timed;
    c.count = count;
    c.root = root;
    c.max_arrival = -std::numeric_limits<double>::infinity();
    c.data.assign(static_cast<size_t>(n_), nullptr);
    c.send.assign(static_cast<size_t>(n_), nullptr);
  } else if (c.op != op || c.count != count || c.root != root || c.timed != timed) {
    const std::string why = fmt::format("collective #{} is {} of {} elements (root {}) here but {} of {} (root {}) "
                                        "on the worker that arrived first",
                                        seq, op_name(op), count, root, op_name(c.op), c.count, c.root);
    lock.unlock();
    fail_and_throw(rank, why);
  }
  c.data[r] = data;
  c.send[r] = send;
  c.max_arrival = std::max(c.max_arrival, clock_[r]);
  if (++c.arrived == n_) {
    complete(c);
    for (int w = 0; w < n_; ++w) {
      const size_t wi = static_cast<size_t>(w);
      if (state_[wi] == State::state_blocked && waiting_seq_[wi] == seq) {
        waiting_seq_[wi] = -1;
        hold_until(w, c.completion);
        make_ready(w);
      }
    }
  }
  return seq;
}

void SimWorld::collective_wait(int rank, int64_t seq) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (failed_) throw SimPeerFailed();
  auto it = collectives_.find(seq);
  if (it->second.complete) {
    hold_until(rank, it->second.completion);
  } else {
    waiting_seq_[static_cast<size_t>(rank)] = seq;
    block(lock, rank, op_name(it->second.op));  // completion sets the clock and makes this worker ready
    it = collectives_.find(seq);
  }
  if (++it->second.released == n_) collectives_.erase(it);
}

bool SimWorld::collective_test(int rank, int64_t seq) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (failed_) throw SimPeerFailed();
  // Every other worker first catches up to this one's virtual time.
  yield(lock, rank);
  auto it = collectives_.find(seq);
  if (!it->second.complete || it->second.completion > clock_[static_cast<size_t>(rank)]) return false;
  if (++it->second.released == n_) collectives_.erase(it);
  return true;
}

void SimWorld::send(int rank, int peer, const double* data, size_t count) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (failed_) throw SimPeerFailed();
  Message m;
  m.payload.assign(data, data + count);
  m.arrival = clock_[static_cast<size_t>(rank)];
  mailbox_[{rank, peer}].push_back(std::move(m));
  const size_t p = static_cast<size_t>(peer);
  if (state_[p] == State::state_blocked && waiting_peer_[p] == rank) {
    waiting_peer_[p] = -1;
    make_ready(peer);
  }
}

void SimWorld::recv(int rank, int peer, double* data, size_t count) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (failed_) throw SimPeerFailed();
  auto& queue = mailbox_[{peer, rank}];
  if (queue.empty()) {
    waiting_peer_[static_cast<size_t>(rank)] = peer;
    block(lock, rank, "recv");
  }
  Message m = std::move(queue.front());
  queue.pop_front();
  if (m.payload.size() != count) {
    lock.unlock();
    fail_and_throw(rank, fmt::format("received {} values from worker {}, expected {}", m.payload.size(), peer, count));
  }
  std::copy(m.payload.begin(), m.payload.end(), data);
  hold_until(rank, m.arrival);
}

// ---- SimCommunicator -------------------------------------------------------------------------

int SimCommunicator::size() const { return world_.size(); }
double SimCommunicator::now() const { return world_.time(rank_); }
void SimCommunicator::hold_until(double deadline) { world_.hold_until(rank_, deadline); }

void SimCommunicator::compute_done(ComputePhase phase, size_t layer) {
  const SimComputeCost& c = world_.options().cost;
  double s = 0;
  switch (phase) {
    case ComputePhase::phase_data: s = c.data_s; break;
    case ComputePhase::phase_forward: s = c.fwd_s; break;
    case ComputePhase::phase_backward_layer: s = layer < c.bwd_layer_s.size() ? c.bwd_layer_s[layer] : 0.0; break;
    case ComputePhase::phase_backward: s = c.bwd_rest_s; break;
    case ComputePhase::phase_optimizer: s = c.opt_s; break;
  }
  world_.advance(rank_, s);
}

std::string SimCommunicator::backend_details() const { return world_.options().details_json; }

using Op = SimWorld::Op;

void SimCommunicator::untimed_allreduce_sum(double* data, size_t count) {
  world_.collective_wait(rank_,
                         world_.collective_start(rank_, Op::op_sum_f64, CollKind::coll_allreduce, false, data, nullptr, count, 0));
}
void SimCommunicator::untimed_allreduce_sum(float* data, size_t count) {
  world_.collective_wait(rank_,
                         world_.collective_start(rank_, Op::op_sum_f32, CollKind::coll_allreduce, false, data, nullptr, count, 0));
}
void SimCommunicator::untimed_allreduce_max(double* data, size_t count) {
  world_.collective_wait(rank_,
                         world_.collective_start(rank_, Op::op_max_f64, CollKind::coll_allreduce, false, data, nullptr, count, 0));
}
void SimCommunicator::untimed_gather(const double* send, size_t count, double* recv, int root) {
  world_.collective_wait(rank_, world_.collective_start(rank_, Op::op_gather_f64, CollKind::coll_allgather, false, recv,
                                                        send, count, root));
}
void SimCommunicator::untimed_broadcast(double* data, size_t count, int root) {
  world_.collective_wait(rank_,
                         world_.collective_start(rank_, Op::op_bcast_f64, CollKind::coll_broadcast, false, data, nullptr, count, root));
}
void SimCommunicator::untimed_send(const double* data, size_t count, int peer) { world_.send(rank_, peer, data, count); }
void SimCommunicator::untimed_recv(double* data, size_t count, int peer) { world_.recv(rank_, peer, data, count); }
void SimCommunicator::untimed_barrier() {
  world_.collective_wait(rank_,
                         world_.collective_start(rank_, Op::op_barrier, CollKind::coll_barrier, false, nullptr, nullptr, 0, 0));
}
void SimCommunicator::abort(int code) { throw SimPeerFailed(); }

void SimCommunicator::do_allreduce_sum(float* data, size_t count) {
  world_.collective_wait(rank_,
                         world_.collective_start(rank_, Op::op_sum_f32, CollKind::coll_allreduce, true, data, nullptr, count, 0));
}
void SimCommunicator::do_broadcast(float* data, size_t count, int root) {
  world_.collective_wait(rank_,
                         world_.collective_start(rank_, Op::op_bcast_f32, CollKind::coll_broadcast, true, data, nullptr, count, root));
}
void SimCommunicator::do_barrier() {
  world_.collective_wait(rank_,
                         world_.collective_start(rank_, Op::op_barrier, CollKind::coll_barrier, true, nullptr, nullptr, 0, 0));
}
int SimCommunicator::do_iallreduce_sum_start(float* data, size_t count) {
  const int64_t seq = world_.collective_start(rank_, Op::op_sum_f32, CollKind::coll_allreduce, true, data, nullptr, count, 0);
  for (size_t i = 0; i < slots_.size(); ++i) {
    if (slots_[i] < 0) {
      slots_[i] = seq;
      return static_cast<int>(i);
    }
  }
  slots_.push_back(seq);
  return static_cast<int>(slots_.size() - 1);
}
bool SimCommunicator::do_test(int slot) {
  const bool done = world_.collective_test(rank_, slots_[static_cast<size_t>(slot)]);
  if (done) slots_[static_cast<size_t>(slot)] = -1;
  return done;
}
void SimCommunicator::do_wait(int slot) {
  world_.collective_wait(rank_, slots_[static_cast<size_t>(slot)]);
  slots_[static_cast<size_t>(slot)] = -1;
}

}  // namespace dsgd
