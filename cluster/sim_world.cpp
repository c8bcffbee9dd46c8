// The simulated cluster's scheduler and communicator; see sim_world.hpp.
#include "cluster/sim_world.hpp"

#include <fmt/format.h>

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
  waiting_exchange_.assign(n, -1);
  blocked_detail_.assign(n, -1);
  exchanges_.resize(n);
  windows_.resize(n);
  if (!opt_.group_of.empty() && opt_.group_of.size() != n)
    DSGD_THROW(Error, "this is a bug: pass the topology's group_of", "sim: group_of has {} entries for {} workers",
               opt_.group_of.size(), n);
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
    const size_t ri = static_cast<size_t>(r);
    if (state_[ri] != State::state_blocked) continue;
    out += fmt::format("{}worker {} in {}", shown ? ", " : "", r, blocked_in_[ri]);
    if (waiting_peer_[ri] >= 0) out += fmt::format(" from worker {}", waiting_peer_[ri]);
    if (waiting_exchange_[ri] >= 0) {
      // The sources whose messages this exchange still waits for.
      std::vector<int> sources;
      for (const auto& [key, queue] : p2p_posted_)
        if (key % n_ == r)
          for (const PostedRecv& p : queue)
            if (p.exchange == waiting_exchange_[ri]) sources.push_back(static_cast<int>(key / n_));
      std::sort(sources.begin(), sources.end());
      out += fmt::format(" waiting for a message from worker(s) {}", fmt::join(sources, ", "));
    }
    if (blocked_detail_[ri] >= 0) {
      const Window& w = windows_[static_cast<size_t>(blocked_detail_[ri])];
      out += fmt::format(" of worker {} (held by worker {})", blocked_detail_[ri], w.holder);
    }
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
    failure_ =
        fmt::format("deadlock in the simulated cluster: every unfinished worker is blocked ({})", blocked_list());
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
  DSGD_THROW(Error, "this is a bug in the algorithm: every worker must run the same collectives", "worker {}: {}", rank,
             why);
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
    case SimWorld::Op::op_reduce_scatter_f32: return "reduce-scatter(sum, float)";
    case SimWorld::Op::op_allgather_f32: return "all-gather(float)";
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
    case Op::op_reduce_scatter_f32: {
      // Each rank's block is the sum over ranks in rank order, as reduce_all's.
      for (int r = 0; r < n_; ++r) {
        const size_t b = Communicator::shard_begin(c.count, n_, r), e = Communicator::shard_begin(c.count, n_, r + 1);
        float* out = static_cast<float*>(c.data[static_cast<size_t>(r)]);
        std::memcpy(out, static_cast<const float*>(c.send[0]) + b, (e - b) * sizeof(float));
        for (int j = 1; j < n_; ++j) {
          const float* x = static_cast<const float*>(c.send[static_cast<size_t>(j)]) + b;
          for (size_t i = 0; i < e - b; ++i) out[i] += x[i];
        }
      }
      break;
    }
    case Op::op_allgather_f32: {
      for (int r = 0; r < n_; ++r) {
        const size_t b = Communicator::shard_begin(c.count, n_, r), e = Communicator::shard_begin(c.count, n_, r + 1);
        const float* src = static_cast<const float*>(c.data[static_cast<size_t>(r)]) + b;
        for (int j = 0; j < n_; ++j)
          if (j != r)
            std::memcpy(static_cast<float*>(c.data[static_cast<size_t>(j)]) + b, src, (e - b) * sizeof(float));
      }
      break;
    }
  }
  double model = 0;
  if (c.timed) {
    const double bytes = c.op == Op::op_barrier ? 0.0 : static_cast<double>(c.count) * sizeof(float);
    model = sim_collective_time(opt_.network, opt_.native, c.kind, opt_.algo, bytes, n_);
  }
  // Collectives in flight at once (non-blocking ones launched from backward hooks, background
  // averages) share the network: each occupies it from max(its last arrival, the previous
  // collective's end). Blocking ones cannot overlap, so for them this is max_arrival + model.
  const double start = model > 0 ? std::max(c.max_arrival, collective_link_free_) : c.max_arrival;
  c.completion = start + model;
  if (model > 0) collective_link_free_ = c.completion;
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
    const std::string why = fmt::format(
        "collective #{} is {} of {} elements (root {}) here but {} of {} (root {}) "
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
  waiting_peer_[static_cast<size_t>(rank)] = -1;
  Message m = std::move(queue.front());
  queue.pop_front();
  if (m.payload.size() != count) {
    lock.unlock();
    fail_and_throw(rank, fmt::format("received {} values from worker {}, expected {}", m.payload.size(), peer, count));
  }
  std::copy(m.payload.begin(), m.payload.end(), data);
  hold_until(rank, m.arrival);
}

double sim_message_time(const std::optional<NetworkModel>& network, const std::optional<NetworkModel>& native,
                        const std::vector<int>& group_of, int i, int j, double bytes) {
  if (i == j) return 0.0;
  double t = 0.0;
  if (network) {
    const bool same_group = group_of.empty() || group_of[static_cast<size_t>(i)] == group_of[static_cast<size_t>(j)];
    t = network_p2p_time(same_group ? network->intra : network_inter_link(*network), bytes);
  }
  if (native) t = std::max(t, network_p2p_time(native->intra, bytes));
  return t;
}

double sim_collective_time(const std::optional<NetworkModel>& network, const std::optional<NetworkModel>& native,
                           CollKind kind, CollAlgo algo, double bytes, int n) {
  double t = network ? network_collective_time(*network, kind, algo, bytes, n) : 0.0;
  if (native) t = std::max(t, network_collective_time(*native, kind, CollAlgo::algo_ring, bytes, n));
  return t;
}

double SimWorld::message_time(int i, int j, double bytes) const {
  return sim_message_time(opt_.network, opt_.native, opt_.group_of, i, j, bytes);
}

// Called with mutex_ held: delivers a message into a posted receive of worker dst.
void SimWorld::match(int src, int dst, const P2pMessage& m, const PostedRecv& p) {
  if (m.payload.size() > p.count) {
    failed_ = true;
    failure_ = fmt::format("worker {} sent {} floats to worker {}, whose receive has room for {}", src,
                           m.payload.size(), dst, p.count);
    for (auto& cv : cv_) cv->notify_all();
    throw SimPeerFailed();
  }
  if (!m.payload.empty())
    std::memcpy(p.recv, m.payload.data(), m.payload.size() * sizeof(float));  // memcpy of null is UB
  const size_t d = static_cast<size_t>(dst);
  Exchange& ex = exchanges_[d][static_cast<size_t>(p.exchange)];
  ex.completion = std::max(ex.completion, m.arrival);
  if (--ex.pending == 0 && state_[d] == State::state_blocked && waiting_exchange_[d] == p.exchange) {
    waiting_exchange_[d] = -1;
    hold_until(dst, ex.completion);
    make_ready(dst);
  }
}

int64_t SimWorld::exchange_start(int rank, const float* send, size_t send_count, const int* dests, size_t n_dests,
                                 float* recv, size_t recv_count, const int* sources, size_t n_sources) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (failed_) throw SimPeerFailed();
  auto check_peer = [&](int peer, const char* what) {
    if (peer < 0 || peer >= n_) {
      lock.unlock();
      fail_and_throw(rank, fmt::format("{} worker {} outside 0..{}", what, peer, n_ - 1));
    }
  };
  for (size_t k = 0; k < n_dests; ++k) check_peer(dests[k], "send to");
  for (size_t k = 0; k < n_sources; ++k) check_peer(sources[k], "receive from");
  const size_t r = static_cast<size_t>(rank);
  std::vector<Exchange>& mine = exchanges_[r];
  size_t id = 0;
  while (id < mine.size() && mine[id].used) ++id;
  if (id == mine.size()) mine.emplace_back();
  Exchange& ex = mine[id];
  const double t = clock_[r];
  ex.used = true;
  ex.pending = static_cast<int>(n_sources);
  ex.completion = t;
  // Receives first (their matches may complete this exchange at once: self messages).
  for (size_t k = 0; k < n_sources; ++k) {
    const int64_t key = int64_t(sources[k]) * n_ + rank;
    PostedRecv p{static_cast<int64_t>(id), recv + k * recv_count, recv_count};
    auto it = p2p_unmatched_.find(key);
    if (it != p2p_unmatched_.end() && !it->second.empty()) {
      P2pMessage m = std::move(it->second.front());
      it->second.pop_front();
      match(sources[k], rank, m, p);
    } else {
      p2p_posted_[key].push_back(p);
    }
  }
  // Sends leave one after the other on this worker's link.
  const double bytes = static_cast<double>(send_count) * sizeof(float);
  double busy = 0;
  for (size_t k = 0; k < n_dests; ++k) {
    const int dst = dests[k];
    P2pMessage m;
    m.arrival = t;
    if (dst != rank) {
      const double msg = message_time(rank, dst, bytes);
      const double alpha = message_time(rank, dst, 0.0);
      busy += msg - alpha;
      m.arrival = t + alpha + busy;
    }
    m.payload.assign(send, send + send_count);
    const int64_t key = int64_t(rank) * n_ + dst;
    auto it = p2p_posted_.find(key);
    if (it != p2p_posted_.end() && !it->second.empty()) {
      const PostedRecv p = it->second.front();
      it->second.pop_front();
      match(rank, dst, m, p);
    } else {
      p2p_unmatched_[key].push_back(std::move(m));
    }
  }
  Exchange& ex2 = exchanges_[r][id];  // (match() does not resize this worker's table)
  ex2.completion = std::max(ex2.completion, t + busy);
  return static_cast<int64_t>(id);
}

void SimWorld::exchange_wait(int rank, int64_t id) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (failed_) throw SimPeerFailed();
  const size_t r = static_cast<size_t>(rank);
  if (exchanges_[r][static_cast<size_t>(id)].pending > 0) {
    waiting_exchange_[r] = id;
    block(lock, rank, "exchange");  // the last match sets the clock and makes this worker ready
  }
  Exchange& ex = exchanges_[r][static_cast<size_t>(id)];
  hold_until(rank, ex.completion);
  ex.used = false;
}

bool SimWorld::exchange_test(int rank, int64_t id) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (failed_) throw SimPeerFailed();
  yield(lock, rank);  // every other worker first catches up to this one's virtual time
  const size_t r = static_cast<size_t>(rank);
  Exchange& ex = exchanges_[r][static_cast<size_t>(id)];
  if (ex.pending > 0 || ex.completion > clock_[r]) return false;
  ex.used = false;
  return true;
}

SimWorld::Window& SimWorld::window_of(int rank, int target, const char* what) {
  if (target < 0 || target >= n_ || !windows_[static_cast<size_t>(target)].created) {
    const std::string why =
        target < 0 || target >= n_
            ? fmt::format("{} of worker {} outside 0..{}", what, target, n_ - 1)
            : fmt::format("{} of worker {}, which has no window (window_create first)", what, target);
    failed_ = true;
    failure_ = why;
    for (auto& cv : cv_) cv->notify_all();
    DSGD_THROW(Error, "this is a bug in the algorithm: create the window on every worker first", "worker {}: {}", rank,
               why);
  }
  return windows_[static_cast<size_t>(target)];
}

void SimWorld::window_create(int rank, size_t count) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (failed_) throw SimPeerFailed();
  Window& w = windows_[static_cast<size_t>(rank)];
  if (w.created) {
    failed_ = true;
    failure_ = fmt::format("worker {} created a second window", rank);
    for (auto& cv : cv_) cv->notify_all();
    DSGD_THROW(Error, "this is a bug: free the window first", "worker {}: window already created", rank);
  }
  w.data.assign(count, 0.0f);
  w.version = 0;
  w.holder = -1;
  w.free_at = 0;
  w.waiters.clear();
  w.created = true;
}

void SimWorld::window_free(int rank) {
  std::lock_guard<std::mutex> lock(mutex_);
  Window& w = windows_[static_cast<size_t>(rank)];
  w.data.clear();
  w.data.shrink_to_fit();
  w.created = false;
}

void SimWorld::window_lock(int rank, int target) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (failed_) throw SimPeerFailed();
  // Every worker at a smaller virtual time requests its locks first.
  yield(lock, rank);
  Window& w = window_of(rank, target, "window_lock");
  if (w.holder == rank) {
    lock.unlock();
    fail_and_throw(rank, fmt::format("window_lock of worker {} while already holding it", target));
  }
  if (w.holder < 0) {
    w.holder = rank;
    hold_until(rank, w.free_at);
    return;
  }
  w.waiters.push_back(rank);
  blocked_detail_[static_cast<size_t>(rank)] = target;
  block(lock, rank, "window_lock");  // the holder's unlock hands the lock over and sets the clock
  blocked_detail_[static_cast<size_t>(rank)] = -1;
}

void SimWorld::window_unlock(int rank, int target) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (failed_) throw SimPeerFailed();
  Window& w = window_of(rank, target, "window_unlock");
  if (w.holder != rank) {
    lock.unlock();
    fail_and_throw(rank, fmt::format("window_unlock of worker {} without holding its lock", target));
  }
  w.free_at = clock_[static_cast<size_t>(rank)];
  w.holder = -1;
  if (!w.waiters.empty()) {
    const int next = w.waiters.front();
    w.waiters.pop_front();
    w.holder = next;
    hold_until(next, w.free_at);
    make_ready(next);
  }
}

void SimWorld::window_get(int rank, int target, float* dst, size_t count, uint64_t* version) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (failed_) throw SimPeerFailed();
  Window& w = window_of(rank, target, "window_get");
  if (w.holder != rank || count > w.data.size()) {
    lock.unlock();
    fail_and_throw(rank, fmt::format("window_get of {} floats from worker {} ({}; the window has {})", count, target,
                                     w.holder == rank ? "locked" : "not locked", w.data.size()));
  }
  std::memcpy(dst, w.data.data(), count * sizeof(float));
  *version = w.version;
  advance(rank, message_time(rank, target, static_cast<double>(count) * sizeof(float)));
}

void SimWorld::window_put(int rank, int target, const float* src, size_t count, uint64_t version) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (failed_) throw SimPeerFailed();
  Window& w = window_of(rank, target, "window_put");
  if (w.holder != rank || count > w.data.size()) {
    lock.unlock();
    fail_and_throw(rank, fmt::format("window_put of {} floats to worker {} ({}; the window has {})", count, target,
                                     w.holder == rank ? "locked" : "not locked", w.data.size()));
  }
  std::memcpy(w.data.data(), src, count * sizeof(float));
  w.version = version;
  advance(rank, message_time(rank, target, static_cast<double>(count) * sizeof(float)));
}

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

double SimCommunicator::compute_cost_s(ComputePhase phase, size_t layer) const {
  const SimComputeCost& c = world_.options().cost;
  switch (phase) {
    case ComputePhase::phase_data: return c.data_s;
    case ComputePhase::phase_forward: return c.fwd_s;
    case ComputePhase::phase_backward_layer: return layer < c.bwd_layer_s.size() ? c.bwd_layer_s[layer] : 0.0;
    case ComputePhase::phase_backward: return c.bwd_rest_s;
    case ComputePhase::phase_optimizer: return c.opt_s;
  }
  return 0.0;
}

std::string SimCommunicator::backend_details() const {
  return world_.options().details_json;
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

}  // namespace dsgd
