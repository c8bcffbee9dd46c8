// See shared_topology.hpp.
#include "engine/shared_topology.hpp"

#include <map>
#include <mutex>
#include <tuple>

namespace dsgd {

std::shared_ptr<const Topology> topology_make_shared(const std::string& spec, int workers, uint64_t seed) {
  static std::mutex mutex;
  static std::map<std::tuple<std::string, int, uint64_t>, std::weak_ptr<const Topology>> cache;
  std::lock_guard<std::mutex> lock(mutex);
  auto& slot = cache[{spec, workers, seed}];
  if (auto existing = slot.lock()) return existing;
  auto made = std::make_shared<const Topology>(topology_make(spec, workers, seed));
  slot = made;
  return made;
}

}  // namespace dsgd
