// Which samples each worker trains on: the training set is split into disjoint, equal
// shards by a global permutation from the seed (worker r gets positions [r·S, (r+1)·S)
// with S = floor(N / n)), and each worker reshuffles its shard at every epoch from
// (seed, rank, epoch). A batch never crosses an epoch boundary (the remainder of an
// epoch, S mod B samples, is skipped). Allocates at construction only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace dsgd {

class BatchSampler {
 public:
  BatchSampler(size_t dataset_rows, int rank, int workers, size_t batch, uint64_t seed);
  size_t shard_size() const { return shard_.size(); }
  size_t batches_per_epoch() const { return shard_.size() / batch_; }
  // Indices of the next batch (batch() entries), valid until the next call.
  const uint32_t* next();
  size_t batch() const { return batch_; }
  int64_t epoch() const { return epoch_; }

 private:
  void reshuffle();
  std::vector<uint32_t> shard_;
  size_t batch_;
  size_t cursor_ = 0;
  int64_t epoch_ = -1;
  int rank_;
  uint64_t seed_;
};

}  // namespace dsgd
