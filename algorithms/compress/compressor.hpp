// Gradient compressors for the all-reduce variants (--compress: ssgd, localsgd, diloco,
// cocod, dasgd, overlap-local): one interface, one file per compressor, created from the
// flag's text by compressor_create.
//
//   topk:RATIO      top-k sparsification with error feedback (compress/topk.cpp)
//   qsgd:bits=B     QSGD stochastic quantisation, seeded (compress/qsgd.cpp)
//   powersgd:rank=R PowerSGD rank-R with warm start and error feedback (compress/powersgd.cpp)
//
// A compressor replaces "all-reduce the vector, divide by n": afterwards every worker holds
// the same aggregated (decompressed) vector. Each states its bytes sent per worker per call,
// which equals what the Communicator records for its collectives.
// Identity settings (ratio 1, 32 bits, full rank) go through the same code path and give the
// uncompressed result (bit-for-bit for topk and qsgd on 2 workers; PowerSGD to rounding).
//
// An aggregation is a fixed sequence of phases, each "compute, then one collective"
// (topk, qsgd: encode → all-gather; PowerSGD: P = MQ → all-reduce, orthonormalise and
// Q = MᵀP̂ → all-reduce), then a decode. It runs in two forms over the same phase code:
//   blocking:      allreduce_average(comm, data, count, step)
//   non-blocking:  start(comm, data, count, step)   encodes, launches phase 0's collective
//                  progress(comm)                   polls it (never blocks, never launches)
//                  advance(comm)                    waits for the current phase's collective,
//                                                   computes and launches the next one
//                  finish(comm)                     advances through the rest, waits, decodes
// The two forms compute the same floats (the non-blocking collectives reduce like the
// blocking ones: rank order on sim, a + b on 2 MPI ranks). Phases are launched only from
// start/advance, which a caller must reach at the same point of its program on every rank
// (MPI and the sim order collectives by program order, not by completion time), so
// progress() polls without ever starting the next phase. data must stay untouched between
// start and finish; one aggregation in flight per compressor.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cluster/communicator.hpp"
#include "cluster/network_model.hpp"
#include "workloads/workload.hpp"

namespace dsgd {

class GradientCompressor {
 public:
  virtual ~GradientCompressor() = default;
  virtual std::string name() const = 0;
  // Sizes every buffer for a gradient of `count` floats split into `layers` on comm.size()
  // workers (called once, before the first step). seed: the run's seed (random state is
  // derived from it, the rank and the step, so runs are reproducible).
  virtual void setup(Communicator& comm, const std::vector<LayerView>& layers, size_t count, uint64_t seed) = 0;
  // Bytes one worker sends per call, as recorded (ring accounting, docs/metrics.md).
  virtual double bytes_sent_per_call(size_t count, int n) const = 0;
  // Modelled seconds of one call on `model` (network_model.hpp): the sum of its phases'
  // collectives (top-k, QSGD: one all-gather of n payloads; PowerSGD: the P and Q
  // all-reduces). After setup. Used by dreamddp to plan its schedule with the compressed
  // per-layer costs.
  virtual double modelled_time(const NetworkModel& model, CollAlgo algo, size_t count, int n) const = 0;
  // Recorded collectives per call (= phases).
  int collectives_per_call() const { return phases(); }

  // Blocking: data ← the average over workers of the compressed data (same on every worker).
  void allreduce_average(Communicator& comm, float* data, size_t count, int64_t step);
  // Non-blocking form (see the top of this file).
  void start(Communicator& comm, float* data, size_t count, int64_t step);
  void progress(Communicator& comm) { comm.progress(request_); }
  // Returns false (and does nothing) when no phase is left to launch: only finish remains.
  bool advance(Communicator& comm);
  // compute_end: as Communicator::wait's.
  void finish(Communicator& comm, double compute_end = 0);
  bool in_flight() const { return data_ != nullptr; }

 protected:
  // One phase's collective on a compressor-owned buffer: an all-gather (in place, the
  // rank's block = its payload) or an all-reduce average.
  struct PhaseCollective {
    float* buffer = nullptr;
    size_t count = 0;
    bool allgather = false;
  };
  virtual int phases() const = 0;
  // The computation before phase k's collective (k = 0: encode data, of `count` floats);
  // returns the collective. Phase k > 0 sees the result of phase k−1's collective.
  virtual PhaseCollective phase(int k, const float* data, size_t count, int64_t step) = 0;
  // After the last collective: data ← the aggregated vector.
  virtual void decode(float* data, size_t count) = 0;

 private:
  void launch(Communicator& comm, const PhaseCollective& c);
  float* data_ = nullptr;  // the vector in flight (nullptr: none)
  size_t count_ = 0;
  int64_t step_ = 0;
  int phase_ = 0;
  CollRequest request_;
};

// Parses --compress. Throws InputError naming --compress on an unknown kind or a bad value.
std::unique_ptr<GradientCompressor> compressor_create(const std::string& spec);

// The backend capabilities (cluster/backends.hpp, BackendCap) the compressor of --compress
// SPEC needs beyond all-reduce: top-k and QSGD all-gather their payloads.
uint32_t compressor_backend_needs(const std::string& spec);

// The three kinds (compress/*.cpp); value ranges are checked by compressor_create.
std::unique_ptr<GradientCompressor> compressor_create_topk(double ratio);
std::unique_ptr<GradientCompressor> compressor_create_qsgd(int bits, size_t bucket);
std::unique_ptr<GradientCompressor> compressor_create_powersgd(int rank);

// Packs 32-bit words into floats and back (memcpy: the bits travel unchanged through a
// float collective; no arithmetic is ever done on them).
float compress_word_to_float(uint32_t w);
uint32_t compress_float_to_word(float f);

}  // namespace dsgd
