// See dreamddp_schedule.hpp: the cost model, the depth-first search with pruning and the
// filling of idle link time.
#include "algorithms/dreamddp_schedule.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/errors.hpp"

namespace dsgd {

namespace {

// ready[l] = Σ_{k ≥ l} bwd[k]: when layer l's gradient is final, from the start of backward.
std::vector<double> ready_times(const std::vector<double>& bwd_s) {
  std::vector<double> ready(bwd_s.size(), 0.0);
  double t = 0;
  for (size_t l = bwd_s.size(); l-- > 0;) {
    t += bwd_s[l];
    ready[l] = t;
  }
  return ready;
}

double exposed_of(double free, double backward) {
  return std::max(0.0, free - backward);
}

struct Search {
  Search(const std::vector<double>& comm_s, const std::vector<double>& ready_s) : comm(comm_s), ready(ready_s) {}
  const std::vector<double>& comm;
  const std::vector<double>& ready;
  double backward = 0;
  size_t slots = 1;
  int64_t max_nodes = 0;
  std::vector<size_t> order;   // layers in backward order
  std::vector<double> free;    // per slot: when its link is free
  std::vector<size_t> assign;  // per layer: slot
  std::vector<size_t> best_assign;
  double best = 0;
  double tie = 0;  // improvements of at most this many seconds are ties (float rounding)
  int64_t nodes = 0;
  bool cut = false;

  double partial() const {
    double s = 0;
    for (double f : free) s += exposed_of(f, backward);
    return s;
  }

  // Lower bound on the final cost of the branch: the partial cost, plus for the unplaced
  // layer that is worst off the least increase it causes in any slot h (a slot's `free` only
  // grows, so that slot's exposed time will be at least max(free_h, ready_l) + comm_l − B).
  double lower_bound(size_t p) const {
    double cur_sum = 0;
    for (double f : free) cur_sum += exposed_of(f, backward);
    double worst = 0;
    for (size_t q = p; q < order.size(); ++q) {
      const size_t l = order[q];
      double least = INFINITY;
      for (size_t h = 0; h < slots && least > 0; ++h) {
        const double cur = exposed_of(free[h], backward);
        least = std::min(least, std::max(0.0, exposed_of(std::max(free[h], ready[l]) + comm[l], backward) - cur));
      }
      worst = std::max(worst, least);
    }
    return cur_sum + worst;
  }

  void dfs(size_t p) {
    if (cut) return;
    if (++nodes > max_nodes) {
      cut = true;
      return;
    }
    if (p < order.size() && lower_bound(p) >= best - tie) return;
    if (p == order.size()) {
      const double s = partial();
      if (s < best - tie) {
        best = s;
        best_assign = assign;
      }
      return;
    }
    const size_t l = order[p];
    // Children in order of the partial cost they lead to (good schedules first).
    struct Child {
      double cost;
      size_t slot;
    };
    Child children[64];
    size_t nc = 0;
    std::vector<Child> many;  // only when H > 64
    const bool small = slots <= 64;
    if (!small) many.reserve(slots);
    for (size_t h = 0; h < slots; ++h) {
      // Symmetry: slots whose link is free by the time this layer is ready behave the same
      // from here on (later layers are ready even later, and their exposed time is 0), and
      // so do slots with the same `free`; only the first of each class is tried.
      const double key = std::max(free[h], ready[l]);
      bool duplicate = false;
      for (size_t g = 0; g < h && !duplicate; ++g) duplicate = std::max(free[g], ready[l]) == key;
      if (duplicate) continue;
      const double old_free = free[h];
      free[h] = key + comm[l];
      const Child c{partial(), h};
      free[h] = old_free;
      if (c.cost >= best - tie) continue;  // bound: adding layers never lowers a slot's exposed time
      if (small)
        children[nc++] = c;
      else
        many.push_back(c);
    }
    Child* begin = small ? children : many.data();
    Child* end = small ? children + nc : many.data() + many.size();
    std::stable_sort(begin, end, [](const Child& a, const Child& b) { return a.cost < b.cost; });
    for (Child* c = begin; c != end; ++c) {
      if (c->cost >= best - tie) break;  // best may have improved in an earlier child
      const double old_free = free[c->slot];
      free[c->slot] = std::max(old_free, ready[l]) + comm[l];
      assign[l] = c->slot;
      dfs(p + 1);
      free[c->slot] = old_free;
      if (cut) return;
    }
  }
};

void check_inputs(const std::vector<double>& bwd_s, const std::vector<double>& comm_s, int64_t period) {
  if (period < 1)
    DSGD_THROW(InputError, "pass --period 1 or more", "dreamddp: the period H must be at least 1 (got {})", period);
  if (bwd_s.empty()) DSGD_THROW(InputError, "a model needs at least one layer", "dreamddp: no layers to schedule");
  if (bwd_s.size() != comm_s.size())
    DSGD_THROW(InputError, "pass one compute and one communication time per layer",
               "dreamddp: {} compute times but {} communication times", bwd_s.size(), comm_s.size());
  for (size_t l = 0; l < bwd_s.size(); ++l) {
    if (!(bwd_s[l] >= 0) || !std::isfinite(bwd_s[l]) || !(comm_s[l] >= 0) || !std::isfinite(comm_s[l]))
      DSGD_THROW(InputError, "per-layer times must be finite and >= 0",
                 "dreamddp: layer {} has compute {} s and communication {} s", l, bwd_s[l], comm_s[l]);
  }
}

}  // namespace

double dreamddp_slot_exposed(const std::vector<double>& bwd_s, const std::vector<double>& comm_s,
                             const std::vector<size_t>& layers) {
  const std::vector<double> ready = ready_times(bwd_s);
  std::vector<size_t> sorted = layers;
  std::sort(sorted.begin(), sorted.end(), std::greater<>());
  double free = 0;
  for (size_t l : sorted) free = std::max(free, ready[l]) + comm_s[l];
  return exposed_of(free, ready.empty() ? 0.0 : ready[0]);
}

namespace {

// Incumbent: greedy, each layer (backward order) to the slot where the partial cost is
// lowest; ties to the slot with the least communication so far, then the fewest layers
// (so that a free network still spreads the layers over the period). Sets s.best_assign and
// s.best.
void greedy_incumbent(Search& s, const std::vector<double>& comm_s, const std::vector<double>& ready) {
  const size_t nl = comm_s.size();
  const size_t slots = s.slots;
  std::vector<double> free(slots, 0.0), comm_sum(slots, 0.0);
  std::vector<size_t> layers(slots, 0);
  std::vector<size_t> assign(nl, 0);
  for (size_t l : s.order) {
    size_t pick = 0;
    double pick_cost = 0;
    for (size_t h = 0; h < slots; ++h) {
      const double nf = std::max(free[h], ready[l]) + comm_s[l];
      const double cost = exposed_of(nf, s.backward) - exposed_of(free[h], s.backward);
      const bool better = h == 0 || cost < pick_cost - s.tie ||
                          (cost <= pick_cost + s.tie && (comm_sum[h] < comm_sum[pick] ||
                                                         (comm_sum[h] == comm_sum[pick] && layers[h] < layers[pick])));
      if (better) {
        pick = h;
        pick_cost = cost;
      }
    }
    free[pick] = std::max(free[pick], ready[l]) + comm_s[l];
    comm_sum[pick] += comm_s[l];
    layers[pick] += 1;
    assign[l] = pick;
  }
  s.best_assign = assign;
  s.best = 0;
  for (double f : free) s.best += exposed_of(f, s.backward);
}

// Fill idle link time with extra syncs that cost nothing in the model (fill: not for the
// pure schedule); sets each slot's exposed and communication time.
void extra_syncs_fill(DreamDdpSchedule& out, const std::vector<size_t>& order, const std::vector<double>& bwd_s,
                      const std::vector<double>& comm_s, bool fill) {
  const size_t slots = out.slots.size();
  for (size_t h = 0; h < slots; ++h) {
    std::vector<size_t> all = out.slots[h];
    double exposed = dreamddp_slot_exposed(bwd_s, comm_s, all);
    for (size_t l : order) {
      if (!fill) break;
      if (comm_s[l] <= 0) continue;  // no cost information: an extra sync would be a guess
      if (std::find(out.slots[h].begin(), out.slots[h].end(), l) != out.slots[h].end()) continue;
      all.push_back(l);
      const double with = dreamddp_slot_exposed(bwd_s, comm_s, all);
      if (with <= exposed) {
        out.extra[h].push_back(l);
        exposed = with;
      } else {
        all.pop_back();
      }
    }
    out.exposed_s[h] = exposed;
    for (size_t l : all) out.comm_s[h] += comm_s[l];
  }
}

}  // namespace

DreamDdpSchedule dreamddp_schedule_search(const std::vector<double>& bwd_s, const std::vector<double>& comm_s,
                                          int64_t period, int64_t max_nodes, bool fill) {
  check_inputs(bwd_s, comm_s, period);
  const size_t nl = bwd_s.size();
  const size_t slots = static_cast<size_t>(period);
  const std::vector<double> ready = ready_times(bwd_s);
  Search s(comm_s, ready);
  s.backward = ready[0];
  s.slots = slots;
  s.max_nodes = std::max<int64_t>(1, max_nodes);
  s.free.assign(slots, 0.0);
  s.assign.assign(nl, 0);
  for (size_t l = nl; l-- > 0;) s.order.push_back(l);
  // Ties: assignments whose costs are equal in real numbers (the SVM's two layers together
  // in one slot or apart, on a link where nothing hides) differ by float rounding of times
  // that are measured anew each run; counting differences up to 1e-12 of the step's scale as
  // ties keeps the first schedule (greedy, then depth-first order), the same in every run.
  s.tie = 1e-12 * (s.backward + std::accumulate(comm_s.begin(), comm_s.end(), 0.0));

  greedy_incumbent(s, comm_s, ready);
  if (s.best > 0) s.dfs(0);

  DreamDdpSchedule out;
  out.period = period;
  out.slots.assign(slots, {});
  out.extra.assign(slots, {});
  out.comm_s.assign(slots, 0.0);
  out.exposed_s.assign(slots, 0.0);
  out.backward_s = s.backward;
  out.optimal = !s.cut;
  out.nodes = s.nodes;
  for (size_t l : s.order) out.slots[s.best_assign[l]].push_back(l);
  for (size_t h = 0; h < slots; ++h) out.exposed_primary_s += dreamddp_slot_exposed(bwd_s, comm_s, out.slots[h]);

  extra_syncs_fill(out, s.order, bwd_s, comm_s, fill);
  return out;
}

}  // namespace dsgd
