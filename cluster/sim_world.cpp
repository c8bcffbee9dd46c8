// The simulated cluster's scheduler and its collectives (SimWorld); see sim_world.hpp. Its
// point-to-point messages and windows are in sim_world_p2p.cpp, the per-worker
// Communicator in sim_communicator.cpp.
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
  workers_ = std::vector<Worker>(n);
  for (int r = 0; r < n_; ++r) worker(r).comm = std::make_unique<SimCommunicator>(*this, r);
  if (!opt_.group_of.empty() && opt_.group_of.size() != n)
    DSGD_THROW(Error, "this is a bug: pass the topology's group_of", "sim: group_of has {} entries for {} workers",
               opt_.group_of.size(), n);
}

SimWorld::~SimWorld() = default;

void SimWorld::make_ready(int rank) {
  worker(rank).state = State::state_ready;
  ready_.insert({worker(rank).clock, rank});
}

std::string SimWorld::blocked_list() const {
  std::string out;
  int shown = 0;
  for (int r = 0; r < n_ && shown < 8; ++r) {
    const size_t ri = static_cast<size_t>(r);
    if (workers_[ri].state != State::state_blocked) continue;
    out += fmt::format("{}worker {} in {}", shown ? ", " : "", r, workers_[ri].blocked_in);
    if (workers_[ri].waiting_peer >= 0) out += fmt::format(" from worker {}", workers_[ri].waiting_peer);
    if (workers_[ri].waiting_exchange >= 0) {
      // The sources whose messages this exchange still waits for.
      std::vector<int> sources;
      for (const auto& [key, queue] : p2p_posted_)
        if (key % n_ == r)
          for (const PostedRecv& p : queue)
            if (p.exchange == workers_[ri].waiting_exchange) sources.push_back(static_cast<int>(key / n_));
      std::sort(sources.begin(), sources.end());
      out += fmt::format(" waiting for a message from worker(s) {}", fmt::join(sources, ", "));
    }
    if (workers_[ri].blocked_detail >= 0) {
      const Window& w = workers_[static_cast<size_t>(workers_[ri].blocked_detail)].window;
      out += fmt::format(" of worker {}", workers_[ri].blocked_detail);
      if (w.holder >= 0) out += fmt::format(" (held by worker {})", w.holder);
    }
    ++shown;
  }
  return out;
}

void SimWorld::wake_all() {
  for (Worker& w : workers_) w.cv.notify_all();
}

void SimWorld::pass_baton() {
  if (!ready_.empty()) {
    owner_ = ready_.begin()->second;
    ready_.erase(ready_.begin());
    worker(owner_).cv.notify_one();
    return;
  }
  owner_ = -1;
  const bool anyone_blocked =
      std::any_of(workers_.begin(), workers_.end(), [](const Worker& w) { return w.state == State::state_blocked; });
  if (anyone_blocked && !failed_) {
    failed_ = true;
    failure_ =
        fmt::format("deadlock in the simulated cluster: every unfinished worker is blocked ({})", blocked_list());
    wake_all();
  }
}

void SimWorld::wait_for_baton(std::unique_lock<std::mutex>& lock, int rank) {
  worker(rank).cv.wait(lock, [&] { return owner_ == rank || failed_; });
  if (failed_) throw SimPeerFailed();
}

void SimWorld::yield(std::unique_lock<std::mutex>& lock, int rank) {
  ready_.insert({worker(rank).clock, rank});
  pass_baton();
  wait_for_baton(lock, rank);
}

void SimWorld::block(std::unique_lock<std::mutex>& lock, int rank, const char* where) {
  worker(rank).state = State::state_blocked;
  worker(rank).blocked_in = where;
  pass_baton();
  wait_for_baton(lock, rank);
}

void SimWorld::hold_until(int rank, double deadline) {
  double& t = worker(rank).clock;
  if (deadline > t) t = deadline;
}

void SimWorld::fail_and_throw(int rank, const std::string& why) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!failed_) {
      failed_ = true;
      failure_ = why;
    }
    wake_all();
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
        wake_all();
      }
      worker(r).state = State::state_done;
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
  const int64_t seq = workers_[r].seq++;
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
  c.max_arrival = std::max(c.max_arrival, workers_[r].clock);
  if (++c.arrived == n_) {
    complete(c);
    for (int w = 0; w < n_; ++w) {
      const size_t wi = static_cast<size_t>(w);
      if (workers_[wi].state == State::state_blocked && workers_[wi].waiting_seq == seq) {
        workers_[wi].waiting_seq = -1;
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
    worker(rank).waiting_seq = seq;
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
  if (!it->second.complete || it->second.completion > worker(rank).clock) return false;
  if (++it->second.released == n_) collectives_.erase(it);
  return true;
}

}  // namespace dsgd
