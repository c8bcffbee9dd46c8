// A variant's registry entry: everything the rest of the program knows about one SGD variant,
// declared in the variant's own file (algorithms/<name>.cpp, `const Variant& variant_<name>()`)
// and listed once in algorithms/registry.cpp. The configuration check (config_check.hpp), the
// printed configuration, `list algorithms`, the tuner and the timing-only simulator ask the
// registry instead of naming variants.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cluster/sim_timing.hpp"
#include "core/run_config.hpp"

namespace dsgd {

class Algorithm;

// A run flag (a key of the run-config field table, core/run_config.cpp, which holds its help
// line and range) that belongs to this variant: given with any other --algo it is refused.
struct VariantFlag {
  const char* key;              // "delay"
  const char* owner = nullptr;  // where it applies, for the message, when more than "--algo NAME"
};

struct Variant {
  std::string name;
  std::string description;  // one line for `dsgd-bench list algorithms`
  std::string knobs;        // the flags it reads, for the same listing
  std::vector<VariantFlag> flags;
  bool takes_period = false;  // reads --period H
  // Mixes its model with its --topology's neighbours every step (D-PSGD, AD-PSGD): the tuner
  // searches --topologies for it, and its prior charges the topology's spectral gap.
  bool gossip_every_step = false;
  // Averages with its --topology's neighbours (D-PSGD, AD-PSGD, OLDSGD): a run builds the
  // whole graph, its weights and gap (topology_make). Every other variant reads only the
  // topology's groups, the link classes of hier (topology_groups), at any size.
  bool reads_topology = false;
  // Makes elementwise passes over the model outside compute and communication (a gossip mix,
  // a copy to send; Communicator::model_passes_done): the simulator charges each the profile's
  // model pass, and says so when the profile has none.
  bool model_passes = false;
  // It is PyTorch DDP's scheme for a model cost file: the simulator broadcasts the file's
  // buffers (BatchNorm statistics) from worker 0 before each forward (--broadcast-buffers).
  bool broadcasts_buffers = false;
  std::string no_compress;        // why --compress does not apply to it; empty: it takes --compress
  std::string no_compress_hint;   // what to do instead (empty: drop --compress or use another variant)
  std::string optimizer = "sgd";  // what --optimizer auto means for it (sgd | adamw)
  // Its own value checks, after the generic ones (throws InputError naming the flag); may be null.
  void (*validate)(const RunConfig& cfg) = nullptr;
  std::unique_ptr<Algorithm> (*create)(const RunConfig& cfg) = nullptr;
  // Timing-only model (--backend sim --timing-only): the step rule, null when the variant has
  // none; timing_applies narrows it to some settings (null: all) and timing_text names what is
  // modelled, for messages ("ssgd (without --overlap)").
  SimTimingStep timing = nullptr;
  bool (*timing_applies)(const RunConfig& cfg) = nullptr;
  std::string timing_text;
  bool timing_needs_neighbors = false;  // the rule reads the topology (static ones only)
  // Fills what its rule reads beyond the generic plan (built by the engine from cfg); may be null.
  void (*timing_plan)(const RunConfig& cfg, SimTimingPlan& plan) = nullptr;
  // Backend capabilities (BackendCap bits, cluster/backends.hpp) it needs with cfg's settings
  // beyond the all-reduce, broadcast and barrier every backend has; null: none. A backend
  // lacking one is refused up front with the reason (config_validate).
  uint32_t (*needs)(const RunConfig& cfg) = nullptr;
  // Why it cannot keep its model in device memory with cfg's settings (nullptr: it can: its
  // math goes through the vector-ops seam, core/vector_ops.hpp); refused on a device backend.
  const char* (*host_only)(const RunConfig& cfg) = nullptr;
};

// The registry (algorithms/registry.cpp), in listing order.
const std::vector<const Variant*>& variant_all();
// The entry of `name`; InputError listing the known names when there is none.
const Variant& variant_get(const std::string& name);
// The entry of `name`, or nullptr.
const Variant* variant_find(const std::string& name);

// The variants whose registry entry owns run flag `key` (their own flags), in registry order;
// empty for a flag every variant shares.
std::vector<const Variant*> variant_flag_owners(std::string_view key);

// Whether --algo takes --period H.
bool variant_uses_period(const std::string& algo);
// Whether --algo takes --compress (its entry gives no reason why not).
bool variant_uses_compress(const std::string& algo);
// Whether cfg's variant has a timing-only model for cfg's settings; and the list of what is
// modelled, for messages ("ssgd (without --overlap), localsgd, diloco and dpsgd (...)").
bool variant_timing_supported(const RunConfig& cfg);
std::string variant_timing_supported_text();

}  // namespace dsgd
