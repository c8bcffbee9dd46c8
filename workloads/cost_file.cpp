// Reading, checking and scaling a model cost file (cost_file.hpp, docs/model-cost-file.md).
#include "workloads/cost_file.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/errors.hpp"
#include "core/json_fields.hpp"
#include "workloads/chakra_trace.hpp"

namespace dsgd {

namespace {

using Json = nlohmann::json;

constexpr const char* kPrefix = "profile:";
constexpr const char* kChakraPrefix = "chakra:";
constexpr const char* kFormat = "dsgd-model-cost";
constexpr const char* kExportHint = "export the file again with tools/export_profile.py (docs/model-cost-file.md)";

constexpr const char* kWhat = "cost file";

using Fields = JsonFields;

CostStat stat_read(const Fields& f) {
  return CostStat{f.non_negative("median_s"), f.non_negative("spread"), f.count("samples", 1), {}};
}

// The step's stat with its optional per-iteration times: one finite time >= 0 per sample.
CostStat step_read(const Fields& f) {
  CostStat s = stat_read(f);
  if (!f.has("times_s")) return s;
  const Json& times = f.array("times_s");
  if (static_cast<int64_t>(times.size()) != s.samples)
    f.fail("times_s", fmt::format("has {} times for {} samples: one per timed iteration", times.size(), s.samples));
  for (size_t i = 0; i < times.size(); ++i) {
    if (!times[i].is_number() || !std::isfinite(times[i].get<double>()) || times[i].get<double>() < 0)
      f.fail("times_s", fmt::format("[{}] is {}: a time in seconds, finite and >= 0", i, times[i].dump()));
    s.times_s.push_back(times[i].get<double>());
  }
  return s;
}

CostLayer layer_read(const Fields& f) {
  CostLayer l;
  l.name = f.text("name");
  l.type = f.text("type");
  l.calls = f.has("calls") ? f.count("calls", 1) : 1;
  l.parameters = f.count("parameters", 0);
  l.parameter_bytes = f.count("parameter_bytes", 0);
  return l;
}

// One batch entry; its layers must match `layers` (from the first entry) when given.
CostBatch batch_read(const Fields& f, std::vector<CostLayer>& layers, bool first) {
  CostBatch b;
  b.batch = f.count("batch", 1);
  b.iterations = f.count("iterations", 1);
  b.step = step_read(f.at("step"));
  b.forward = stat_read(f.at("forward"));
  b.backward = stat_read(f.at("backward"));
  b.optimizer = stat_read(f.at("optimizer"));
  b.unattributed_s = f.number("unattributed_s");
  const Json& items = f.array("layers");
  if (!first && items.size() != layers.size())
    f.fail("layers", fmt::format("has {} layers, the first batch entry {}", items.size(), layers.size()));
  for (size_t i = 0; i < items.size(); ++i) {
    const Fields lf = f.item("layers", i);
    const CostLayer l = layer_read(lf);
    if (first) {
      layers.push_back(l);
    } else if (l.name != layers[i].name || l.parameters != layers[i].parameters ||
               l.parameter_bytes != layers[i].parameter_bytes) {
      lf.fail("name", fmt::format("'{}' ({} parameters) differs from the first batch entry's layer {}: '{}' ({})",
                                  l.name, l.parameters, i, layers[i].name, layers[i].parameters));
    }
    b.layer_fwd.push_back(stat_read(lf.at("forward")));
    b.layer_bwd.push_back(stat_read(lf.at("backward")));
  }
  return b;
}

void totals_check(const Fields& top, const CostFile& c) {
  int64_t params = 0, bytes = 0;
  for (const CostLayer& l : c.layers) {
    params += l.parameters;
    bytes += l.parameter_bytes;
  }
  if (bytes != c.parameter_bytes)
    top.fail("parameter_bytes", fmt::format("is {} but the layers' parameter_bytes add up to {}: a module's "
                                            "parameters were missed or counted twice",
                                            c.parameter_bytes, bytes));
  if (params != c.parameters)
    top.fail("parameters", fmt::format("is {} but the layers' parameters add up to {}", c.parameters, params));
}

// Least-squares t0 + k·b of one quantity over the batches, evaluated at `batch`, never negative.
template <typename Get>
double fit_at(const std::vector<CostBatch>& batches, int64_t batch, Get get) {
  const size_t n = batches.size();
  if (n == 1) return get(batches[0]);
  double sb = 0, st = 0, sbb = 0, sbt = 0;
  for (const CostBatch& b : batches) {
    const double x = static_cast<double>(b.batch), t = get(b);
    sb += x;
    st += t;
    sbb += x * x;
    sbt += x * t;
  }
  const double dn = static_cast<double>(n);
  const double k = (dn * sbt - sb * st) / (dn * sbb - sb * sb);
  const double t0 = (st - k * sb) / dn;
  return std::max(0.0, t0 + k * static_cast<double>(batch));
}

bool starts_with(const std::string& s, const char* prefix) {
  return s.rfind(prefix, 0) == 0;
}

// What a file starts with: a JSON object (a cost file), something else (a Chakra trace starts
// with a length varint), or nothing readable (its reader says why). JSON: '{' and then '"',
// '}' or the end, blanks between. The second byte matters: a trace whose GlobalMetadata is
// 123 bytes long starts with '{' too, followed by a field tag (0x0a, a JSON blank, then the
// version's length; or 0x12).
enum class FileStart { file_start_unreadable, file_start_json, file_start_other };

FileStart file_start(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in.is_open()) return FileStart::file_start_unreadable;
  auto next = [&in](char& ch) {
    while (in.get(ch))
      if (ch != ' ' && ch != '\t' && ch != '\n' && ch != '\r') return true;
    return false;
  };
  char ch = 0;
  if (!next(ch) || ch != '{') return FileStart::file_start_other;
  return !next(ch) || ch == '"' || ch == '}' ? FileStart::file_start_json : FileStart::file_start_other;
}

}  // namespace

bool cost_file_workload(const std::string& workload) {
  return starts_with(workload, kPrefix) || starts_with(workload, kChakraPrefix);
}

std::string cost_file_path(const std::string& workload) {
  if (starts_with(workload, kPrefix)) return workload.substr(std::char_traits<char>::length(kPrefix));
  if (starts_with(workload, kChakraPrefix)) return workload.substr(std::char_traits<char>::length(kChakraPrefix));
  return {};
}

CostFile cost_file_load(const std::string& workload) {
  const std::string path = cost_file_path(workload);
  const FileStart start = file_start(path);
  if (starts_with(workload, kChakraPrefix)) {
    if (start == FileStart::file_start_json)
      DSGD_THROW(InputError, fmt::format("write --workload profile:{} for a model cost file", path),
                 "--workload {}: {} is JSON, not a Chakra execution trace", workload, path);
    return chakra_trace_read(path);
  }
  if (start == FileStart::file_start_other)
    DSGD_THROW(InputError,
               fmt::format("write --workload chakra:{} for a Chakra execution trace, or export a cost file with "
                           "tools/export_profile.py",
                           path),
               "--workload {}: {} is not JSON (a model cost file starts with '{{')", workload, path);
  return cost_file_json_read(path);
}

CostFile cost_file_read(const std::string& path) {
  return file_start(path) == FileStart::file_start_other ? chakra_trace_read(path) : cost_file_json_read(path);
}

CostFile cost_file_json_read(const std::string& path) {
  const Json j = json_file_load(kWhat, path);
  const Fields top(kWhat, path, kExportHint, j);
  top.check_format(
      kFormat, kCostFileVersion,
      fmt::format("export it with the tools/export_profile.py of this version (writes {})", kCostFileVersion));
  CostFile c;
  c.path = path;
  c.model = top.text("model");
  c.framework = top.text("framework");
  c.framework_version = top.text("framework_version");
  c.dtype = top.text("dtype");
  const Fields device = top.at("device");
  c.device_kind = device.text("kind");
  c.device_name = device.text("name");
  c.device_peak_flops = device.non_negative("peak_flops");
  c.device_memory_bandwidth = device.non_negative("memory_bandwidth_bytes_per_s");
  c.parameters = top.count("parameters", 1);
  c.parameter_bytes = top.count("parameter_bytes", 1);
  const Json& batches = top.array("batches");
  for (size_t i = 0; i < batches.size(); ++i) {
    const Fields bf = top.item("batches", i);
    c.batches.push_back(batch_read(bf, c.layers, i == 0));
    if (i > 0 && c.batches[i].batch <= c.batches[i - 1].batch)
      bf.fail("batch", fmt::format("is {} after {}: batch entries must be sorted and distinct", c.batches[i].batch,
                                   c.batches[i - 1].batch));
  }
  totals_check(top, c);
  if (top.has("processes")) c.processes = top.count("processes", 1);
  if (top.has("gradient_noise_scale")) c.noise_scale = top.at("gradient_noise_scale").non_negative("b_simple");
  if (top.has("model_pass")) c.model_pass = stat_read(top.at("model_pass"));
  if (top.has("buffers")) {
    c.buffers.emplace();
    const Json& groups = top.get("buffers");
    if (!groups.is_array()) top.fail("buffers", "must be a list of {dtype, tensors, bytes} ([] for no buffers)");
    for (size_t i = 0; i < groups.size(); ++i) {
      const Fields g = top.item("buffers", i);
      CostBufferGroup b{g.text("dtype"), g.count("tensors", 1), g.count("bytes", 0)};
      for (const CostBufferGroup& seen : *c.buffers)
        if (seen.dtype == b.dtype) g.fail("dtype", fmt::format("'{}' comes twice: one entry per dtype", b.dtype));
      c.buffers->push_back(b);
    }
  }
  return c;
}

CostAtBatch cost_file_at_batch(const CostFile& file, int64_t batch) {
  const std::vector<CostBatch>& bs = file.batches;
  const int64_t lo = bs.front().batch, hi = bs.back().batch;
  const double x = kCostFileExtrapolation;
  if (bs.size() == 1 && lo == kCostBatchUnknown) {
    CostBatch at = bs.front();
    at.batch = batch;
    CostFile one = file;
    one.batches = {at};
    CostAtBatch out = cost_file_at_batch(one, batch);
    out.how =
        fmt::format("as traced (the trace records no batch size: its times are taken as those at batch {})", batch);
    return out;
  }
  if (bs.size() == 1 && batch != lo && file.source == CostSource::cost_source_chakra)
    DSGD_THROW(InputError,
               fmt::format("use --batch {}: a trace is one step at one batch, and its times are not scaled to "
                           "another (docs/chakra.md)",
                           lo),
               "--batch {}: Chakra trace {} was recorded at batch {}", batch, file.path, lo);
  if (bs.size() == 1 && batch != lo)
    DSGD_THROW(InputError,
               fmt::format("use --batch {}, or export the model at two or more batch sizes (--batches) so that "
                           "time can be fitted as t0 + k*batch",
                           lo),
               "--batch {}: cost file {} was measured at batch {} only", batch, file.path, lo);
  if (static_cast<double>(batch) < static_cast<double>(lo) / x ||
      static_cast<double>(batch) > static_cast<double>(hi) * x)
    DSGD_THROW(InputError,
               fmt::format("use a batch in {}..{} ({:g}x beyond the measured {}..{}), or export the model at batches "
                           "nearer the one you want",
                           std::max<int64_t>(1, static_cast<int64_t>(std::ceil(static_cast<double>(lo) / x))),
                           static_cast<int64_t>(static_cast<double>(hi) * x), x, lo, hi),
               "--batch {}: outside what cost file {} can scale to", batch, file.path);
  CostAtBatch out;
  auto at = [&](auto get) { return fit_at(bs, batch, get); };
  const double step = at([](const CostBatch& b) { return b.step.median_s; });
  out.fwd_s = at([](const CostBatch& b) { return b.forward.median_s; });
  const double backward = at([](const CostBatch& b) { return b.backward.median_s; });
  out.opt_s = at([](const CostBatch& b) { return b.optimizer.median_s; });
  // Backward per layer with parameters; a parameter-less layer's time goes to the next layer
  // whose gradient becomes ready (backward runs in reverse order), else to the rest.
  double pending = 0, layers_sum = 0;
  std::vector<double> reversed;
  for (size_t l = file.layers.size(); l-- > 0;) {
    const double t = at([l](const CostBatch& b) { return b.layer_bwd[l].median_s; });
    layers_sum += t;
    pending += t;
    if (file.layers[l].parameter_bytes > 0) {
      reversed.push_back(pending);
      pending = 0;
    }
  }
  out.bwd_layer_s.assign(reversed.rbegin(), reversed.rend());
  out.bwd_rest_s = pending;
  // The whole backward is measured without hooks; the layers' times only split it: scaled to
  // it, down when the hooks' own cost makes them add up to more, up when work the hooks miss
  // (between modules, in autograd) makes them add up to less. That work happens during the
  // backward, so it is spread over the layers, not charged after the last gradient, where it
  // would hide a bucket's all-reduce.
  if (layers_sum > 0) {
    const double scale = backward / layers_sum;
    for (double& t : out.bwd_layer_s) t *= scale;
    out.bwd_rest_s *= scale;
  } else {
    out.bwd_rest_s = backward;
  }
  out.data_s = std::max(0.0, step - out.fwd_s - backward - out.opt_s);
  for (const CostBatch& b : bs) out.step_spread = std::max(out.step_spread, b.step.spread);
  out.step_s = step;
  double nearest = 0;
  for (const CostBatch& b : bs) {
    if (b.step.times_s.size() < 2) continue;
    const double ratio = std::abs(std::log(static_cast<double>(std::max<int64_t>(b.batch, 1)) /
                                           static_cast<double>(std::max<int64_t>(batch, 1))));
    if (out.step_times_s.empty() || ratio < nearest) {
      out.step_times_s = b.step.times_s;
      out.step_times_batch = b.batch;
      nearest = ratio;
    }
  }
  if (bs.size() == 1 && file.source == CostSource::cost_source_chakra) {
    out.how = "as traced";
  } else if (bs.size() == 1) {
    out.how = fmt::format("measured at batch {}", lo);
  } else {
    std::string list;
    for (const CostBatch& b : bs) list += (list.empty() ? "" : ", ") + std::to_string(b.batch);
    out.how = fmt::format("fitted t0 + k*batch over batches {}", list);
  }
  return out;
}

std::vector<CostFileLayer> cost_file_layers(const CostFile& file) {
  std::vector<CostFileLayer> out;
  for (const CostLayer& l : file.layers)
    if (l.parameter_bytes > 0) out.push_back({l.name, static_cast<size_t>((l.parameter_bytes + 3) / 4)});
  return out;
}

std::string cost_file_describe(const CostFile& file) {
  if (file.source == CostSource::cost_source_chakra)
    return fmt::format("Chakra trace {} ({})", file.path, file.source_note);
  return fmt::format("model {} ({} {}, {}; {} {}{}), file {}", file.model, file.framework, file.framework_version,
                     file.dtype, file.device_kind, file.device_name,
                     file.processes > 1 ? fmt::format("; {} processes at once", file.processes) : "", file.path);
}

std::string cost_file_buffers_describe(const CostFile& file) {
  const bool trace = file.source == CostSource::cost_source_chakra;
  if (!file.buffers)
    return trace ? "unknown (a broadcast of the trace has no comm_size)"
                 : "not recorded in the file (an older exporter: export it again to have them)";
  if (file.buffers->empty()) return trace ? "none (the trace has no broadcasts)" : "none (the model has no buffers)";
  std::string parts;
  for (const CostBufferGroup& b : *file.buffers)
    parts += trace ? fmt::format("{}{}: {} B", parts.empty() ? "" : ", ", b.dtype, b.bytes)
                   : fmt::format("{}{} B {} in {} tensor{}", parts.empty() ? "" : ", ", b.bytes, b.dtype, b.tensors,
                                 b.tensors == 1 ? "" : "s");
  return fmt::format("{} broadcast{}{} ({})", file.buffers->size(), file.buffers->size() == 1 ? "" : "s",
                     trace ? " of the trace" : "", parts);
}

}  // namespace dsgd
