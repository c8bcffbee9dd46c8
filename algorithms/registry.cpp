// The algorithm registry: one explicit table (no static self-registration, which a
// static library's linker may drop). Adding a variant is one file and one line here.
#include <algorithm>

#include "algorithms/algorithm.hpp"
#include "core/errors.hpp"

namespace dsgd {

std::unique_ptr<Algorithm> algorithm_create_ssgd(const RunConfig& cfg);
std::unique_ptr<Algorithm> algorithm_create_localsgd(const RunConfig& cfg);
std::unique_ptr<Algorithm> algorithm_create_diloco(const RunConfig& cfg);
std::unique_ptr<Algorithm> algorithm_create_cocod(const RunConfig& cfg);
std::unique_ptr<Algorithm> algorithm_create_dasgd(const RunConfig& cfg);
std::unique_ptr<Algorithm> algorithm_create_overlap_local(const RunConfig& cfg);
std::unique_ptr<Algorithm> algorithm_create_dpsgd(const RunConfig& cfg);
std::unique_ptr<Algorithm> algorithm_create_zero(const RunConfig& cfg);
std::unique_ptr<Algorithm> algorithm_create_adpsgd(const RunConfig& cfg);
std::unique_ptr<Algorithm> algorithm_create_dreamddp(const RunConfig& cfg);
std::unique_ptr<Algorithm> algorithm_create_ps(const RunConfig& cfg);

namespace {

struct AlgorithmEntry {
  AlgorithmInfo info;
  std::unique_ptr<Algorithm> (*create)(const RunConfig&);
};

const std::vector<AlgorithmEntry>& registry() {
  static const std::vector<AlgorithmEntry> entries = {
      {{"ssgd", "synchronous SGD: all-reduce of the gradient every step", "--overlap, --bucket-mb"},
       algorithm_create_ssgd},
      {{"localsgd", "Local SGD: local steps, all-reduce of the model every H steps; post-local SGD",
        "--period H, --post-local K"},
       algorithm_create_localsgd},
      {{"diloco", "DiLoCo: inner optimizer H steps, outer Nesterov SGD on the averaged pseudo-gradient",
        "--period H, --outer-lr, --outer-momentum"},
       algorithm_create_diloco},
      {{"cocod", "CoCoD-SGD: snapshot all-reduce overlapping the next k local steps", "--period k"},
       algorithm_create_cocod},
      {{"dasgd", "local SGD with delayed averaging: an average applied d steps after it started",
        "--period H, --delay d"},
       algorithm_create_dasgd},
      {{"overlap-local", "Overlap Local-SGD: pull towards an anchor from a background all-reduce",
        "--period tau, --pull-alpha, --slow-momentum"},
       algorithm_create_overlap_local},
      {{"dpsgd", "D-PSGD: gossip averaging with the topology's neighbours (mixing matrix W) every step",
        "--topology, --dpsgd-delay 0|1"},
       algorithm_create_dpsgd},
      {{"zero", "sharded data parallel (ZeRO-2): reduce-scatter gradients, step on the own shard, all-gather",
        "--zero-bits 32|4, --zero-group G"},
       algorithm_create_zero},
      {{"adpsgd", "AD-PSGD: asynchronous; active (even) ranks average atomically with a random passive neighbour",
        "--topology"},
       algorithm_create_adpsgd},
      {{"dreamddp",
        "DreamDDP: partial local SGD, each layer averaged once per H steps at its scheduled slot, "
        "overlapped with backward",
        "--period H, --schedule"},
       algorithm_create_dreamddp},
      {{"ps", "parameter server: sharded server state in one-sided windows; sync, async or stale-synchronous (SSP)",
        "--ps-mode, --ps-staleness s, --ps-shards K, --ps-placement, --ps-one-step-delay"},
       algorithm_create_ps},
  };
  return entries;
}

}  // namespace

std::vector<AlgorithmInfo> algorithm_list() {
  std::vector<AlgorithmInfo> out;
  for (const auto& e : registry()) out.push_back(e.info);
  return out;
}

bool algorithm_exists(const std::string& name) {
  const auto& r = registry();
  return std::any_of(r.begin(), r.end(), [&](const auto& e) { return e.info.name == name; });
}

std::unique_ptr<Algorithm> algorithm_create(const std::string& name, const RunConfig& cfg) {
  std::string known;
  for (const auto& e : registry()) {
    if (e.info.name == name) return e.create(cfg);
    known += (known.empty() ? "" : ", ") + e.info.name;
  }
  DSGD_THROW(InputError, fmt::format("available: {} (dsgd-bench list algorithms)", known), "unknown algorithm '{}'",
             name);
}

}  // namespace dsgd
