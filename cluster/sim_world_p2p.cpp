// The simulated cluster's point-to-point messages (send, receive, matched exchanges) and
// one-sided windows (lock, get, put): SimWorld's members for them; see sim_world.hpp.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <limits>

#include "cluster/sim_world.hpp"
#include "core/errors.hpp"

namespace dsgd {

void SimWorld::send(int rank, int peer, const double* data, size_t count) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (failed_) throw SimPeerFailed();
  Message m;
  m.payload.assign(data, data + count);
  m.arrival = worker(rank).clock;
  mailbox_[{rank, peer}].push_back(std::move(m));
  const size_t p = static_cast<size_t>(peer);
  if (workers_[p].state == State::state_blocked && workers_[p].waiting_peer == rank) {
    workers_[p].waiting_peer = -1;
    make_ready(peer);
  }
}

void SimWorld::recv(int rank, int peer, double* data, size_t count) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (failed_) throw SimPeerFailed();
  auto& queue = mailbox_[{peer, rank}];
  if (queue.empty()) {
    worker(rank).waiting_peer = peer;
    block(lock, rank, "recv");
  }
  worker(rank).waiting_peer = -1;
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
                        const std::vector<int>& group_of, int i, int j, double bytes, CollKind kind) {
  if (i == j) return 0.0;
  double t = 0.0;
  if (network) {
    const bool same_group = group_of.empty() || group_of[static_cast<size_t>(i)] == group_of[static_cast<size_t>(j)];
    t = network_message_time(*network, kind, !same_group, bytes);
  }
  if (native) t = std::max(t, network_message_time(*native, kind, false, bytes));
  return t;
}

double sim_collective_time(const std::optional<NetworkModel>& network, const std::optional<NetworkModel>& native,
                           CollKind kind, CollAlgo algo, double bytes, int n) {
  double t = network ? network_collective_time(*network, kind, algo, bytes, n) : 0.0;
  if (native) t = std::max(t, network_collective_time(*native, kind, CollAlgo::algo_ring, bytes, n));
  return t;
}

double SimWorld::message_time(int i, int j, double bytes, CollKind kind) const {
  return sim_message_time(opt_.network, opt_.native, opt_.group_of, i, j, bytes, kind);
}

// A get or put of `bytes`: one message to another worker's window; on the worker's own
// window a copy in its memory, the model pass pro rata (as a real window in shared or
// registered memory copies; 0 without a measured pass).
double SimWorld::access_time(int rank, int target, double bytes) const {
  return rank == target ? opt_.cost.pass_s(bytes) : message_time(rank, target, bytes, CollKind::coll_onesided);
}

// Called with mutex_ held: delivers a message into a posted receive of worker dst.
void SimWorld::match(int src, int dst, const P2pMessage& m, const PostedRecv& p) {
  if (m.payload.size() > p.count) {
    failed_ = true;
    failure_ = fmt::format("worker {} sent {} floats to worker {}, whose receive has room for {}", src,
                           m.payload.size(), dst, p.count);
    wake_all();
    throw SimPeerFailed();
  }
  if (!m.payload.empty())
    std::memcpy(p.recv, m.payload.data(), m.payload.size() * sizeof(float));  // memcpy of null is UB
  const size_t d = static_cast<size_t>(dst);
  Exchange& ex = workers_[d].exchanges[static_cast<size_t>(p.exchange)];
  ex.completion = std::max(ex.completion, m.arrival);
  if (--ex.pending == 0 && workers_[d].state == State::state_blocked && workers_[d].waiting_exchange == p.exchange) {
    workers_[d].waiting_exchange = -1;
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
  std::vector<Exchange>& mine = workers_[r].exchanges;
  size_t id = 0;
  while (id < mine.size() && mine[id].used) ++id;
  if (id == mine.size()) mine.emplace_back();
  Exchange& ex = mine[id];
  const double t = workers_[r].clock;
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
  Exchange& ex2 = workers_[r].exchanges[id];  // (match() does not resize this worker's table)
  ex2.completion = std::max(ex2.completion, t + busy);
  return static_cast<int64_t>(id);
}

void SimWorld::exchange_wait(int rank, int64_t id) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (failed_) throw SimPeerFailed();
  const size_t r = static_cast<size_t>(rank);
  if (workers_[r].exchanges[static_cast<size_t>(id)].pending > 0) {
    workers_[r].waiting_exchange = id;
    block(lock, rank, "exchange");  // the last match sets the clock and makes this worker ready
  }
  Exchange& ex = workers_[r].exchanges[static_cast<size_t>(id)];
  hold_until(rank, ex.completion);
  ex.used = false;
}

bool SimWorld::exchange_test(int rank, int64_t id) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (failed_) throw SimPeerFailed();
  yield(lock, rank);  // every other worker first catches up to this one's virtual time
  const size_t r = static_cast<size_t>(rank);
  Exchange& ex = workers_[r].exchanges[static_cast<size_t>(id)];
  if (ex.pending > 0 || ex.completion > workers_[r].clock) return false;
  ex.used = false;
  return true;
}

SimWorld::Window& SimWorld::window_of(int rank, int target, const char* what) {
  if (target < 0 || target >= n_ || !worker(target).window.created) {
    const std::string why =
        target < 0 || target >= n_
            ? fmt::format("{} of worker {} outside 0..{}", what, target, n_ - 1)
            : fmt::format("{} of worker {}, which has no window (window_create first)", what, target);
    failed_ = true;
    failure_ = why;
    wake_all();
    DSGD_THROW(Error, "this is a bug in the algorithm: create the window on every worker first", "worker {}: {}", rank,
               why);
  }
  return worker(target).window;
}

void SimWorld::window_create(int rank, size_t count) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (failed_) throw SimPeerFailed();
  Window& w = worker(rank).window;
  if (w.created) {
    failed_ = true;
    failure_ = fmt::format("worker {} created a second window", rank);
    wake_all();
    DSGD_THROW(Error, "this is a bug: free the window first", "worker {}: window already created", rank);
  }
  w.data.assign(count, 0.0f);
  w.version = 0;
  w.holder = -1;
  w.free_at = 0;
  w.waiters.clear();
  w.pollers.clear();
  w.put_in_epoch = false;
  w.created = true;
}

void SimWorld::window_free(int rank) {
  std::lock_guard<std::mutex> lock(mutex_);
  Window& w = worker(rank).window;
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
  worker(rank).blocked_detail = target;
  block(lock, rank, "window_lock");  // the holder's unlock hands the lock over and sets the clock
  worker(rank).blocked_detail = -1;
}

void SimWorld::window_unlock(int rank, int target) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (failed_) throw SimPeerFailed();
  Window& w = window_of(rank, target, "window_unlock");
  if (w.holder != rank) {
    lock.unlock();
    fail_and_throw(rank, fmt::format("window_unlock of worker {} without holding its lock", target));
  }
  w.free_at = worker(rank).clock;
  w.holder = -1;
  if (w.put_in_epoch) {
    for (const int poller : w.pollers) {
      worker(poller).blocked_detail = -1;
      hold_until(poller, w.free_at);
      make_ready(poller);
    }
    w.pollers.clear();
    w.put_in_epoch = false;
  }
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
  advance(rank, access_time(rank, target, static_cast<double>(count) * sizeof(float)));
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
  w.put_in_epoch = true;
  advance(rank, access_time(rank, target, static_cast<double>(count) * sizeof(float)));
}

void SimWorld::window_poll_wait(int rank, int target, double polled_at) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (failed_) throw SimPeerFailed();
  if (worker(rank).clock > polled_at) return;
  Window& w = window_of(rank, target, "window_poll");
  w.pollers.push_back(rank);
  worker(rank).blocked_detail = target;
  block(lock, rank, "window_poll, waiting for a put to the window");  // an epoch with a put wakes it
}

}  // namespace dsgd
