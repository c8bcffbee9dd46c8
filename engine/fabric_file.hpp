// A fabric file (docs/model-cost-file.md, "The fabric file"): a cluster's collectives as the
// user's framework measured them (tools/export_fabric.py: torch.distributed over gloo, NCCL or
// MPI, a size sweep per collective), read and checked here and turned into the simulator's
// network: the measured curves (cluster/measured_fabric.hpp) and an α-β link fitted to the
// all-reduce, so a prediction for that cluster uses that framework's collectives, not MPICH's
// on this machine. `--fabric FILE` on a simulated run.
#pragma once

#include <string>
#include <vector>

#include "cluster/measured_fabric.hpp"
#include "cluster/network_model.hpp"

namespace dsgd {

struct FabricFile {
  std::string path, framework, framework_version, backend;
  int world_size = 0, hosts = 0;
  std::vector<MeasuredPoint> points;  // op, bytes, seconds (the median)
  std::vector<std::string> notes;     // what the exporter skipped, and why
};

constexpr int kFabricFileVersion = 1;

// Reads and checks a fabric file. Throws InputError naming the file and the field: a missing
// or unreadable file, bad JSON, another format or version, a world size below 2, a missing
// or mistyped field, a non-positive time, a negative size, no all-reduce of two sizes or more.
FabricFile fabric_file_read(const std::string& path);

// The simulator's network of the file: intra = the α-β fit of its all-reduce (what scales the
// curves to other worker counts, and what the kinds the file lacks use), measured = its curves.
NetworkModel fabric_file_network(const FabricFile& file);

// "pytorch 1.13.1 gloo on 2 ranks (1 host), file fabric.json".
std::string fabric_file_describe(const FabricFile& file);

}  // namespace dsgd
