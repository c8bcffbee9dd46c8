// See timing_rules.hpp.
#include "algorithms/timing_rules.hpp"

#include <algorithm>

#include "cluster/communicator.hpp"
#include "core/errors.hpp"

namespace dsgd {

namespace {

// An averaging collective's divide of `bytes` by n on each worker (Communicator::divide_by_size,
// a no-op on one worker), charged by the SimCommunicator as the model pass pro rata.
double timing_divide_s(const SimTimingPlan& plan, double bytes) {
  return plan.workers > 1 ? plan.cost.pass_s(bytes) : 0.0;
}

}  // namespace

void timing_step_allreduce(const SimTimingPlan& plan, int64_t step, std::vector<double>& clock, SimStepTiming* rows,
                           bool communicate, bool after_update) {
  const SimComputeCost& c = plan.cost;
  const SimTimingCompute k = sim_timing_compute(c);
  for (size_t i = 0; i < clock.size(); ++i) {
    SimStepTiming& r = rows[i];
    sim_timing_fill_compute(plan, k, r);
    r.injected = sim_timing_delay(plan, static_cast<int>(i), step, k.fwd_bwd, rows[i]);
    // Arrival at the step's collective: after backward, or after the update.
    r.start = clock[i] + k.compute_before + r.injected + (after_update ? c.opt_s : 0.0);
  }
  timing_allreduce_complete(plan, clock, rows, communicate, after_update);
}

void timing_allreduce_complete(const SimTimingPlan& plan, std::vector<double>& clock, SimStepTiming* rows,
                               bool communicate, bool after_update) {
  const size_t n = clock.size();
  const double opt = plan.cost.opt_s;
  double latest = -1.0;
  for (size_t i = 0; i < n; ++i) latest = std::max(latest, rows[i].start);
  const double model = communicate ? sim_collective_time(plan.network, plan.native, CollKind::coll_allreduce,
                                                         plan.net_algo, plan.param_bytes, plan.workers)
                                   : 0.0;
  // Each worker divides the sum by n (Communicator::divide_by_size) before the call returns.
  const double done = latest + model + (communicate ? timing_divide_s(plan, plan.param_bytes) : 0.0);
  const double bytes = communicate ? ring_allreduce_bytes_sent(plan.param_bytes, plan.workers) : 0.0;
  for (size_t i = 0; i < n; ++i) {
    SimStepTiming& r = rows[i];
    const double arrive = r.start;
    double end, wait = 0, comm = 0;
    if (communicate) {
      wait = latest - arrive;
      comm = done - latest;
      end = after_update ? done : done + opt;
    } else {
      end = after_update ? arrive : arrive + opt;
    }
    r.start = clock[i];
    r.step = end - clock[i];
    r.comm = comm;
    r.wait = wait;
    r.overlap = 0;
    r.bytes = bytes;
    clock[i] = end;
  }
}

TimingBroadcasts timing_broadcasts_before(const SimTimingPlan& plan, const std::vector<double>& bytes,
                                          std::vector<double>& clock) {
  TimingBroadcasts b;
  b.arrival = *std::max_element(clock.begin(), clock.end());
  if (plan.workers > 1)
    for (const double s : bytes) {
      b.comm +=
          sim_collective_time(plan.network, plan.native, CollKind::coll_broadcast, plan.net_algo, s, plan.workers);
      b.sent += s * (plan.workers - 1) / plan.workers;
    }
  std::fill(clock.begin(), clock.end(), b.arrival + b.comm);
  return b;
}

void timing_step_gossip(const SimTimingPlan& plan, SimTimingState& /*state*/, int64_t step, std::vector<double>& clock,
                        SimStepTiming* rows) {
  const size_t n = clock.size();
  if (n > 1 && plan.neighbors.size() != n)
    DSGD_THROW(Error, "this is a bug: pass the topology's neighbours", "timing-only gossip without neighbours");
  const SimTimingCompute k = sim_timing_compute(plan.cost);
  const double pass = plan.cost.model_pass_s;
  std::vector<double> arrive(n), depart(n);
  for (size_t i = 0; i < n; ++i) {
    const double d = sim_timing_delay(plan, static_cast<int>(i), step, k.fwd_bwd, rows[i]);
    rows[i].injected = d;
    arrive[i] = clock[i] + k.compute_before + d + plan.cost.opt_s + pass;  // then the copy to send
    depart[i] = arrive[i];
  }
  // The neighbour exchange, with the same arithmetic as SimWorld::exchange_start.
  if (n > 1) {
    for (size_t i = 0; i < n; ++i) {
      const int src = static_cast<int>(i);
      double busy = 0;
      for (int j : plan.neighbors[i]) {
        const double msg = sim_message_time(plan.network, plan.native, plan.group_of, src, j, plan.param_bytes);
        const double alpha = sim_message_time(plan.network, plan.native, plan.group_of, src, j, 0.0);
        busy += msg - alpha;
        double& dj = depart[static_cast<size_t>(j)];
        dj = std::max(dj, arrive[i] + alpha + busy);
      }
      depart[i] = std::max(depart[i], arrive[i] + busy);
    }
  }
  const double latest = *std::max_element(arrive.begin(), arrive.end());
  for (size_t i = 0; i < n; ++i) {
    SimStepTiming& r = rows[i];
    const double total = depart[i] - arrive[i];
    const double wait = depart[i] <= latest ? total : std::max(0.0, latest - arrive[i]);
    // The mix after the exchange: the self term, then one pass per neighbour's model.
    const double mix = pass * double(1 + (n > 1 ? plan.neighbors[i].size() : 0));
    r.start = clock[i];
    r.step = depart[i] + mix - clock[i];
    sim_timing_fill_compute(plan, k, r);
    r.comm = total - wait;
    r.wait = wait;
    r.bytes = n > 1 ? plan.param_bytes * double(plan.neighbors[i].size()) : 0.0;
    clock[i] = depart[i] + mix;
  }
}

namespace {

// The recorder's split of one blocking wait (docs/metrics.md): arrival W_i, departure D_i,
// A = max_j W_j.
void timing_split(const std::vector<double>& w, const std::vector<double>& d, SimStepTiming* rows) {
  const double a = *std::max_element(w.begin(), w.end());
  for (size_t i = 0; i < w.size(); ++i) {
    if (d[i] <= a) {
      rows[i].wait += d[i] - w[i];
    } else {
      rows[i].wait += a - w[i];
      rows[i].comm += d[i] - a;
    }
  }
}

// Fills the step's row of every worker from its start and end (compute fields from the plan).
void timing_close(const SimTimingPlan& plan, const SimTimingCompute& k, std::vector<double>& clock,
                  const std::vector<double>& end, SimStepTiming* rows) {
  for (size_t i = 0; i < clock.size(); ++i) {
    rows[i].start = clock[i];
    rows[i].step = end[i] - clock[i];
    sim_timing_fill_compute(plan, k, rows[i]);
    clock[i] = end[i];
  }
}

// Hook times relative to the step's start: layer l's hook after data + fwd + Σ_{m ≥ l} bwd_m
// (hooks fire as each layer's backward cost is charged).
std::vector<double> timing_hooks(const SimComputeCost& c) {
  std::vector<double> hook(c.bwd_layer_s.size(), 0.0);
  double at = c.data_s + c.fwd_s;
  for (size_t l = hook.size(); l-- > 0;) {
    at += c.bwd_layer_s[l];
    hook[l] = at;
  }
  return hook;
}

// The first hook of a worker whose step started at `start`, from layer `from` on in backward
// order, at or after `done` (a request launched at hook `from` that completes at `done` is seen
// there); `none` when no hook is.
double timing_first_hook(const std::vector<double>& hook, size_t from, double start, double done, double none) {
  for (size_t l = from + 1; l-- > 0;)
    if (start + hook[l] >= done) return start + hook[l];
  return none;
}

// Worker i's overlap: the union of [launch_b, seen_b] over requests launched in time order
// (launch_b = start + hook[low[b]], seen_b = seen[b · n + i]).
double timing_overlap_union(const std::vector<double>& hook, const std::vector<size_t>& low, double start,
                            const std::vector<double>& seen, size_t n, size_t i) {
  double covered = 0, reach = -1e300;
  for (size_t b = 0; b < low.size(); ++b) {
    const double lo = std::max(start + hook[low[b]], reach), hi = seen[b * n + i];
    if (hi > lo) covered += hi - lo;
    reach = std::max(reach, hi);
  }
  return covered;
}

}  // namespace

void timing_step_sharded(const SimTimingPlan& plan, SimTimingState& /*state*/, int64_t step, std::vector<double>& clock,
                         SimStepTiming* rows) {
  const size_t n = clock.size();
  const SimTimingCompute k = sim_timing_compute(plan.cost);
  const double rs = sim_collective_time(plan.network, plan.native, CollKind::coll_reduce_scatter, plan.net_algo,
                                        plan.param_bytes, plan.workers);
  const double ag = sim_collective_time(plan.network, plan.native, CollKind::coll_allgather, plan.net_algo,
                                        plan.param_bytes, plan.workers);
  std::vector<double> arrive(n), end(n);
  for (size_t i = 0; i < n; ++i) {
    rows[i] = SimStepTiming{};
    rows[i].injected = sim_timing_delay(plan, static_cast<int>(i), step, k.fwd_bwd, rows[i]);
    arrive[i] = clock[i] + k.compute_before + rows[i].injected;
  }
  const double a = *std::max_element(arrive.begin(), arrive.end());
  const double bytes = 2.0 * ring_scatter_gather_bytes_sent(plan.param_bytes, plan.workers);
  const size_t count = static_cast<size_t>(plan.param_bytes / sizeof(float));
  for (size_t i = 0; i < n; ++i) {
    // The reduce-scatter divides worker i's shard by n before it returns.
    const int r = static_cast<int>(i);
    const double shard = double(Communicator::shard_begin(count, plan.workers, r + 1) -
                                Communicator::shard_begin(count, plan.workers, r)) *
                         sizeof(float);
    const double divide = timing_divide_s(plan, shard);
    rows[i].wait = a - arrive[i];
    rows[i].comm = rs + divide + ag;
    rows[i].bytes = bytes;
    end[i] = a + rs + divide + plan.cost.opt_s + ag;
  }
  timing_close(plan, k, clock, end, rows);
}

void timing_step_background(const SimTimingPlan& plan, SimTimingState& state, int64_t step, std::vector<double>& clock,
                            SimStepTiming* rows, int64_t delay, bool launch_at_last) {
  const size_t n = clock.size();
  SimTimingState::Background& bg = state.background;
  if (!bg.started) {
    bg.started = true;
    bg.launch.assign(n, 0.0);
    bg.seen.assign(n, 0.0);
  }
  const SimComputeCost& c = plan.cost;
  const SimTimingCompute k = sim_timing_compute(c);
  const double model = sim_collective_time(plan.network, plan.native, CollKind::coll_allreduce, plan.net_algo,
                                           plan.param_bytes, plan.workers);
  const double bytes = ring_allreduce_bytes_sent(plan.param_bytes, plan.workers);
  const double divide = timing_divide_s(plan, plan.param_bytes);  // the wait's divide by n
  auto poll = [&](size_t i, double at) {                          // a progress() call of worker i at time `at`
    if (bg.wait_step >= 0 && bg.seen[i] == 0 && at >= bg.done) bg.seen[i] = at;
  };
  std::vector<double> t(n), w(n);
  for (size_t i = 0; i < n; ++i) {
    rows[i] = SimStepTiming{};
    rows[i].injected = sim_timing_delay(plan, static_cast<int>(i), step, k.fwd_bwd, rows[i]);
    // The layer hooks poll, in backward order, as each layer's cost is charged.
    double at = clock[i] + c.data_s + c.fwd_s;
    for (size_t l = c.bwd_layer_s.size(); l-- > 0;) {
      at += c.bwd_layer_s[l];
      poll(i, at);
    }
    t[i] = clock[i] + k.compute_before + rows[i].injected + c.opt_s;  // after the update
  }
  auto wait_all = [&] {
    w = t;
    for (size_t i = 0; i < n; ++i) {
      const double seen = bg.seen[i];
      const double until = seen > 0 && seen < w[i] ? seen : w[i];
      rows[i].overlap += std::max(0.0, until - bg.launch[i]);
      rows[i].bytes += bytes;
      t[i] = std::max(w[i], bg.done) + divide;
    }
    timing_split(w, t, rows);
    bg.wait_step = -1;
  };
  const bool last = step + 1 == plan.steps;
  const bool sync = (step + 1) % std::max<int64_t>(1, plan.period) == 0;
  if (bg.wait_step >= 0 && step == bg.wait_step) wait_all();
  if (sync && (launch_at_last || !last)) {
    const double launch = *std::max_element(t.begin(), t.end());
    for (size_t i = 0; i < n; ++i) {
      bg.launch[i] = t[i];
      bg.seen[i] = 0;
    }
    const double start = model > 0 ? std::max(launch, bg.link_free) : launch;
    bg.done = start + model;
    if (model > 0) bg.link_free = bg.done;
    bg.wait_step = step + delay;
    if (delay == 0) wait_all();
  } else if (!sync) {
    for (size_t i = 0; i < n; ++i) poll(i, t[i]);  // after_update's poll
  }
  if (bg.wait_step >= 0 && last) wait_all();
  timing_close(plan, k, clock, t, rows);
}

void timing_step_buckets(const SimTimingPlan& plan, SimTimingState& state, int64_t step, std::vector<double>& clock,
                         SimStepTiming* rows) {
  const size_t n = clock.size();
  const SimComputeCost& c = plan.cost;
  const SimTimingCompute k = sim_timing_compute(c);
  const size_t layers = plan.layer_counts.size();
  if (c.bwd_layer_s.size() != layers)
    DSGD_THROW(Error, "this is a bug: the profile's layers and the plan's differ", "{} layer costs for {} layers",
               c.bwd_layer_s.size(), layers);
  // Buckets in backward order (ssgd.cpp): [first layer index, last layer index] and floats;
  // the launch hook of bucket b is its lowest layer (the last to become ready).
  struct Bucket {
    size_t low = 0, count = 0;
  };
  std::vector<Bucket> buckets;
  std::vector<size_t> offset(layers + 1, 0);
  for (size_t l = 0; l < layers; ++l) offset[l + 1] = offset[l] + plan.layer_counts[l];
  for (size_t l = layers; l-- > 0;) {
    const bool full =
        !buckets.empty() && double(buckets.back().count) * sizeof(float) >=
                                timing_bucket_cap(buckets.size() - 1, plan.bucket_bytes, plan.first_bucket_bytes);
    if (buckets.empty() || full) buckets.push_back(Bucket{l, 0});
    buckets.back().low = l;
    buckets.back().count += plan.layer_counts[l];
  }
  const std::vector<double> hook = timing_hooks(c);
  std::vector<double> e(n), t(n), w(n);
  for (size_t i = 0; i < n; ++i) {
    rows[i] = SimStepTiming{};
    rows[i].injected = sim_timing_delay(plan, static_cast<int>(i), step, k.fwd_bwd, rows[i]);
    e[i] = clock[i] + k.compute_before + rows[i].injected;
    t[i] = e[i];
  }
  double link_free = state.link_free;
  std::vector<double> seen_end(n * buckets.size(), 0.0);  // per (bucket, worker): min(E, first hook ≥ C)
  for (size_t b = 0; b < buckets.size(); ++b) {
    const size_t low = buckets[b].low;
    double launch = 0;
    for (size_t i = 0; i < n; ++i) launch = std::max(launch, clock[i] + hook[low]);
    const double model = sim_collective_time(plan.network, plan.native, CollKind::coll_allreduce, plan.net_algo,
                                             double(buckets[b].count) * sizeof(float), plan.workers);
    const double done = (model > 0 ? std::max(launch, link_free) : launch) + model;
    if (model > 0) link_free = done;
    for (size_t i = 0; i < n; ++i)
      seen_end[b * n + i] = std::min(e[i], timing_first_hook(hook, low, clock[i], done, e[i]));
    w = t;
    const double divide = timing_divide_s(plan, double(buckets[b].count) * sizeof(float));  // at the wait
    for (size_t i = 0; i < n; ++i) t[i] = std::max(w[i], done) + divide;
    timing_split(w, t, rows);
  }
  state.link_free = link_free;
  const double bytes = ring_allreduce_bytes_sent(plan.param_bytes, plan.workers);
  std::vector<size_t> lows;
  lows.reserve(buckets.size());
  for (const Bucket& b : buckets) lows.push_back(b.low);
  for (size_t i = 0; i < n; ++i) {
    rows[i].overlap = timing_overlap_union(hook, lows, clock[i], seen_end, n, i);
    rows[i].bytes = bytes;
    t[i] += c.opt_s;
  }
  timing_close(plan, k, clock, t, rows);
}

void timing_step_layers(const SimTimingPlan& plan, SimTimingState& state, int64_t step, std::vector<double>& clock,
                        SimStepTiming* rows, const std::vector<uint8_t>& launch) {
  const size_t n = clock.size();
  const SimComputeCost& c = plan.cost;
  const SimTimingCompute k = sim_timing_compute(c);
  const size_t layers = plan.layer_counts.size();
  if (c.bwd_layer_s.size() != layers || launch.size() != layers)
    DSGD_THROW(Error, "this is a bug: the profile's layers, the plan's and the launch set differ",
               "{} layer costs and {} launch flags for {} layers", c.bwd_layer_s.size(), launch.size(), layers);
  const std::vector<double> hook = timing_hooks(c);
  std::vector<size_t> order;  // launch order: backward order
  for (size_t l = layers; l-- > 0;)
    if (launch[l]) order.push_back(l);
  std::vector<double> e(n), u(n), t(n), w(n);
  for (size_t i = 0; i < n; ++i) {
    rows[i] = SimStepTiming{};
    rows[i].injected = sim_timing_delay(plan, static_cast<int>(i), step, k.fwd_bwd, rows[i]);
    e[i] = clock[i] + k.compute_before + rows[i].injected;
    u[i] = e[i] + c.opt_s;
    t[i] = u[i];
  }
  double bytes = 0;
  std::vector<double> seen_end(n * order.size(), 0.0);  // per (request, worker): min(U, first poll ≥ C)
  for (size_t b = 0; b < order.size(); ++b) {
    const size_t l = order[b];
    const double size = double(plan.layer_counts[l]) * sizeof(float);
    double start = 0;
    for (size_t i = 0; i < n; ++i) start = std::max(start, clock[i] + hook[l]);
    const double model =
        sim_collective_time(plan.network, plan.native, CollKind::coll_allreduce, plan.net_algo, size, plan.workers);
    const double done = (model > 0 ? std::max(start, state.link_free) : start) + model;
    if (model > 0) state.link_free = done;
    for (size_t i = 0; i < n; ++i)  // a hook from the launch on, else the poll after backward, else U
      seen_end[b * n + i] = timing_first_hook(hook, l, clock[i], done, e[i] >= done ? e[i] : u[i]);
    w = t;
    const double divide = timing_divide_s(plan, size);  // at the wait
    for (size_t i = 0; i < n; ++i) t[i] = std::max(w[i], done) + divide;
    timing_split(w, t, rows);
    bytes += ring_allreduce_bytes_sent(size, plan.workers);
  }
  for (size_t i = 0; i < n; ++i) {
    rows[i].overlap = timing_overlap_union(hook, order, clock[i], seen_end, n, i);
    rows[i].bytes = bytes;
  }
  timing_close(plan, k, clock, t, rows);
}

}  // namespace dsgd
