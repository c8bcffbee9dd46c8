// `dsgd-bench list workloads|algorithms|datasets`: what the registries hold.
#include <fmt/format.h>

#include "algorithms/algorithm.hpp"
#include "cli/commands.hpp"
#include "cluster/topology.hpp"
#include "workloads/datasets/dataset.hpp"
#include "workloads/workload.hpp"

namespace dsgd {

void setup_list(CLI::App& app) {
  auto what = std::make_shared<std::string>();
  CLI::App* sub = app.add_subcommand("list", "List the available workloads, algorithms, datasets or topologies");
  sub->add_option("what", *what, "workloads | algorithms | datasets | topologies")
      ->required()
      ->check(CLI::IsMember({"workloads", "algorithms", "datasets", "topologies"}));
  sub->callback([what]() {
    if (*what == "workloads") {
      for (const auto& w : workload_list()) fmt::print("{:<14} {}\n", w.name, w.description);
    } else if (*what == "algorithms") {
      for (const auto& a : algorithm_list()) fmt::print("{:<14} {:<62} knobs: {}\n", a.name, a.description, a.knobs);
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
