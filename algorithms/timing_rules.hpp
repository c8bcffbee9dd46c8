// Timing-only step rules (cluster/sim_timing.hpp) shared by several variants' registry
// entries: the arithmetic of one blocking all-reduce of the model or gradient per step, and
// the neighbour exchange of gossip. Each rule reproduces what the threaded simulator's
// SimCommunicator does for the same calls (cluster/sim_world.hpp). Every averaging collective
// ends with each worker's divide of its result by n (p(S): the model pass pro rata to the S
// bytes divided, SimComputeCost::pass_s; 0 on one worker), inside the collective's comm.
#pragma once

#include <cstdint>
#include <vector>

#include "cluster/sim_timing.hpp"

namespace dsgd {

// One blocking all-reduce of |x|·4 bytes per step, or none:
//   arrive_i = start_i + data + fwd + bwd + δ_i (+ opt when after_update);
//   communicating: A = max_j arrive_j, T = A + model(all-reduce, |x|·4, n) + p(|x|·4), wait_i = A − arrive_i,
//                  comm_i = T − A, end_i = T (+ opt when the all-reduce precedes the update);
//   otherwise end_i = arrive_i (+ opt when not after_update).
void timing_step_allreduce(const SimTimingPlan& plan, int64_t step, std::vector<double>& clock, SimStepTiming* rows,
                           bool communicate, bool after_update);
// Its second half, for a rule with its own compute and arrivals (pdasgd's forward thread):
// rows[i] holds worker i's compute fields, and its arrival at the collective in `start`; fills
// the rest (start, step, wait, comm, overlap 0, bytes) as above and moves clock[i] to the end.
void timing_allreduce_complete(const SimTimingPlan& plan, std::vector<double>& clock, SimStepTiming* rows,
                               bool communicate, bool after_update);

// Gossip with the static topology's neighbours after the local update (dpsgd --dpsgd-delay 0):
// a_i = start_i + data + fwd + bwd + δ_i + opt + p (p: one model pass, the copy to send); the
// message to the k-th neighbour j arrives at a_i + α_ij + Σ_{m≤k} S/B_m; e_i = max(a_i + Σ_k S/B_k,
// arrivals at i); wait/comm split as the recorder does (docs/metrics.md): wait_i = min(e_i,
// max_j a_j) − a_i, comm_i = e_i − a_i − wait_i; the step ends after the mix, (1 + d_i)·p later.
void timing_step_gossip(const SimTimingPlan& plan, SimTimingState& state, int64_t step, std::vector<double>& clock,
                        SimStepTiming* rows);

// Broadcasts from worker 0 at the start of the step (DDP's buffers before the forward), one after
// another, each a blocking collective: A = max_j clock_j, T = A + Σ_g model(broadcast, S_g, n);
// clock_i = T for every worker (its wait A − clock_i, its comm T − A). Returns A, T − A and
// each worker's bytes sent: the broadcasts' (n−1)/n·S_g summed (the mean of a tree's sends).
struct TimingBroadcasts {
  double arrival = 0;  // A: the last worker's arrival
  double comm = 0;     // T − A
  double sent = 0;
};
TimingBroadcasts timing_broadcasts_before(const SimTimingPlan& plan, const std::vector<double>& bytes,
                                          std::vector<double>& clock);

// The size at which ssgd --overlap's bucket `index` closes (0: the first, the last layers',
// launched first): first_bucket_bytes when set (> 0), else bucket_bytes. ssgd.cpp's buckets
// and timing_step_buckets' alike.
inline double timing_bucket_cap(size_t index, double bucket_bytes, double first_bucket_bytes) {
  return index == 0 && first_bucket_bytes > 0 ? first_bucket_bytes : bucket_bytes;
}

// zero (32 bits): a blocking reduce-scatter after backward, the update, a blocking all-gather:
//   a_i = start_i + data + fwd + bwd + δ_i;  A = max_j a_j;  T1 = A + model(reduce-scatter, 4|x|, n) + p(shard_i);
//   end_i = T1 + opt + model(all-gather, 4|x|, n);  wait_i = A − a_i, comm_i = the two models + p(shard_i).
void timing_step_sharded(const SimTimingPlan& plan, SimTimingState& state, int64_t step, std::vector<double>& clock,
                         SimStepTiming* rows);

// A background model average (cocod, dasgd, overlap-local): a non-blocking all-reduce launched
// after the update of every step with (t+1) ≡ 0 mod H (at the last step only if launch_at_last)
// and waited for after the update of step t + delay (or of the run's last step), as the
// SimCommunicator times it: launched at L_i = the end of the update, it completes at
//   C = max(max_j L_j, end of the previous collective) + model(all-reduce, 4|x|, n);
// the wait, called at W_i, returns at D_i = max(W_i, C) + p(4|x|), split with A = max_j W_j as the
// recorder does: D_i ≤ A: wait D_i − W_i; else wait A − W_i, comm D_i − A; overlap_i =
// min(W_i, P_i) − L_i with P_i the first poll at or after C (the layer hooks of the later
// steps, as each layer's backward cost is charged, and the update's end of a step that
// neither waits nor launches); bytes 2(n−1)/n·4|x| in the waiting step.
void timing_step_background(const SimTimingPlan& plan, SimTimingState& state, int64_t step, std::vector<double>& clock,
                            SimStepTiming* rows, int64_t delay, bool launch_at_last);

// ssgd --overlap: buckets of about bucket_bytes (the first: first_bucket_bytes) in backward
// order (ssgd.cpp's rule), bucket b's non-blocking all-reduce launched at the hook of its last
// layer, h = start_i + data + fwd + Σ_{m ≥ l} bwd_l (hooks fire as each layer's backward
// cost is charged), completing at
// C_b = max(max_j L_bj, C_{b−1}) + model(all-reduce, 4|x_b|, n). After backward (+ δ_i) the
// waits run in launch order: W_b = (first: E_i; then D_{b−1}), D_b = max(W_b, C_b) + p(4|x_b|), each split
// into wait and comm with A_b = max_j W_bj; then the update; overlap_i = the union of
// [L_b, min(E_i, the first hook at or after C_b)].
void timing_step_buckets(const SimTimingPlan& plan, SimTimingState& state, int64_t step, std::vector<double>& clock,
                         SimStepTiming* rows);

// Per-layer non-blocking all-reduces waited for after the update (dreamddp): every layer l with
// launch[l] set is all-reduced from its hook L_li = start_i + data + fwd + Σ_{m ≥ l} bwd_m
// (backward order), completing at C_l = max(max_j L_lj, C_prev) + model(all-reduce, 4|x_l|, n)
// (C_prev: the collective before it, this step's or an earlier one's, kept in state.link_free).
// After backward (+ δ_i, E_i) and the update (U_i = E_i + opt) the waits run in launch order:
// W_l = (first: U_i; then D_prev), D_l = max(W_l, C_l) + p(4|x_l|), each split into wait and comm with
// A_l = max_j W_lj; overlap_i = the union of [L_l, min(U_i, P_l)] with P_l the first poll at or
// after C_l (the hooks from L_l on, then E_i); bytes Σ_l 2(n−1)/n·4|x_l|.
void timing_step_layers(const SimTimingPlan& plan, SimTimingState& state, int64_t step, std::vector<double>& clock,
                        SimStepTiming* rows, const std::vector<uint8_t>& launch);

}  // namespace dsgd
