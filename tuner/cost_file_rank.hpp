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
// Both take Local SGD's and the other periodic variants' H as statistically free (their steps
// to a target equal synchronous SGD's at the same global batch): an optimistic assumption that
// favours large H, said with the result. The learning-rate rule has no effect on time and is
// not searched.
#pragma once

#include <string>
#include <vector>

#include "results/store.hpp"
#include "tuner/search_space.hpp"

namespace dsgd {

struct CostFileRankRow {
  Candidate candidate;
  RunConfig config;     // the candidate's run (timing-only on the sim backend)
  double step_s = 0;    // simulated time per step
  double score = 0;     // the ranking's figure (CostFileRanking::basis); smaller is better
  double relative = 1;  // score / the best's score
};

struct CostFileRanking {
  std::vector<CostFileRankRow> rows;  // best first
  std::vector<Refusal> refused;       // by the space's filter, or without a timing rule
  std::string basis;                  // what score is, in words
  std::string unit;                   // score's unit ("s per sample", "relative")
  std::vector<std::string> notes;     // the assumptions the ranking rests on
};

// Times and ranks every feasible candidate of spec (base.workload a cost file). `read` gives the
// host's calibrated fabric when neither --bandwidth nor --fabric is given. Throws InputError for
// a bad file, a space with no configuration that has a timing rule, or a bad space.
CostFileRanking cost_file_rank(const TuneSpec& spec, Store& read);

}  // namespace dsgd
