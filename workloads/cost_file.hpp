// A model cost file (docs/model-cost-file.md): a user's model measured in their own framework
// by tools/export_profile.py — per layer, in forward order, its parameters and its forward and
// backward times at one or more batch sizes, plus the whole step — read and checked here, and
// turned into the compute cost of one step at any batch the file can scale to.
//
// A workload written `profile:FILE` (dsgd-bench run --workload profile:model.json) is such a
// file: it has no numerics, so it runs on the simulator's timing-only path, and its times are
// the file's, not this machine's.
//
// Batch scaling. Each time (each layer's forward and backward, the whole forward, backward,
// optimizer and step) is fitted as t0 + k·b by least squares over the file's batches, so a
// fixed cost per call is not scaled with the batch. With one batch in the file only that
// batch can be predicted; with two or more, batches from kCostFileExtrapolation times below
// the smallest to kCostFileExtrapolation times above the largest. A fit is never negative.
//
// Totals. The step, forward, backward and optimizer are the exporter's measurements without
// hooks; the layers' times (taken with hooks, which cost hook_overhead_s each) only split the
// backward among the gradients, scaled to add up to the whole backward. So a simulated step's
// compute is the file's measured step at that batch.
//
// Limits. The exporter's hooks see module boundaries: work between modules (the loss, the
// framework's own bookkeeping) is the file's step minus the parts, charged once per step as
// data time here. Parameter-less layers (activations, pooling) have no gradient to send:
// their backward time is charged with the next layer whose gradient becomes ready.
//
// A second source. A Chakra execution trace (`chakra:FILE`, workloads/chakra_trace.hpp,
// docs/chakra.md) is turned into the same CostFile: one batch entry, one layer per gradient
// all-reduce. cost_file_load reads either, by the workload's prefix.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dsgd {

// A median time over the exporter's timed iterations, its spread (interquartile range over
// median) and the number of iterations; for the step, each iteration's time in order when the
// exporter wrote them (times_s: the distribution the simulator's compute jitter draws from).
struct CostStat {
  double median_s = 0;
  double spread = 0;
  int64_t samples = 0;
  std::vector<double> times_s;
};

// One group of the model's buffers (module.buffers(): BatchNorm's running statistics and
// counters): DDP broadcasts them from rank 0 before each forward, one coalesced broadcast per
// dtype. From a Chakra trace, one per BROADCAST node: `dtype` is the node's label and
// `tensors` 0 (the trace does not say).
struct CostBufferGroup {
  std::string dtype;
  int64_t tensors = 0;
  int64_t bytes = 0;
};

struct CostLayer {
  std::string name, type;
  int64_t calls = 1;  // calls per forward (a module used twice: both calls' times summed)
  int64_t parameters = 0;
  int64_t parameter_bytes = 0;
};

// The measurements at one batch size; layer_fwd / layer_bwd follow CostFile::layers.
struct CostBatch {
  int64_t batch = 0;
  int64_t iterations = 0;
  CostStat step, forward, backward, optimizer;
  double unattributed_s = 0;
  std::vector<CostStat> layer_fwd, layer_bwd;
};

// Where a CostFile's numbers came from.
enum class CostSource {
  cost_source_json,    // a model cost file (tools/export_profile.py)
  cost_source_chakra,  // a Chakra execution trace (workloads/chakra_trace.hpp)
};

// The batch of a batch entry read from a trace that does not record it: the times are taken
// to be those at whichever batch the run asks for (cost_file_at_batch says so).
constexpr int64_t kCostBatchUnknown = 0;

struct CostFile {
  CostSource source = CostSource::cost_source_json;
  std::string source_note;  // a trace: what was read from it and what was left out
  std::string path;
  std::string model, framework, framework_version, dtype;
  std::string device_kind, device_name;
  double device_peak_flops = 0, device_memory_bandwidth = 0;  // bytes/s; as the exporter measured
  int64_t parameters = 0, parameter_bytes = 0;
  std::vector<CostLayer> layers;      // forward execution order
  std::vector<CostBatch> batches;     // sorted by batch, distinct
  std::optional<double> noise_scale;  // gradient noise scale B_simple, when measured
  // One elementwise pass over the parameters as a flat vector (the mean of a copy and a
  // y ← y + a·x, timed after a training step), when the exporter measured it.
  std::optional<CostStat> model_pass;
  int64_t processes = 1;  // processes measuring at once on the exporter's host
  // The model's buffers by dtype (a Chakra trace: its broadcasts); empty when it has none;
  // nullopt when the file does not say (an older exporter; a trace with a broadcast of no size).
  std::optional<std::vector<CostBufferGroup>> buffers;
};

constexpr int kCostFileVersion = 1;
constexpr const char* kCostFileRunHint = "run it with --backend sim --timing-only true and --steps N";
constexpr double kCostFileExtrapolation = 4.0;

// Whether a --workload value names a cost file ("profile:FILE") or a Chakra trace
// ("chakra:FILE"), and the file's path.
bool cost_file_workload(const std::string& workload);
std::string cost_file_path(const std::string& workload);

// Reads the workload's file by its prefix: profile: a JSON cost file (cost_file_json_read),
// chakra: a Chakra trace (chakra_trace_read). Throws InputError as those do, and on a file of
// the other kind (naming the prefix to use).
CostFile cost_file_load(const std::string& workload);

// Reads and checks a cost file. Throws InputError naming the file and the field (its JSON
// path, e.g. batches[1].layers[3].backward.median_s) on: a missing or unreadable file, JSON
// that does not parse (NaN and Infinity included), another format or version, a missing or
// mistyped field, a negative time or spread, parameter bytes of the layers that do not add
// up to the stated total, batch entries whose layers differ, and batches not sorted or
// repeated.
CostFile cost_file_json_read(const std::string& path);

// Reads a file by its content, for callers that have the path only: a file whose first
// non-blank byte is '{' as a JSON cost file, any other as a Chakra trace. Prefer
// cost_file_load, which checks the content against the prefix the user wrote.
CostFile cost_file_read(const std::string& path);

// The compute cost of one step at `batch` (seconds per worker, per step). bwd_layer_s has
// one entry per layer that has parameters (cost_file_layers' order).
struct CostAtBatch {
  double data_s = 0, fwd_s = 0, bwd_rest_s = 0, opt_s = 0;
  std::vector<double> bwd_layer_s;
  double step_spread = 0;  // the largest spread of the step among the batches used
  double step_s = 0;       // the step's median at this batch (measured or fitted)
  // The per-iteration step times of the measured batch nearest this one (by ratio), and that
  // batch; empty when the file has none (an older exporter, a trace).
  std::vector<double> step_times_s;
  int64_t step_times_batch = 0;
  std::string how;  // "measured at batch 32" or "fitted t0 + k·b over batches 16, 32, 64"
};
// Throws InputError when batch is outside what the file can scale to (naming the range). A
// single entry of batch kCostBatchUnknown (a trace that records no batch) is used at any batch.
CostAtBatch cost_file_at_batch(const CostFile& file, int64_t batch);

// The layers that have parameters (their names and parameter counts in float32 units:
// parameter_bytes / 4, so that a collective moves the file's bytes).
struct CostFileLayer {
  std::string name;
  size_t floats = 0;
};
std::vector<CostFileLayer> cost_file_layers(const CostFile& file);

// "model mlp-784-256-10 (pytorch 1.13.1, float32; cpu Intel Xeon ...; 2 processes at once),
// file model.json"; for a trace, "Chakra trace FILE (...)" with its source_note.
std::string cost_file_describe(const CostFile& file);

// "2 broadcasts (6272 B float32 in 42 tensors, 168 B int64 in 21 tensors)"; "none (the model
// has no buffers)"; "not recorded in the file (...)"; for a trace, "1 broadcast of the trace
// (node 7 'bcast': 1024 B)".
std::string cost_file_buffers_describe(const CostFile& file);

}  // namespace dsgd
