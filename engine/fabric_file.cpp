// Reading a fabric file and turning it into the simulator's network (fabric_file.hpp).
#include "engine/fabric_file.hpp"

#include <fmt/format.h>

#include <cmath>
#include <memory>

#include "core/errors.hpp"
#include "core/json_fields.hpp"
#include "results/alpha_beta_fit.hpp"

namespace dsgd {

namespace {

constexpr const char* kWhat = "fabric file";
constexpr const char* kFormat = "dsgd-fabric";
constexpr const char* kHint = "measure it again with tools/export_fabric.py (docs/model-cost-file.md)";

}  // namespace

FabricFile fabric_file_read(const std::string& path) {
  const nlohmann::json j = json_file_load(kWhat, path);
  const JsonFields top(kWhat, path, kHint, j);
  top.check_format(kFormat, kFabricFileVersion, "measure it with the tools/export_fabric.py of this version");
  FabricFile f;
  f.path = path;
  f.framework = top.text("framework");
  f.framework_version = top.text("framework_version");
  f.backend = top.text("backend");
  f.world_size = static_cast<int>(top.count("world_size", 2));
  f.hosts = static_cast<int>(top.count("hosts", 1));
  const nlohmann::json& rows = top.array("collectives");
  size_t allreduce = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    const JsonFields row = top.item("collectives", i);
    MeasuredPoint p{row.text("op"), static_cast<double>(row.count("bytes", 0)), row.positive("time_s"),
                    row.has("spread") ? row.non_negative("spread") : NAN};
    if (p.op == "allreduce") ++allreduce;
    f.points.push_back(std::move(p));
  }
  if (allreduce < 2) top.fail("collectives", "has fewer than two all-reduce sizes: no network can be fitted");
  if (top.has("notes"))
    for (const nlohmann::json& note : top.get("notes"))
      if (note.is_string()) f.notes.push_back(note.get<std::string>());
  return f;
}

NetworkModel fabric_file_network(const FabricFile& file) {
  const double factor = 2.0 * (file.world_size - 1) / file.world_size;  // all-reduce's bus factor
  std::vector<AlphaBetaPoint> points;
  for (const MeasuredPoint& p : file.points)
    if (p.op == "allreduce") points.push_back({p.bytes * factor, p.seconds});
  const AlphaBetaFit fit = alpha_beta_fit(points);
  NetworkModel model{network_link_from_allreduce_fit(fit.alpha_s, fit.bandwidth_bytes_per_s, file.world_size),
                     std::nullopt, 1};
  model.measured = std::make_shared<const MeasuredFabric>(measured_fabric_build(0, file.world_size, file.points));
  return model;
}

std::string fabric_file_describe(const FabricFile& file) {
  return fmt::format("{} {} {} on {} ranks ({} host{}), file {}", file.framework, file.framework_version, file.backend,
                     file.world_size, file.hosts, file.hosts == 1 ? "" : "s", file.path);
}

}  // namespace dsgd
