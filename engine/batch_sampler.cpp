// See batch_sampler.hpp.
#include "engine/batch_sampler.hpp"

#include <numeric>

#include "core/errors.hpp"
#include "core/rng.hpp"

namespace dsgd {

BatchSampler::BatchSampler(size_t dataset_rows, int rank, int workers, size_t batch, uint64_t seed)
    : batch_(batch), rank_(rank), seed_(seed) {
  const size_t shard = dataset_rows / static_cast<size_t>(workers);
  if (batch == 0 || shard < batch)
    DSGD_THROW(InputError, "use a smaller --batch or fewer --workers",
               "--batch {} is larger than each worker's shard ({} of {} training samples over {} workers)", batch,
               shard, dataset_rows, workers);
  std::vector<uint32_t> all(dataset_rows);
  std::iota(all.begin(), all.end(), 0u);
  Rng(rng_derive_seed(seed, 0xDA7AULL)).shuffle(all.data(), all.size());
  shard_.assign(all.begin() + static_cast<ptrdiff_t>(shard * static_cast<size_t>(rank)),
                all.begin() + static_cast<ptrdiff_t>(shard * static_cast<size_t>(rank + 1)));
  cursor_ = shard_.size();  // the first next() starts epoch 0
}

void BatchSampler::reshuffle() {
  ++epoch_;
  Rng(rng_derive_seed(seed_, 0x5A3DULL, static_cast<uint64_t>(rank_), static_cast<uint64_t>(epoch_)))
      .shuffle(shard_.data(), shard_.size());
  cursor_ = 0;
}

const uint32_t* BatchSampler::next() {
  if (cursor_ + batch_ > shard_.size()) reshuffle();
  const uint32_t* out = shard_.data() + cursor_;
  cursor_ += batch_;
  return out;
}

}  // namespace dsgd
