// The Chakra trace reader (workloads/chakra_trace): the committed example trace
// (tests/data/chakra/mlp3.et, written by tools/chakra_trace.py from mlp3.json) reads back to
// exactly the layer costs and bucket sizes that made it, plain and gzip; the batch it records
// is enforced and a trace without one runs at any batch; CPU-op nodes and host-side
// collective calls are left out, broadcasts kept as the buffers DDP broadcasts (unknown when
// one has no size); without a node named *backward* the forward is 0; nodes run in
// data-dependency order; every kind of bad trace is refused with InputError naming the file
// and what is wrong; the workload's prefix must match the file's kind.
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "workloads/chakra_trace.hpp"
#include "workloads/cost_file.hpp"

#if DSGD_HAVE_PROTOBUF
#include "chakra_et.pb.h"
#endif

using namespace dsgd;

namespace {

std::string example_path() {
  return std::string(DSGD_TEST_DATA_DIR) + "/chakra/mlp3.et";
}

class ChakraTrace : public ::testing::Test {
 protected:
  std::string path_ = ::testing::TempDir() + "chakra_" + std::to_string(getpid()) + "_" +
                      ::testing::UnitTest::GetInstance()->current_test_info()->name();
  void TearDown() override {
    std::remove(path_.c_str());
    std::remove((path_ + ".gz").c_str());
  }
  std::string write_bytes(const std::string& bytes) {
    std::ofstream(path_, std::ios::binary) << bytes;
    return path_;
  }
  // The message of the InputError that reading `path` throws ("" when it reads).
  static std::string refusal(const std::string& path) {
    try {
      chakra_trace_read(path);
    } catch (const InputError& e) {
      return e.what();
    }
    return "";
  }
};

}  // namespace

TEST_F(ChakraTrace, WorkloadPrefix) {
  EXPECT_TRUE(cost_file_workload("chakra:trace.et"));
  EXPECT_EQ(cost_file_path("chakra:/a/b.et"), "/a/b.et");
  EXPECT_TRUE(cost_file_workload("profile:model.json"));
  EXPECT_FALSE(cost_file_workload("resnet"));
}

#if DSGD_HAVE_PROTOBUF

namespace {

namespace pb = dsgd::chakra;

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string varint(uint64_t n) {
  std::string out;
  while (n >= 0x80) {
    out.push_back(static_cast<char>((n & 0x7F) | 0x80));
    n >>= 7;
  }
  out.push_back(static_cast<char>(n));
  return out;
}

std::string framed(const google::protobuf::Message& m) {
  const std::string body = m.SerializeAsString();
  return varint(body.size()) + body;
}

// A trace under construction: a GlobalMetadata (with batch_size when batch > 0), then nodes,
// each by default depending on the previous one.
struct TraceBuilder {
  std::vector<pb::Node> nodes;
  int64_t batch = 32;
  std::string version = "0.0.4";
  std::string schema;  // a "schema" attribute when not empty

  pb::Node& add(pb::NodeType type, const std::string& name, uint64_t us) {
    pb::Node& n = nodes.emplace_back();
    n.set_id(nodes.size() - 1);
    n.set_name(name);
    n.set_type(type);
    n.set_duration_micros(us);
    if (nodes.size() > 1) n.add_data_deps(nodes.size() - 2);
    return n;
  }
  static void attr_int(pb::Node& n, const std::string& name, int64_t v) {
    pb::AttributeProto* a = n.add_attr();
    a->set_name(name);
    a->set_int64_val(v);
  }
  pb::Node& comp(const std::string& name, uint64_t us) { return add(pb::COMP_NODE, name, us); }
  pb::Node& coll(pb::CollectiveCommType type, const std::string& name, uint64_t us, int64_t bytes) {
    pb::Node& n = add(pb::COMM_COLL_NODE, name, us);
    attr_int(n, "comm_type", type);
    attr_int(n, "comm_size", bytes);
    return n;
  }
  static void cpu_op(pb::Node& n) {
    pb::AttributeProto* a = n.add_attr();
    a->set_name("is_cpu_op");
    a->set_bool_val(true);
  }
  pb::GlobalMetadata metadata() const {
    pb::GlobalMetadata meta;
    meta.set_version(version);
    if (!schema.empty()) {
      pb::AttributeProto* a = meta.add_attr();
      a->set_name("schema");
      a->set_string_val(schema);
    }
    if (batch != 0) {
      pb::AttributeProto* a = meta.add_attr();
      a->set_name("batch_size");
      a->set_int64_val(batch);
    }
    return meta;
  }
  std::string bytes() const {
    std::string out = framed(metadata());
    for (const pb::Node& n : nodes) out += framed(n);
    return out;
  }
};

// A minimal valid step: forward, backward, one all-reduce, optimizer.
TraceBuilder small() {
  TraceBuilder t;
  t.comp("fwd", 100);
  t.comp("bwd_backward", 200);
  t.coll(pb::ALL_REDUCE, "ar", 50, 4000);
  t.comp("opt", 10);
  return t;
}

void expect_example(const CostFile& f, const std::string& path) {
  EXPECT_EQ(f.source, CostSource::cost_source_chakra);
  EXPECT_EQ(f.path, path);
  EXPECT_EQ(f.framework_version, "0.0.4");
  ASSERT_EQ(f.layers.size(), 3u);
  // Forward order: the bucket reduced last holds the first layers.
  EXPECT_EQ(f.layers[0].name, "allreduce_fc1#14");
  EXPECT_EQ(f.layers[1].name, "allreduce_fc2#11");
  EXPECT_EQ(f.layers[2].name, "allreduce_fc3#8");
  EXPECT_EQ(f.layers[0].parameter_bytes, 803840);
  EXPECT_EQ(f.layers[1].parameter_bytes, 131584);
  EXPECT_EQ(f.layers[2].parameter_bytes, 5160);
  EXPECT_EQ(f.layers[0].parameters, 200960);
  EXPECT_EQ(f.parameter_bytes, 803840 + 131584 + 5160);
  ASSERT_EQ(f.batches.size(), 1u);
  const CostBatch& b = f.batches[0];
  EXPECT_EQ(b.batch, 32);
  EXPECT_DOUBLE_EQ(b.forward.median_s, 160e-6);  // fc1 100 + relu1 8 + fc2 30 + relu2 4 + fc3 6 + loss 12
  ASSERT_EQ(b.layer_bwd.size(), 3u);
  EXPECT_DOUBLE_EQ(b.layer_bwd[0].median_s, 219e-6);  // relu1_backward 9 + fc1_backward 210
  EXPECT_DOUBLE_EQ(b.layer_bwd[1].median_s, 65e-6);   // relu2_backward 5 + fc2_backward 60
  EXPECT_DOUBLE_EQ(b.layer_bwd[2].median_s, 24e-6);   // loss_backward 10 + fc3_backward 14
  EXPECT_DOUBLE_EQ(b.backward.median_s, 308e-6);
  EXPECT_DOUBLE_EQ(b.optimizer.median_s, 40e-6);
  EXPECT_DOUBLE_EQ(b.step.median_s, 508e-6);
  EXPECT_NE(f.source_note.find("batch 32; 13 compute nodes, 3 all-reduce buckets"), std::string::npos) << f.source_note;
  EXPECT_NE(f.source_note.find("all-reduces took 0.755 ms, not used"), std::string::npos) << f.source_note;
  EXPECT_NE(cost_file_describe(f).find("Chakra trace " + path), std::string::npos);
}

}  // namespace

TEST_F(ChakraTrace, ReadsTheExampleToTheCostsThatMadeIt) {
  const CostFile f = chakra_trace_read(example_path());
  expect_example(f, example_path());
  const CostAtBatch at = cost_file_at_batch(f, 32);
  EXPECT_DOUBLE_EQ(at.fwd_s, 160e-6);
  ASSERT_EQ(at.bwd_layer_s.size(), 3u);
  EXPECT_DOUBLE_EQ(at.bwd_layer_s[0], 219e-6);
  EXPECT_DOUBLE_EQ(at.bwd_layer_s[1], 65e-6);
  EXPECT_DOUBLE_EQ(at.bwd_layer_s[2], 24e-6);
  EXPECT_DOUBLE_EQ(at.bwd_rest_s, 0);
  EXPECT_DOUBLE_EQ(at.opt_s, 40e-6);
  EXPECT_LT(at.data_s, 1e-15);
  const std::vector<CostFileLayer> layers = cost_file_layers(f);
  ASSERT_EQ(layers.size(), 3u);
  EXPECT_EQ(layers[0].floats, 200960u);
  EXPECT_EQ(layers[1].floats, 32896u);
  EXPECT_EQ(layers[2].floats, 1290u);
  ASSERT_TRUE(f.buffers.has_value());  // no broadcasts: nothing to charge, and known to be nothing
  EXPECT_TRUE(f.buffers->empty());
  EXPECT_EQ(cost_file_buffers_describe(f), "none (the trace has no broadcasts)");
}

TEST_F(ChakraTrace, ReadsGzip) {
  const std::string bytes = file_bytes(example_path());
  const std::string gz = path_ + ".gz";
  gzFile f = gzopen(gz.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())), static_cast<int>(bytes.size()));
  gzclose(f);
  expect_example(chakra_trace_read(gz), gz);
}

TEST_F(ChakraTrace, LoadsByPrefixAndByContent) {
  expect_example(cost_file_load("chakra:" + example_path()), example_path());
  expect_example(cost_file_read(example_path()), example_path());  // by content: not JSON
  try {
    cost_file_load("profile:" + example_path());
    FAIL() << "a trace given as profile: was read";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("is not JSON"), std::string::npos) << e.what();
    EXPECT_NE(e.hint().find("chakra:"), std::string::npos) << e.hint();
  }
  write_bytes(R"({"format": "dsgd-model-cost"})");
  try {
    cost_file_load("chakra:" + path_);
    FAIL() << "a JSON file given as chakra: was read";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("is JSON, not a Chakra execution trace"), std::string::npos) << e.what();
  }
}

// A GlobalMetadata of 123 bytes makes the file start with '{', as JSON does.
TEST_F(ChakraTrace, AMetadataOf123BytesIsNotTakenForJson) {
  for (const char* version : {"", "0.0.4"}) {
    TraceBuilder t = small();
    t.version = version;
    while (t.metadata().ByteSizeLong() < 123) t.schema += "x";
    ASSERT_EQ(t.metadata().ByteSizeLong(), 123u) << version;
    ASSERT_EQ(t.bytes()[0], '{');
    write_bytes(t.bytes());
    EXPECT_EQ(cost_file_load("chakra:" + path_).layers.size(), 1u) << version;
    EXPECT_EQ(cost_file_read(path_).layers.size(), 1u) << version;
  }
}

TEST_F(ChakraTrace, TheRecordedBatchIsEnforced) {
  const CostFile f = chakra_trace_read(example_path());
  try {
    cost_file_at_batch(f, 64);
    FAIL() << "batch 64 accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--batch 64: Chakra trace " + example_path() + " was recorded at batch 32"),
              std::string::npos)
        << e.what();
    EXPECT_NE(e.hint().find("use --batch 32"), std::string::npos);
  }
}

TEST_F(ChakraTrace, WithoutABatchAnyBatchIsTheTraces) {
  TraceBuilder t = small();
  t.batch = 0;
  const CostFile f = chakra_trace_read(write_bytes(t.bytes()));
  EXPECT_EQ(f.batches[0].batch, kCostBatchUnknown);
  EXPECT_NE(f.source_note.find("no batch recorded"), std::string::npos);
  for (int64_t b : {1, 32, 4096}) {
    const CostAtBatch at = cost_file_at_batch(f, b);
    EXPECT_DOUBLE_EQ(at.fwd_s, 100e-6);
    EXPECT_NE(at.how.find("records no batch size"), std::string::npos) << at.how;
  }
}

TEST_F(ChakraTrace, CpuOpsAndHostCollectivesAreLeftOutAndBroadcastsKeptForDdp) {
  TraceBuilder t;
  TraceBuilder::cpu_op(t.comp("aten::linear", 500));
  t.comp("gemm", 100);
  t.coll(pb::BROADCAST, "bcast", 7, 1024);
  TraceBuilder::cpu_op(t.comp("aten::linear_backward", 700));
  t.comp("gemm_backward", 200);
  TraceBuilder::cpu_op(t.add(pb::COMM_COLL_NODE, "c10d::allreduce_", 30));  // host side: no comm_type
  t.coll(pb::ALL_REDUCE, "nccl_allreduce", 50, 4000);
  t.add(pb::MEM_LOAD_NODE, "load", 3);
  const CostFile f = chakra_trace_read(write_bytes(t.bytes()));
  const CostBatch& b = f.batches[0];
  EXPECT_DOUBLE_EQ(b.forward.median_s, 100e-6);
  ASSERT_EQ(b.layer_bwd.size(), 1u);
  EXPECT_DOUBLE_EQ(b.layer_bwd[0].median_s, 200e-6);
  EXPECT_DOUBLE_EQ(b.optimizer.median_s, 0);
  EXPECT_NE(f.source_note.find("left out: 3 CPU-op nodes, 1 memory or metadata nodes"), std::string::npos)
      << f.source_note;
  // The broadcast (DDP's of the buffers) is kept as the file's buffers: ssgd charges it.
  ASSERT_TRUE(f.buffers.has_value());
  ASSERT_EQ(f.buffers->size(), 1u);
  EXPECT_EQ((*f.buffers)[0].bytes, 1024);
  EXPECT_EQ(cost_file_buffers_describe(f), "1 broadcast of the trace (node 2 'bcast': 1024 B)");
  EXPECT_NE(f.source_note.find("; 1 broadcast of 1024 B in all (the buffers DDP broadcasts: --algo ssgd charges them)"),
            std::string::npos)
      << f.source_note;
}

TEST_F(ChakraTrace, ABroadcastWithoutASizeLeavesTheBroadcastsUnknown) {
  TraceBuilder t;
  t.comp("gemm", 100);
  t.coll(pb::BROADCAST, "bcast", 7, 1024);
  t.coll(pb::BROADCAST, "bcast_unsized", 7, 0);
  t.comp("gemm_backward", 200);
  t.coll(pb::ALL_REDUCE, "nccl_allreduce", 50, 4000);
  const CostFile f = chakra_trace_read(write_bytes(t.bytes()));
  EXPECT_FALSE(f.buffers.has_value());
  EXPECT_NE(f.source_note.find("left out: 2 broadcasts (not all with a comm_size)"), std::string::npos)
      << f.source_note;
  EXPECT_EQ(cost_file_buffers_describe(f), "unknown (a broadcast of the trace has no comm_size)");
}

TEST_F(ChakraTrace, CpuOnlyTracesCountTheirCpuOps) {
  TraceBuilder t;
  TraceBuilder::cpu_op(t.comp("fwd", 100));
  TraceBuilder::cpu_op(t.comp("x_backward", 200));
  t.coll(pb::ALL_REDUCE, "ar", 50, 4000);
  const CostFile f = chakra_trace_read(write_bytes(t.bytes()));
  EXPECT_DOUBLE_EQ(f.batches[0].step.median_s, 300e-6);
  EXPECT_EQ(f.source_note.find("left out"), std::string::npos) << f.source_note;
}

TEST_F(ChakraTrace, WithoutABackwardNameTheForwardIsZero) {
  TraceBuilder t;
  t.comp("a", 100);
  t.comp("b", 200);
  t.coll(pb::ALL_REDUCE, "ar1", 5, 4000);
  t.comp("c", 30);
  t.coll(pb::ALL_REDUCE, "ar2", 5, 8000);
  t.comp("opt", 10);
  const CostFile f = chakra_trace_read(write_bytes(t.bytes()));
  const CostBatch& b = f.batches[0];
  EXPECT_DOUBLE_EQ(b.forward.median_s, 0);
  ASSERT_EQ(b.layer_bwd.size(), 2u);
  EXPECT_DOUBLE_EQ(b.layer_bwd[0].median_s, 30e-6);   // ar2's bucket (forward order first)
  EXPECT_DOUBLE_EQ(b.layer_bwd[1].median_s, 300e-6);  // ar1's: the whole compute before it
  EXPECT_NE(f.source_note.find("no compute node named *backward*"), std::string::npos) << f.source_note;
}

// A sharded step (FSDP FULL_SHARD): parameters all-gathered before each unit's forward and
// again before its backward, gradients reduce-scattered after it. The reduce-scatters are the
// buckets (their comm_size the whole bucket), the all-gathers are left out and counted.
TEST_F(ChakraTrace, ShardedStepsReadTheirReduceScattersAsBuckets) {
  TraceBuilder t;
  t.coll(pb::ALL_GATHER, "ag_unit0", 20, 1000);
  t.comp("unit0_fwd", 100);
  t.coll(pb::ALL_GATHER, "ag_unit1", 30, 2000);
  t.comp("unit1_fwd", 50);
  t.coll(pb::ALL_GATHER, "ag_unit1_bwd", 30, 2000);
  t.comp("unit1_backward", 120);
  t.coll(pb::REDUCE_SCATTER, "rs_unit1", 40, 8000);
  t.coll(pb::ALL_GATHER, "ag_unit0_bwd", 20, 1000);
  t.comp("unit0_backward", 200);
  t.coll(pb::REDUCE_SCATTER_BLOCK, "rs_unit0", 25, 4000);
  t.comp("opt", 10);
  const CostFile f = chakra_trace_read(write_bytes(t.bytes()));
  ASSERT_EQ(f.layers.size(), 2u);
  EXPECT_EQ(f.layers[0].name, "rs_unit0#9");  // forward order: the last reduced holds the first layers
  EXPECT_EQ(f.layers[0].type, "REDUCE_SCATTER");
  EXPECT_EQ(f.layers[0].parameter_bytes, 4000);
  EXPECT_EQ(f.layers[1].parameter_bytes, 8000);
  EXPECT_EQ(f.parameter_bytes, 12000);
  const CostBatch& b = f.batches[0];
  EXPECT_DOUBLE_EQ(b.forward.median_s, 150e-6);  // the gathers' time is not compute
  EXPECT_DOUBLE_EQ(b.layer_bwd[0].median_s, 200e-6);
  EXPECT_DOUBLE_EQ(b.layer_bwd[1].median_s, 120e-6);
  EXPECT_DOUBLE_EQ(b.optimizer.median_s, 10e-6);
  EXPECT_DOUBLE_EQ(b.step.median_s, 480e-6);
  EXPECT_NE(f.source_note.find("2 reduce-scatter buckets (a sharded step: FSDP or ZeRO), 0.012 MB of gradients"),
            std::string::npos)
      << f.source_note;
  EXPECT_NE(f.source_note.find("own reduce-scatters took 0.065 ms"), std::string::npos) << f.source_note;
  EXPECT_NE(f.source_note.find("left out: 4 all-gathers (0.006 MB: the parameter gathers"), std::string::npos)
      << f.source_note;
}

TEST_F(ChakraTrace, NodesRunInDependencyOrder) {
  // In the file the optimizer comes first, but it depends on the all-reduce.
  TraceBuilder t;
  t.comp("opt", 10);
  t.comp("fwd", 100);
  t.comp("x_backward", 200);
  t.coll(pb::ALL_REDUCE, "ar", 50, 4000);
  t.nodes[0].add_data_deps(3);
  t.nodes[1].clear_data_deps();
  const CostFile f = chakra_trace_read(write_bytes(t.bytes()));
  EXPECT_DOUBLE_EQ(f.batches[0].forward.median_s, 100e-6);
  EXPECT_DOUBLE_EQ(f.batches[0].layer_bwd[0].median_s, 200e-6);
  EXPECT_DOUBLE_EQ(f.batches[0].optimizer.median_s, 10e-6);
}

TEST_F(ChakraTrace, BadFilesAreRefusedSayingWhy) {
  const std::string example = file_bytes(example_path());
  struct Case {
    const char* what = "";
    std::string bytes;
    const char* expect = "";
  };
  auto with = [](auto edit) {
    TraceBuilder t = small();
    edit(t);
    return t.bytes();
  };
  std::string garbage_node = framed(pb::GlobalMetadata()) + varint(4) + std::string("\xff\xff\xff\xff", 4);
  const std::vector<Case> cases = {
      {"empty", "", "not a Chakra execution trace (the file is empty)"},
      {"text", "hello, world", "not a Chakra execution trace (its first message would be 104 bytes long"},
      {"JSON", R"({"format": "dsgd-model-cost"})", "not a Chakra execution trace"},
      {"truncated", example.substr(0, example.size() - 3), "truncated: message 16 at byte"},
      {"truncated length", example + "\x80", "truncated: the length of message 17"},
      {"corrupt node", garbage_node, "does not parse as a Chakra Node"},
      {"negative duration", with([](TraceBuilder& t) { t.nodes[1].set_duration_micros(static_cast<uint64_t>(-5)); }),
       "node 1 'bwd_backward' has a negative duration (duration_micros 18446744073709551611"},
      {"no type", with([](TraceBuilder& t) { t.nodes[0].set_type(pb::INVALID_NODE); }),
       "node 0 'fwd' has no node type"},
      {"no compute",
       [] {
         TraceBuilder t;
         t.coll(pb::ALL_REDUCE, "ar", 5, 4000);
         return t.bytes();
       }(),
       "no compute nodes (COMP_NODE)"},
      {"zero durations", with([](TraceBuilder& t) {
         for (pb::Node& n : t.nodes)
           if (n.type() == pb::COMP_NODE) n.set_duration_micros(0);
       }),
       "every compute node has duration_micros 0"},
      {"no all-reduce",
       [] {
         TraceBuilder t;
         t.comp("fwd", 5);
         return t.bytes();
       }(),
       "no ALL_REDUCE or REDUCE_SCATTER collective"},
      {"all-to-all", with([](TraceBuilder& t) { t.coll(pb::ALL_TO_ALL, "a2a", 5, 64); }),
       "node 4 'a2a' is a collective of type ALL_TO_ALL (comm_type 6), which dsgd-bench cannot cost"},
      {"all-reduce and reduce-scatter", with([](TraceBuilder& t) { t.coll(pb::REDUCE_SCATTER, "rs", 5, 64); }),
       "node 4 'rs' is a reduce-scatter and node 2 'ar' an all-reduce: a step that exchanges gradients both ways "
       "(hybrid sharding)"},
      {"reduce", with([](TraceBuilder& t) { t.coll(pb::REDUCE, "r", 5, 64); }), "is a collective of type REDUCE"},
      {"unknown collective", with([](TraceBuilder& t) { t.coll(static_cast<pb::CollectiveCommType>(42), "x", 5, 64); }),
       "is a collective of type unknown (comm_type 42)"},
      {"send", with([](TraceBuilder& t) { t.add(pb::COMM_SEND_NODE, "p2p", 5); }),
       "node 4 'p2p' is a point-to-point send (pipeline parallelism)"},
      {"no comm_type", with([](TraceBuilder& t) { t.add(pb::COMM_COLL_NODE, "c", 5); }),
       "collective node 4 'c' has no integer comm_type attribute"},
      {"no comm_size", with([](TraceBuilder& t) { t.nodes[2].mutable_attr()->RemoveLast(); }),
       "all-reduce node 2 'ar' has no positive comm_size attribute"},
      {"missing dependency", with([](TraceBuilder& t) { t.nodes[3].add_data_deps(99); }),
       "node 3 'opt' depends on node 99, which the trace does not have"},
      {"cycle", with([](TraceBuilder& t) { t.nodes[0].add_data_deps(3); }), "the dependencies form a cycle"},
      {"repeated id", with([](TraceBuilder& t) { t.nodes[3].set_id(1); }), "two nodes have id 1"},
      {"bad batch", with([](TraceBuilder& t) { t.batch = -4; }), "batch_size is not a positive integer"},
  };
  for (const Case& c : cases) {
    const std::string message = refusal(write_bytes(c.bytes));
    EXPECT_NE(message.find(c.expect), std::string::npos) << c.what << ": got '" << message << "'";
    EXPECT_NE(message.find(path_), std::string::npos) << c.what << ": does not name the file: " << message;
  }
  EXPECT_NE(refusal(path_ + ".absent").find("cannot be read"), std::string::npos);
}

#else  // a build without protobuf refuses traces, saying what to install

TEST_F(ChakraTrace, RefusedWithoutProtobuf) {
  EXPECT_FALSE(chakra_trace_supported());
  const std::string message = refusal(example_path());
  EXPECT_NE(message.find("built without protobuf"), std::string::npos) << message;
}

#endif
