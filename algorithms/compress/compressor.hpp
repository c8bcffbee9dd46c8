// Gradient compressors for the gradient all-reduce (--compress; ssgd): one interface,
// one file per compressor, created from the flag's text by compressor_create.
//
//   topk:RATIO      top-k sparsification with error feedback (compress/topk.cpp)
//   qsgd:bits=B     QSGD stochastic quantisation, seeded (compress/qsgd.cpp)
//   powersgd:rank=R PowerSGD rank-R with warm start and error feedback (compress/powersgd.cpp)
//
// A compressor replaces "all-reduce the gradient, divide by n": after allreduce_average
// every worker holds the same aggregated (decompressed) gradient. Each states its bytes
// sent per worker per call, which equals what the Communicator records for its collectives.
// Identity settings (ratio 1, 32 bits, full rank) go through the same code path and give the
// uncompressed result (bit-for-bit for topk and qsgd on 2 workers; PowerSGD to rounding).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cluster/communicator.hpp"
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
  // grads ← the average over workers of the compressed gradients (same on every worker).
  virtual void allreduce_average(Communicator& comm, float* grads, size_t count, int64_t step) = 0;
  // Bytes one worker sends per call, as recorded (ring accounting, docs/metrics.md).
  virtual double bytes_sent_per_call(size_t count, int n) const = 0;
  // Recorded collectives per call.
  virtual int collectives_per_call() const = 0;
};

// Parses --compress. Throws InputError naming --compress on an unknown kind or a bad value.
std::unique_ptr<GradientCompressor> compressor_create(const std::string& spec);

// The three kinds (compress/*.cpp); value ranges are checked by compressor_create.
std::unique_ptr<GradientCompressor> compressor_create_topk(double ratio);
std::unique_ptr<GradientCompressor> compressor_create_qsgd(int bits, size_t bucket);
std::unique_ptr<GradientCompressor> compressor_create_powersgd(int rank);

// Packs 32-bit words into floats and back (memcpy: the bits travel unchanged through a
// float collective; no arithmetic is ever done on them).
float compress_word_to_float(uint32_t w);
uint32_t compress_float_to_word(float f);

}  // namespace dsgd
