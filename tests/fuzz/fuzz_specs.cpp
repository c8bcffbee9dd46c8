// Fuzz target: the spec strings a user types (--straggler, --topology, --bandwidth,
// --latency, --target, --dataset, --compress). The first byte picks the parser and the
// worker count (1..16: the topology's eigen solve is O(n^3)); the rest is the spec.
#include "algorithms/compress/compressor.hpp"
#include "cluster/network_model.hpp"
#include "cluster/straggler.hpp"
#include "cluster/topology.hpp"
#include "fuzz_common.hpp"
#include "results/target.hpp"
#include "workloads/datasets/dataset.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const int which = data[0] % 8;
  const int workers = 1 + (data[0] >> 4);
  const std::string spec(reinterpret_cast<const char*>(data + 1), size - 1);
  dsgd_fuzz::refuse_ok([&] {
    switch (which) {
      case 0: {
        const dsgd::Stragglers s = dsgd::Stragglers::parse(spec, workers, 7);
        for (int64_t step = 0; step < 4; ++step) (void)s.delay_s(workers - 1, step, 0.01);
        break;
      }
      case 1: (void)dsgd::topology_make(spec, workers, 7); break;
      case 2: (void)dsgd::network_parse_bandwidth(spec); break;
      case 3: (void)dsgd::network_parse_duration(spec); break;
      case 4: (void)dsgd::target_parse(spec); break;
      case 5: dsgd::dataset_validate_spec(spec); break;
      case 6: (void)dsgd::compressor_create(spec); break;
      case 7: {
        // Both flags of a hier:GxW network: "BANDWIDTH|LATENCY".
        const size_t bar = spec.find('|');
        (void)dsgd::network_model_from_flags(spec.substr(0, bar), bar == std::string::npos ? "" : spec.substr(bar + 1),
                                             "", "", 1 + workers % 4);
        break;
      }
    }
  });
  return 0;
}
