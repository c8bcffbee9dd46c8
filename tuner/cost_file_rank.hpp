// `dsgd-tune recommend --workload profile:FILE` (docs/tuner.md, "A cost file"): a model cost
// file has times and no numerics, so no time to a target can be measured. Each configuration
// of the space is timed instead (the simulator's timing-only path, trial_step_time_estimate:
// at least 20 steps and 4 sync periods) and ranked by a predicted figure, stated as a
// prediction:
//
// - With the file's gradient noise scale B_noise (tools/export_profile.py --noise-scale): the
//   relative time to a fixed target, step time × (1 + B_noise / B) with B = batch × workers
//   the global batch, from S(B) = S_min (1 + B_noise / B) (McCandlish et al. 2018, eq. 2.11).
//   S_min is unknown, so only the ranking and the ratios are predicted, not the seconds.
// - Without it: the time per epoch at equal statistical efficiency, step time / (batch ×
//   workers): every sample counts the same whatever the batch, H or algorithm.
//
// With a reference convergence point from the user (--reference-steps S_ref@B_ref: their
// model reached their target in S_ref steps of synchronous SGD at global batch B_ref), the
// steps at each global batch B, and with the step time the seconds to that target, are
// predicted, with a band:
// - with B_noise: S_min = S_ref / (1 + B_noise / B_ref) and S(B) = S_min (1 + B_noise / B);
//   the band takes B_noise from half to twice the file's (B_simple, an estimate of McCandlish et
//   al.'s critical batch of the same order, not a measurement of it); it is 0 at B = B_ref;
// - without: perfect scaling, S(B) = S_ref B_ref / B (every sample counts the same, the
//   ranking above); the band runs from that to no scaling at all, S(B) = S_ref.
// The ranking's figure is then the predicted seconds.
//
// The leaders (the rows within kCostFileLeaderMargin of the best, at most kCostFileLeaders) are
// timed again at two more seeds: a file with per-iteration step times draws each simulated
// step from them (a random straggler draws too), so one short run's mean moves with its draws.
// Their step time is the median of the three, their range the lowest and highest. Seed k draws
// the same compute for every configuration (one draw per worker and step), so a leader that
// scores at most the best's at one seed or more is within the prediction's noise of it: their
// order is not resolved (said with the result).
//
// Both take Local SGD's and the other periodic variants' H as statistically free (their steps
// to a target equal synchronous SGD's at the same global batch): an optimistic assumption that
// favours large H, said with the result. The learning-rate rule has no effect on time and is
// not searched.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "results/store.hpp"
#include "tuner/search_space.hpp"

namespace dsgd {

// A convergence point the user measured: their target reached in `steps` steps of synchronous
// SGD at global batch `global_batch`.
struct ConvergenceReference {
  double steps = 0;
  double global_batch = 0;
};

// Parses "STEPS@BATCH" (both positive; STEPS may be fractional, BATCH an integer). Throws
// InputError naming `flag` otherwise.
ConvergenceReference convergence_reference_parse(const std::string& flag, const std::string& text);

inline constexpr double kCostFileLeaderMargin = 0.10;  // a leader's score within 10 % of the best's
inline constexpr size_t kCostFileLeaders = 8;          // timed at kCostFileSeeds seeds at most
inline constexpr int kCostFileSeeds = 3;

struct CostFileRankRow {
  Candidate candidate;
  RunConfig config;   // the candidate's run (timing-only on the sim backend)
  double step_s = 0;  // simulated time per step (a leader's: the median over the seeds)
  // A leader's lowest and highest step over the seeds; step_s for the other rows.
  double step_low_s = 0, step_high_s = 0;
  std::vector<double> seed_steps_s;  // a leader's step at each seed, in seed order
  bool leader = false;               // timed at kCostFileSeeds seeds
  bool within_noise = false;         // a leader that is not the best and scores at most the best's at a seed
  double score = 0;                  // the ranking's figure (CostFileRanking::basis); smaller is better
  double relative = 1;               // score / the best's score
  // With a ConvergenceReference: predicted steps to the target and their band (the seconds
  // are these times step_s; score is the middle one).
  double steps = 0, steps_low = 0, steps_high = 0;
};

struct CostFileRanking {
  std::vector<CostFileRankRow> rows;  // best first
  std::vector<Refusal> refused;       // by the space's filter, or without a timing rule
  std::string basis;                  // what score is, in words
  std::string unit;                   // score's unit ("s per sample", "relative")
  std::vector<std::string> notes;     // the assumptions the ranking rests on
  bool seconds = false;               // rows carry steps to the target (score: seconds to it)
};

// Times and ranks every feasible candidate of spec (base.workload a cost file). `read` gives the
// host's calibrated fabric when neither --bandwidth nor --fabric is given. Throws InputError for
// a bad file, a space with no configuration that has a timing rule, or a bad space.
CostFileRanking cost_file_rank(const TuneSpec& spec, Store& read,
                               const std::optional<ConvergenceReference>& reference = std::nullopt);

}  // namespace dsgd
