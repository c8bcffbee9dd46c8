// Reading a Chakra execution trace into a CostFile (chakra_trace.hpp, docs/chakra.md).
#include "workloads/chakra_trace.hpp"

#include <fmt/format.h>

#include "core/errors.hpp"

#if DSGD_HAVE_PROTOBUF

#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <functional>
#include <optional>
#include <queue>
#include <unordered_map>
#include <vector>

#include "chakra_et.pb.h"

namespace dsgd {

namespace {

namespace pb = dsgd::chakra;

constexpr const char* kTraceHint =
    "give one rank's Chakra execution trace (a .et file from Chakra's converter, or tools/chakra_trace.py); "
    "docs/chakra.md";
constexpr const char* kBatchAttr = "batch_size";
constexpr uint64_t kNegativeDuration = uint64_t{1} << 63;  // at or above: a negative int64 in the unsigned field
constexpr uint64_t kMaxMessageBytes = 0x7FFFFFFF;          // protobuf's limit on one message
constexpr int64_t kMaxGradientBytes = int64_t{1} << 50;    // 1 PiB: beyond, a corrupt comm_size

// The whole file, decompressed when it is gzip (zlib reads a plain file as it is).
std::string file_read_all(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr)
    DSGD_THROW(InputError, kTraceHint, "Chakra trace {}: cannot be read (missing, or no permission)", path);
  std::string out;
  char buf[1 << 16];
  int n = 0;
  while ((n = gzread(f, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  int err = Z_OK;
  const std::string zmsg = n < 0 ? gzerror(f, &err) : "";
  gzclose(f);
  if (n < 0)
    DSGD_THROW(InputError, kTraceHint, "Chakra trace {}: cannot be read ({}; a truncated gzip file?)", path, zmsg);
  return out;
}

// One length-delimited message of the stream: where it starts and its bytes.
struct Frame {
  size_t offset = 0;  // of its length varint
  const char* data = nullptr;
  size_t size = 0;
};

// The next frame at `pos`, or nullopt at the end of the file; throws on a truncated one.
// `index` counts messages from 0 (the GlobalMetadata) for the message.
std::optional<Frame> frame_next(const std::string& path, const std::string& bytes, size_t& pos, size_t index) {
  if (pos >= bytes.size()) return std::nullopt;
  Frame f;
  f.offset = pos;
  uint64_t len = 0;
  for (int shift = 0;; shift += 7) {
    if (pos >= bytes.size() || shift > 63) {
      if (index == 0)
        DSGD_THROW(InputError, kTraceHint, "{}: not a Chakra execution trace (it does not start with a length)", path);
      DSGD_THROW(InputError, "the file was cut short: write or copy it again",
                 "Chakra trace {}: truncated: the length of message {} at byte {} runs past the end of the file", path,
                 index, f.offset);
    }
    const auto b = static_cast<unsigned char>(bytes[pos++]);
    len |= static_cast<uint64_t>(b & 0x7F) << shift;
    if ((b & 0x80) == 0) break;
  }
  const size_t remain = bytes.size() - pos;
  if (len > remain || len > kMaxMessageBytes) {
    if (index == 0)
      DSGD_THROW(InputError, kTraceHint,
                 "{}: not a Chakra execution trace (its first message would be {} bytes long, the file has {} more)",
                 path, len, remain);
    DSGD_THROW(InputError, "the file was cut short: write or copy it again",
               "Chakra trace {}: truncated: message {} at byte {} is {} bytes long, only {} remain", path, index,
               f.offset, len, remain);
  }
  f.data = bytes.data() + pos;
  f.size = static_cast<size_t>(len);
  pos += f.size;
  return f;
}

// An integer attribute in any of the schema's integer encodings (Chakra's tools write
// comm_type and comm_size as int64, tensor_size as uint64; other writers differ).
std::optional<int64_t> attr_integer(const pb::AttributeProto& a) {
  switch (a.value_case()) {
    case pb::AttributeProto::kInt32Val: return a.int32_val();
    case pb::AttributeProto::kInt64Val: return a.int64_val();
    case pb::AttributeProto::kUint32Val: return a.uint32_val();
    case pb::AttributeProto::kUint64Val: return static_cast<int64_t>(a.uint64_val());
    case pb::AttributeProto::kSint32Val: return a.sint32_val();
    case pb::AttributeProto::kSint64Val: return a.sint64_val();
    case pb::AttributeProto::kFixed32Val: return a.fixed32_val();
    case pb::AttributeProto::kFixed64Val: return static_cast<int64_t>(a.fixed64_val());
    case pb::AttributeProto::kSfixed32Val: return a.sfixed32_val();
    case pb::AttributeProto::kSfixed64Val: return a.sfixed64_val();
    default: return std::nullopt;
  }
}

template <typename Attrs>
const pb::AttributeProto* attr_find(const Attrs& attrs, const char* name) {
  for (const pb::AttributeProto& a : attrs)
    if (a.name() == name) return &a;
  return nullptr;
}

std::string node_label(const pb::Node& n) {
  return n.name().empty() ? fmt::format("node {}", n.id()) : fmt::format("node {} '{}'", n.id(), n.name());
}

bool name_says_backward(const std::string& name) {
  std::string lower = name;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  return lower.find("backward") != std::string::npos;
}

std::string coll_name(int64_t t) {
  if (t >= 0 && t <= pb::CollectiveCommType_MAX && pb::CollectiveCommType_IsValid(static_cast<int>(t)))
    return pb::CollectiveCommType_Name(static_cast<pb::CollectiveCommType>(t));
  return "unknown";
}

struct Trace {
  std::string version;  // GlobalMetadata.version, else its "schema" attribute
  int64_t batch = kCostBatchUnknown;
  std::vector<pb::Node> nodes;  // file order
};

// Phase 1: the messages of the file, each parsed.
Trace trace_parse(const std::string& path, const std::string& bytes) {
  Trace t;
  size_t pos = 0;
  const std::optional<Frame> first = frame_next(path, bytes, pos, 0);
  pb::GlobalMetadata meta;
  if (!first) DSGD_THROW(InputError, kTraceHint, "{}: not a Chakra execution trace (the file is empty)", path);
  if (!meta.ParseFromArray(first->data, static_cast<int>(first->size)))
    DSGD_THROW(InputError, kTraceHint, "{}: not a Chakra execution trace (its first message is not a GlobalMetadata)",
               path);
  t.version = meta.version();
  if (const pb::AttributeProto* s = attr_find(meta.attr(), "schema"); t.version.empty() && s)
    t.version = s->string_val();
  if (const pb::AttributeProto* b = attr_find(meta.attr(), kBatchAttr)) {
    const std::optional<int64_t> v = attr_integer(*b);
    if (!v || *v < 1)
      DSGD_THROW(InputError, "write the batch as a positive integer attribute (tools/chakra_trace.py set-batch)",
                 "Chakra trace {}: the GlobalMetadata attribute {} is not a positive integer", path, kBatchAttr);
    t.batch = *v;
  }
  for (size_t index = 1;; ++index) {
    const std::optional<Frame> f = frame_next(path, bytes, pos, index);
    if (!f) break;
    pb::Node& n = t.nodes.emplace_back();
    if (!n.ParseFromArray(f->data, static_cast<int>(f->size)))
      DSGD_THROW(InputError, "the file is corrupt: write or copy it again",
                 "Chakra trace {}: message {} at byte {} ({} bytes) does not parse as a Chakra Node", path, index,
                 f->offset, f->size);
  }
  return t;
}

// Phase 2: the nodes in execution order: data dependencies first, ties in file order. Control
// dependencies are not followed: Chakra's PyTorch converter moves the execution order into the
// data dependencies and leaves in ctrl_deps the calling operator, often one not in the trace
// (ASTRA-sim's feeder reads data_deps alone too).
std::vector<size_t> trace_order(const std::string& path, const Trace& t) {
  std::unordered_map<uint64_t, size_t> at;
  for (size_t i = 0; i < t.nodes.size(); ++i)
    if (!at.emplace(t.nodes[i].id(), i).second)
      DSGD_THROW(InputError, kTraceHint, "Chakra trace {}: two nodes have id {}", path, t.nodes[i].id());
  std::vector<std::vector<size_t>> children(t.nodes.size());
  std::vector<size_t> waiting(t.nodes.size(), 0);
  for (size_t i = 0; i < t.nodes.size(); ++i) {
    const pb::Node& n = t.nodes[i];
    auto add = [&](uint64_t dep) {
      const auto it = at.find(dep);
      if (it == at.end())
        DSGD_THROW(InputError, kTraceHint, "Chakra trace {}: {} depends on node {}, which the trace does not have",
                   path, node_label(n), dep);
      children[it->second].push_back(i);
      ++waiting[i];
    };
    for (uint64_t d : n.data_deps()) add(d);
  }
  std::priority_queue<size_t, std::vector<size_t>, std::greater<>> ready;
  for (size_t i = 0; i < t.nodes.size(); ++i)
    if (waiting[i] == 0) ready.push(i);
  std::vector<size_t> order;
  order.reserve(t.nodes.size());
  while (!ready.empty()) {
    const size_t i = ready.top();
    ready.pop();
    order.push_back(i);
    for (size_t c : children[i])
      if (--waiting[c] == 0) ready.push(c);
  }
  if (order.size() != t.nodes.size()) {
    size_t stuck = 0;
    while (waiting[stuck] == 0) ++stuck;
    DSGD_THROW(InputError, kTraceHint, "Chakra trace {}: the dependencies form a cycle ({} is on or after one)", path,
               node_label(t.nodes[stuck]));
  }
  return order;
}

// Phase 3: what each node is to the cost model.

bool node_is_cpu_op(const pb::Node& n) {
  const pb::AttributeProto* cpu = attr_find(n.attr(), "is_cpu_op");
  return cpu != nullptr && cpu->bool_val();
}
// role_allreduce and role_reduce_scatter are the two kinds of gradient bucket: a data-parallel
// step all-reduces its gradients, a sharded one (FSDP, ZeRO) reduce-scatters them.
enum class NodeRole { role_compute, role_cpu_op, role_allreduce, role_reduce_scatter, role_left_out };

struct Counts {
  size_t compute = 0, cpu_ops = 0, barriers = 0, all_gathers = 0, other = 0;
  double exchange_us = 0;        // the trace's own time in the gradient collectives
  int64_t all_gather_bytes = 0;  // their comm_size, where given
  // The device broadcasts (DDP's of the buffers before each forward), in trace order, and
  // those without a positive comm_size (which cannot be costed).
  std::vector<CostBufferGroup> broadcasts;
  size_t broadcasts_unsized = 0;
};

NodeRole node_role(const std::string& path, const pb::Node& n, bool device_compute, Counts& counts) {
  if (n.duration_micros() >= kNegativeDuration)
    DSGD_THROW(InputError, kTraceHint,
               "Chakra trace {}: {} has a negative duration (duration_micros {} is a negative number written into "
               "Chakra's unsigned field)",
               path, node_label(n), n.duration_micros());
  const bool compute_or_collective = n.type() == pb::COMP_NODE || n.type() == pb::COMM_COLL_NODE;
  if (compute_or_collective && device_compute && node_is_cpu_op(n)) {  // a host-side operator or launch
    ++counts.cpu_ops;
    return NodeRole::role_cpu_op;
  }
  switch (n.type()) {
    case pb::COMP_NODE: ++counts.compute; return NodeRole::role_compute;
    case pb::COMM_COLL_NODE: {
      const pb::AttributeProto* type = attr_find(n.attr(), "comm_type");
      const std::optional<int64_t> kind = type ? attr_integer(*type) : std::nullopt;
      if (!kind)
        DSGD_THROW(InputError, kTraceHint, "Chakra trace {}: collective {} has no integer comm_type attribute", path,
                   node_label(n));
      if (*kind == pb::ALL_REDUCE || *kind == pb::REDUCE_SCATTER || *kind == pb::REDUCE_SCATTER_BLOCK) {
        counts.exchange_us += static_cast<double>(n.duration_micros());
        return *kind == pb::ALL_REDUCE ? NodeRole::role_allreduce : NodeRole::role_reduce_scatter;
      }
      if (*kind == pb::ALL_GATHER) {  // a sharded step's parameter gather: the network model costs its own
        ++counts.all_gathers;
        const pb::AttributeProto* size = attr_find(n.attr(), "comm_size");
        const std::optional<int64_t> bytes = size ? attr_integer(*size) : std::nullopt;
        if (bytes && *bytes > 0 && *bytes <= kMaxGradientBytes - counts.all_gather_bytes)
          counts.all_gather_bytes += *bytes;
        return NodeRole::role_left_out;
      }
      if (*kind == pb::BROADCAST) {  // costed by the network model where the variant broadcasts (ssgd: DDP)
        const pb::AttributeProto* size = attr_find(n.attr(), "comm_size");
        const std::optional<int64_t> bytes = size ? attr_integer(*size) : std::nullopt;
        if (bytes && *bytes > 0 && *bytes <= kMaxGradientBytes)
          counts.broadcasts.push_back(CostBufferGroup{node_label(n), 0, *bytes});
        else
          ++counts.broadcasts_unsized;
        return NodeRole::role_left_out;
      }
      if (*kind == pb::BARRIER) {
        ++counts.barriers;
        return NodeRole::role_left_out;
      }
      DSGD_THROW(InputError,
                 "dsgd-bench costs the gradient exchange of a data-parallel or sharded step only (all-reduce, "
                 "reduce-scatter; docs/chakra.md)",
                 "Chakra trace {}: {} is a collective of type {} (comm_type {}), which dsgd-bench cannot cost", path,
                 node_label(n), coll_name(*kind), *kind);
    }
    case pb::COMM_SEND_NODE:
    case pb::COMM_RECV_NODE:
      DSGD_THROW(InputError, "dsgd-bench costs the gradient all-reduces of a data-parallel step only (docs/chakra.md)",
                 "Chakra trace {}: {} is a point-to-point {} (pipeline parallelism), which dsgd-bench cannot cost",
                 path, node_label(n), n.type() == pb::COMM_SEND_NODE ? "send" : "receive");
    case pb::METADATA_NODE:
    case pb::MEM_LOAD_NODE:
    case pb::MEM_STORE_NODE: ++counts.other; return NodeRole::role_left_out;
    default:
      DSGD_THROW(InputError, kTraceHint, "Chakra trace {}: {} has no node type (type {})", path, node_label(n),
                 static_cast<int>(n.type()));
  }
}

// One gradient bucket in trace order: the backward compute before its all-reduce (or
// reduce-scatter).
struct Bucket {
  std::string name;
  double backward_us = 0;
  int64_t bytes = 0;
};

std::string file_stem(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  const size_t dot = base.find('.');
  return dot == std::string::npos || dot == 0 ? base : base.substr(0, dot);
}

}  // namespace

bool chakra_trace_supported() {
  return true;
}

CostFile chakra_trace_read(const std::string& path) {
  const google::protobuf::LogSilencer quiet;  // a failed parse is reported here, not by protobuf's log
  const Trace t = trace_parse(path, file_read_all(path));
  const std::vector<size_t> order = trace_order(path, t);

  // Device work: any compute node not marked as a CPU op (an unmarked one counts as device).
  // Then the CPU ops (and the host side of collectives) are left out: their time overlaps the
  // kernels they launch.
  const bool device_compute = std::any_of(t.nodes.begin(), t.nodes.end(), [](const pb::Node& n) {
    return n.type() == pb::COMP_NODE && !node_is_cpu_op(n);
  });

  Counts counts;
  double forward_us = 0, pending_us = 0, compute_us = 0;
  size_t forward_nodes = 0;
  bool named_backward = false;  // a compute node named *backward* before the first bucket's collective
  int64_t gradient_bytes = 0;
  std::vector<Bucket> buckets;               // trace order
  const pb::Node* first_exchange = nullptr;  // the first bucket's collective, and its kind
  NodeRole exchange = NodeRole::role_allreduce;
  for (size_t i : order) {
    const pb::Node& n = t.nodes[i];
    const NodeRole role = node_role(path, n, device_compute, counts);
    switch (role) {
      case NodeRole::role_compute: {
        const double us = static_cast<double>(n.duration_micros());
        compute_us += us;
        if (buckets.empty() && !named_backward && name_says_backward(n.name())) named_backward = true;
        if (buckets.empty() && !named_backward) {
          forward_us += us;
          ++forward_nodes;
        } else {
          pending_us += us;
        }
        break;
      }
      case NodeRole::role_allreduce:
      case NodeRole::role_reduce_scatter: {
        const char* kind = role == NodeRole::role_allreduce ? "all-reduce" : "reduce-scatter";
        if (first_exchange == nullptr) {
          first_exchange = &n;
          exchange = role;
        } else if (role != exchange) {  // hybrid sharding: reduce-scatter in a group, all-reduce across
          DSGD_THROW(InputError,
                     "trace the model under plain data parallelism (DDP) or full sharding (FSDP FULL_SHARD or "
                     "SHARD_GRAD_OP, ZeRO); docs/chakra.md",
                     "Chakra trace {}: {} is a {} and {} an {}: a step that exchanges gradients both ways (hybrid "
                     "sharding), which dsgd-bench cannot cost",
                     path, node_label(n), kind, node_label(*first_exchange),
                     exchange == NodeRole::role_allreduce ? "all-reduce" : "reduce-scatter");
        }
        const pb::AttributeProto* size = attr_find(n.attr(), "comm_size");
        const std::optional<int64_t> bytes = size ? attr_integer(*size) : std::nullopt;
        if (!bytes || *bytes <= 0)
          DSGD_THROW(InputError, kTraceHint,
                     "Chakra trace {}: {} {} has no positive comm_size attribute (its gradient bytes)", path, kind,
                     node_label(n));
        if (*bytes > kMaxGradientBytes - gradient_bytes)
          DSGD_THROW(InputError, kTraceHint,
                     "Chakra trace {}: {} {} has comm_size {}, which brings the gradients above 2^50 bytes", path, kind,
                     node_label(n), *bytes);
        gradient_bytes += *bytes;
        buckets.push_back({fmt::format("{}#{}", n.name().empty() ? kind : n.name(), n.id()), pending_us, *bytes});
        pending_us = 0;
        break;
      }
      case NodeRole::role_cpu_op:
      case NodeRole::role_left_out: break;
    }
  }
  if (counts.compute == 0)
    DSGD_THROW(InputError, kTraceHint, "Chakra trace {}: no compute nodes (COMP_NODE), so no compute time", path);
  if (compute_us <= 0)
    DSGD_THROW(InputError,
               "give a trace with measured durations: dsgd-bench has no device model to time num_ops (docs/chakra.md)",
               "Chakra trace {}: every compute node has duration_micros 0", path);
  if (buckets.empty())
    DSGD_THROW(InputError,
               "trace a data-parallel step (DDP: gradients all-reduced in buckets) or a sharded one (FSDP, ZeRO: "
               "reduce-scattered)",
               "Chakra trace {}: no ALL_REDUCE or REDUCE_SCATTER collective, so no gradients to exchange", path);
  const bool sharded = exchange == NodeRole::role_reduce_scatter;
  const char* exchange_name = sharded ? "reduce-scatter" : "all-reduce";

  // If no node was named like a backward op, the forward is not known: it counts as the first
  // bucket's backward (the same gradient-ready times), and the forward is 0.
  const bool forward_known = named_backward;
  if (!forward_known) {
    buckets.front().backward_us += forward_us;
    forward_us = 0;
  }
  const double optimizer_us = pending_us;

  CostFile c;
  c.source = CostSource::cost_source_chakra;
  c.path = path;
  c.model = file_stem(path);
  c.framework = "chakra";
  c.framework_version = t.version.empty() ? "unknown" : t.version;
  c.dtype = "unknown";
  c.device_kind = device_compute ? "device" : "cpu";
  CostBatch b;
  b.batch = t.batch;
  b.iterations = 1;
  double backward_us = 0;
  for (size_t k = buckets.size(); k-- > 0;) {  // forward order: the last bucket reduced holds the first layers
    const Bucket& bk = buckets[k];
    CostLayer l;
    l.name = bk.name;
    l.type = sharded ? "REDUCE_SCATTER" : "ALL_REDUCE";
    l.parameter_bytes = bk.bytes;
    l.parameters = (bk.bytes + 3) / 4;
    c.parameters += l.parameters;
    c.parameter_bytes += l.parameter_bytes;
    c.layers.push_back(l);
    b.layer_fwd.push_back(CostStat{0, 0, 1, {}});
    b.layer_bwd.push_back(CostStat{bk.backward_us * 1e-6, 0, 1, {}});
    backward_us += bk.backward_us;
  }
  b.forward = CostStat{forward_us * 1e-6, 0, 1, {}};
  b.backward = CostStat{backward_us * 1e-6, 0, 1, {}};
  b.optimizer = CostStat{optimizer_us * 1e-6, 0, 1, {}};
  b.step = CostStat{(forward_us + backward_us + optimizer_us) * 1e-6, 0, 1, {}};
  c.batches.push_back(b);
  // The trace's broadcasts, as a cost file's buffers: --algo ssgd (DDP) charges them before each
  // forward. Unknown when one has no size: then none is charged (the note says why).
  if (counts.broadcasts_unsized == 0) c.buffers = counts.broadcasts;

  std::string left_out;
  auto leave = [&](size_t n, const char* what) {
    if (n > 0) left_out += fmt::format("{}{} {}", left_out.empty() ? "" : ", ", n, what);
  };
  leave(counts.cpu_ops, "CPU-op nodes");
  leave(counts.broadcasts_unsized + (counts.broadcasts_unsized > 0 ? counts.broadcasts.size() : 0),
        "broadcasts (not all with a comm_size)");
  leave(counts.barriers, "barriers");
  leave(counts.other, "memory or metadata nodes");
  if (counts.all_gathers > 0)  // a sharded step's parameter gathers: --algo zero costs its own
    left_out += fmt::format("{}{} all-gathers ({:.4g} MB: the parameter gathers, costed again by --algo zero)",
                            left_out.empty() ? "" : ", ", counts.all_gathers,
                            static_cast<double>(counts.all_gather_bytes) / 1e6);
  c.source_note = fmt::format(
      "schema {}; {}; {} compute nodes, {} {} buckets{}, {:.4g} MB of gradients; {}; the trace's own {}s took "
      "{:.4g} ms, not used{}",
      c.framework_version, t.batch == kCostBatchUnknown ? "no batch recorded" : fmt::format("batch {}", t.batch),
      counts.compute, buckets.size(), exchange_name, sharded ? " (a sharded step: FSDP or ZeRO)" : "",
      static_cast<double>(c.parameter_bytes) / 1e6,
      forward_known ? fmt::format("forward: the {} compute nodes before the first named *backward*", forward_nodes)
                    : std::string("no compute node named *backward*: forward 0, counted in the first bucket"),
      exchange_name, counts.exchange_us / 1e3, left_out.empty() ? "" : "; left out: " + left_out);
  if (c.buffers && !c.buffers->empty()) {
    int64_t bytes = 0;
    for (const CostBufferGroup& g : *c.buffers) bytes += g.bytes;
    c.source_note +=
        fmt::format("; {} broadcast{} of {} B in all (the buffers DDP broadcasts: --algo ssgd charges them)",
                    c.buffers->size(), c.buffers->size() == 1 ? "" : "s", bytes);
  }
  return c;
}

}  // namespace dsgd

#else  // no protobuf: the workload is refused, saying what to install

namespace dsgd {

bool chakra_trace_supported() {
  return false;
}

CostFile chakra_trace_read(const std::string& path) {
  DSGD_THROW(InputError,
             "install libprotobuf-dev and protobuf-compiler (scripts/install-deps.sh) and build again with "
             "-DDSGD_WITH_PROTOBUF=ON",
             "Chakra trace {}: this dsgd-bench was built without protobuf, so it cannot read Chakra traces", path);
}

}  // namespace dsgd

#endif
