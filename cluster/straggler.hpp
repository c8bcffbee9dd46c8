// Seeded straggler injection: per-(rank, step) compute slowdowns, applied on every
// backend after backward (before the step's gradient communication) and recorded as
// `injected_s`. A spec is one or more models separated by ';':
//   fixed:rank=R,delay=D          rank R is D slower every step
//   fixed:rank=R,factor=F         rank R's compute (fwd+bwd) takes F times as long: (F−1)·compute
//   random:p=P,delay=D[,rank=R]   each (rank, step) independently D slower with probability P
//   lognormal:sigma=S[,rank=R]    compute × exp(S·z), z ~ N(0,1); the slowdown part max(0, e^{Sz} − 1)·compute
//   pareto:alpha=A,scale=D[,rank=R]  Lomax (Pareto II) delay D·(U^{−1/A} − 1): heavy tail, min 0, mean D/(A−1)
//   periodic:rank=R,every=K,delay=D[,offset=O]  rank R is D slower at steps t ≡ O (mod K)
// Durations take units (ns, us, ms, s) and are at most 1 hour; factor is at most 1000,
// sigma at most 4, alpha in [0.5, 1000], every and offset at most 1e9 steps; one lognormal or
// pareto draw is truncated at 1 hour. Several models add up. Draws come from
// rng_derive_seed(seed, model, rank, step), so a (seed, rank, step) always gets the
// same delay, whatever order steps run in (the same on the mpi and sim backends).
//
// The simulator's compute jitter is kept here too, beside the models, so that both simulated
// paths (threaded and timing-only) apply it exactly alike: it is never parsed from a spec (the
// simulator sets it from the compute profile's measured per-iteration spread, --compute-jitter),
// and it is not a straggler: it is part of the compute (bwd_s), not of injected_s.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dsgd {

// Ranges of the spec's parameters (docs/cluster.md).
constexpr double kStragglerMaxDelayS = 3600.0;
constexpr double kStragglerMaxFactor = 1000.0;
constexpr double kStragglerMaxSigma = 4.0;
constexpr double kStragglerMinAlpha = 0.5;

enum class StragglerKind {
  straggler_fixed,
  straggler_random,
  straggler_lognormal,
  straggler_pareto,
  straggler_periodic
};

struct StragglerModel {
  StragglerKind kind = StragglerKind::straggler_fixed;
  int rank = -1;       // −1: every rank
  double delay_s = 0;  // fixed / random / periodic
  double factor = 1;   // fixed:factor
  double p = 0;        // random
  double sigma = 0;    // lognormal
  double alpha = 0;    // pareto
  double scale_s = 0;  // pareto
  int64_t every = 0;   // periodic
  int64_t offset = 0;  // periodic
};

// The simulator's compute jitter: factors on a worker's compute (charged at the lowest
// measured), relative to that lowest (none below 1; the lowest of all is 1).
// - Draws (in_step_order false): one distribution for every rank, or one per rank (rank r
//   uses factors[r mod R]); each ascending, at least 2 values, equally likely; each
//   (rank, step) draws one, factors[⌊u·K⌋] with u ~ U(0, 1).
// - A replay (in_step_order true, --compute-jitter replay): factors[r mod R] are rank r's
//   measured steps in step order, from step first_step; rank r's step s takes
//   factors[r mod R][(s − first_step) mod K]: each rank's speed, its drift and what the ranks
//   had in common at each step kept.
struct ComputeJitter {
  std::vector<std::vector<double>> factors;
  bool in_step_order = false;
  int64_t first_step = 0;
  bool empty() const { return factors.empty(); }
};

class Stragglers {
 public:
  Stragglers() = default;
  // Parses the spec (empty: no stragglers). Throws InputError naming the bad part.
  static Stragglers parse(const std::string& spec, int workers, uint64_t seed);
  bool empty() const { return models_.empty() && jitter_.empty(); }
  // Seconds to add to `rank`'s compute at `step`, whose measured compute took compute_s.
  double delay_s(int rank, int64_t step, double compute_s) const { return delay_s(rank, step, compute_s, true); }
  // The same delay for a worker whose step computes on two threads (pdasgd's forward thread
  // beside the backward): the part proportional to compute (factor, lognormal) for that
  // thread's compute_s, and the part that does not depend on it (delay, random, pareto,
  // periodic) only with `with_fixed` (one thread takes it). Summed over the threads it is
  // delay_s of their summed compute (up to the truncation of one lognormal draw at 1 hour).
  double delay_s(int rank, int64_t step, double compute_s, bool with_fixed) const {
    return delay_s(rank, step, compute_s, with_fixed, nullptr);
  }
  // The same, with the compute jitter's part of it in *jitter_part (one draw for both).
  double delay_s(int rank, int64_t step, double compute_s, bool with_fixed, double* jitter_part) const;
  const std::vector<StragglerModel>& models() const { return models_; }

  // The compute jitter (ComputeJitter above): a worker's compute c (charged at the lowest
  // measured) becomes c·factor for the factor its (rank, step) draws or replays: the delay
  // adds (factor − 1)·c. Empty: none. Throws Error for factors that are not as ComputeJitter
  // describes.
  void set_jitter(ComputeJitter jitter);
  const ComputeJitter& jitter() const { return jitter_; }
  // The jitter's part of delay_s (0 without a jitter).
  double jitter_s(int rank, int64_t step, double compute_s) const;

 private:
  std::vector<StragglerModel> models_;
  ComputeJitter jitter_;
  uint64_t seed_ = 0;
};

}  // namespace dsgd
