// DreamDDP's layer→slot schedule (Tang et al. 2025, "DreamDDP: Accelerating Data Parallel
// Distributed LLM Training with Layer-wise Scheduled Partial Synchronization", §4): a pure
// function of the per-layer backward compute times, the per-layer all-reduce times and the
// period H. No I/O, no globals; the same inputs give the same schedule on every rank.
//
// Cost model of one step (one slot h of the period), layers 0..L−1, backward runs from
// layer L−1 down to 0:
//   ready_l  = Σ_{k ≥ l} bwd_k                       (layer l's gradient is final)
//   the layers of the slot are all-reduced one after another on one link, in backward
//   order, each starting when it is ready and the link is free:
//     start_l = max(ready_l, free);  free = start_l + comm_l
//   exposed_h = max(0, free − ready_0)                (communication not hidden by backward)
// The period's non-overlapped time is Σ_h exposed_h (compute is the same in every slot), and
// the search minimises it over all assignments of each layer to exactly one slot.
//
// Search: depth-first over the layers in backward order, each tried in every slot, with
// (1) branch and bound: a slot's `free` only grows as layers are added, so the partial sum
//     of exposed times is a lower bound; a branch at or above the best complete schedule is
//     cut (the best starts as the greedy earliest-finish schedule), and so is a branch whose
//     partial sum plus the least increase the worst-placed remaining layer must cause is;
// (2) symmetry: slots are interchangeable (the cost of a slot depends only on its layers),
//     so of several slots with the same link state only the first is tried;
// (3) a node budget: past it the best schedule found so far is returned with optimal=false.
// Costs within 1e-12 of (backward + Σ comm) count as equal (float rounding of real ties), so
// the first schedule found among equals is kept and the result does not flip between runs
// whose measured times differ by noise.
// Then idle link time is filled (the paper's extra synchronisation): in each slot, every
// layer not yet averaged in that slot, in backward order, is added as an extra all-reduce
// when that does not increase the slot's exposed time (unless fill is false).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace dsgd {

struct DreamDdpSchedule {
  int64_t period = 1;
  // slots[h]: the layers averaged at every step t with t mod H = h (each layer in exactly
  // one slot), in backward order (descending index).
  std::vector<std::vector<size_t>> slots;
  // extra[h]: layers averaged again at slot h to fill idle link time (never in slots[h]),
  // backward order.
  std::vector<std::vector<size_t>> extra;
  std::vector<double> comm_s;     // per slot: Σ comm of the layers averaged (slots + extra)
  std::vector<double> exposed_s;  // per slot: predicted communication not hidden by backward
  double backward_s = 0;          // Σ bwd (one step's backward)
  double exposed_primary_s = 0;   // Σ_h exposed of the primary assignment (what the search minimised)
  bool optimal = true;            // false when the node budget cut the search
  int64_t nodes = 0;              // search nodes visited
};

// Predicted exposed communication of one slot that all-reduces `layers` (any order; they
// run in backward order). bwd_s and comm_s have one entry per layer.
double dreamddp_slot_exposed(const std::vector<double>& bwd_s, const std::vector<double>& comm_s,
                             const std::vector<size_t>& layers);

// The schedule for period H (>= 1). bwd_s and comm_s: one non-negative entry per layer (at
// least one layer). Throws InputError on sizes that differ, negative or non-finite values, H < 1.
// fill = false: no extra syncs (every extra[h] empty; the pure once-per-period schedule).
DreamDdpSchedule dreamddp_schedule_search(const std::vector<double>& bwd_s, const std::vector<double>& comm_s,
                                          int64_t period, int64_t max_nodes = 2000000, bool fill = true);

}  // namespace dsgd
