// `dsgd-bench list workloads|algorithms|datasets|topologies|backends`: what the registries hold
// (backends: the table of cluster/backends.hpp, with why a row cannot run on this machine).
#include <fmt/format.h>

#include "algorithms/algorithm.hpp"
#include "algorithms/variant.hpp"
#include "cli/commands.hpp"
#include "cluster/backends.hpp"
#include "cluster/topology.hpp"
#include "workloads/chakra_trace.hpp"
#include "workloads/datasets/dataset.hpp"
#include "workloads/workload.hpp"

namespace dsgd {

namespace {

// One block per backend: name, availability (why not), description, capabilities, and the
// variants it refuses up front (their default settings) for lack of a capability.
void print_backends() {
  const RunConfig defaults;
  for (const Backend& b : backend_all()) {
    const BackendAvailability a = b.availability();
    std::string state = a.available ? "available" : "not available: " + a.why;
    if (a.available && !a.why.empty()) state += " (" + a.why + ")";
    fmt::print("{:<6} {}\n", b.name, state);
    fmt::print("{:<6} {}\n", "", b.description);
    fmt::print("{:<6} launch: {}; memory: {}; capabilities: {}\n", "",
               b.launch == BackendLaunch::launch_mpiexec ? "one process per worker (mpiexec)" : "in this process",
               device_name(b.device).substr(0, device_name(b.device).find(':')),
               b.caps ? backend_caps_text(b.caps) : std::string("none"));
    std::string refused;
    for (const Variant* v : variant_all()) {
      const uint32_t missing = (v->needs ? v->needs(defaults) : 0u) & ~b.caps;
      std::string why = missing ? backend_caps_text(missing) : "";
      if (why.empty() && !b.device.is_host() && v->host_only && v->host_only(defaults)) why = "host memory only";
      if (!why.empty()) refused += fmt::format("{}{} ({})", refused.empty() ? "" : ", ", v->name, why);
    }
    if (!b.device.is_host()) refused += std::string(refused.empty() ? "" : ", ") + "--compress (host memory only)";
    if (!refused.empty()) fmt::print("{:<6} refuses: {}\n", "", refused);
  }
}

}  // namespace

void setup_list(CLI::App& app) {
  auto what = std::make_shared<std::string>();
  CLI::App* sub =
      app.add_subcommand("list", "List the available workloads, algorithms, datasets, topologies or backends");
  sub->add_option("what", *what, "workloads | algorithms | datasets | topologies | backends")
      ->required()
      ->check(CLI::IsMember({"workloads", "algorithms", "datasets", "topologies", "backends"}));
  sub->callback([what]() {
    if (*what == "workloads") {
      for (const auto& w : workload_list()) fmt::print("{:<14} {}\n", w.name, w.description);
      fmt::print(
          "{:<14} {}\n", "profile:FILE",
          "your own model's measured costs (tools/export_profile.py; sim, timing-only; docs/model-cost-file.md)");
      fmt::print("{:<14} {}{}\n", "chakra:FILE",
                 "your own model's step from one rank's Chakra execution trace (sim, timing-only; docs/chakra.md)",
                 chakra_trace_supported() ? "" : " [not in this build: no protobuf]");
    } else if (*what == "algorithms") {
      for (const Variant* v : variant_all()) fmt::print("{:<14} {:<62} knobs: {}\n", v->name, v->description, v->knobs);
    } else if (*what == "backends") {
      print_backends();
    } else if (*what == "topologies") {
      for (const auto& t : topology_list())
        fmt::print("{:<14} {}\n{:<14} usage: {}\n", t.name, t.description, "", t.usage);
    } else {
      for (const auto& d : dataset_list())
        fmt::print("{:<14} {}\n{:<14} usage: {}\n", d.name, d.description, "", d.usage);
    }
  });
}

}  // namespace dsgd
