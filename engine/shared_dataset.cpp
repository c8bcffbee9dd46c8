// See shared_dataset.hpp.
#include "engine/shared_dataset.hpp"

#include <map>
#include <mutex>
#include <utility>

namespace dsgd {

std::shared_ptr<const DatasetPair> dataset_load_shared(const std::string& spec, uint64_t seed) {
  static std::mutex mutex;
  static std::map<std::pair<std::string, uint64_t>, std::weak_ptr<const DatasetPair>> cache;
  // Held while loading: concurrent callers for the same data wait instead of loading twice.
  std::lock_guard<std::mutex> lock(mutex);
  auto& slot = cache[{spec, seed}];
  if (auto existing = slot.lock()) return existing;
  auto loaded = std::make_shared<const DatasetPair>(dataset_load(spec, seed));
  slot = loaded;
  return loaded;
}

}  // namespace dsgd
