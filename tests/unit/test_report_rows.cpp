// Golden tests of the report row schema and its CSV / JSON printers: column names and
// units, number formatting (shortest round trip, integers, null), RFC 4180 escaping of
// commas, quotes and newlines in tags, the JSON context header; and the run selection
// (--runs / --tag / --since) with its errors. Configuration columns come from the run
// config field table, so the golden header is assembled from it rather than spelled out
// (other changes add run keys).
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>

#include "core/errors.hpp"
#include "results/report_print.hpp"
#include "results/report_rows.hpp"
#include "results/report_select.hpp"
#include "results/store.hpp"

namespace dsgd {
namespace {

namespace fs = std::filesystem;

RunWithSummary sample_run() {
  RunWithSummary rs;
  RunRecord& r = rs.run;
  r.id = 7;
  r.created_at = "2026-11-30T01:02:03Z";
  r.finished_at = "2026-11-30T01:02:09Z";
  r.status = RunStatus::run_completed;
  r.workload = "svm";
  r.dataset = "synthetic:n=100,d=5";
  r.algorithm = "localsgd";
  r.backend = "mpi";
  r.workers = 2;
  r.batch = 64;
  r.period = 8;
  r.steps = 100;
  r.warmup = 5;
  r.seed = 42;
  r.tag = "a,b \"q\"\nline2";
  r.target = "acc=0.8";
  r.config_json = R"({"lr": 0.05, "momentum": 0.0, "weight-decay": 0.0001, "straggler": "fixed:rank=1,delay=20ms",
                      "overlap": false, "threads": 1})";
  r.tool_version = "0.1.0";
  r.git_commit = "abc123";
  r.build_type = "Release";
  r.host = "node1";
  r.cpu_model = "Test CPU";
  r.mpi_version = "MPICH 4.0";
  Summary s;
  s.throughput_samples_per_s = 12345.678;
  s.step_time_s = 0.0103;
  s.step_time_se_s = 0.0002;
  s.compute_s = 0.006;
  s.fwd_s = 0.002;
  s.bwd_s = 0.003;
  s.opt_s = 0.001;
  s.data_s = 0.0005;
  s.comm_s = 0.003;
  s.wait_s = 1e-7;
  s.overlap_s = 0.001;
  s.injected_s = 0;
  s.bytes_sent_per_step = 1.5e6;
  s.timed_steps = 95;
  s.final_train_loss = 0.5;
  s.final_test_loss = 0.25;
  s.final_test_acc = 0.8125;
  s.time_to_target_s = std::nullopt;
  s.steps_to_target = std::nullopt;
  rs.summary = s;
  return rs;
}

std::string config_header() {
  std::string out;
  for (std::string key : report_config_keys()) {
    for (char& c : key)
      if (c == '-') c = '_';
    out += "," + key;
  }
  return out;
}

TEST(ReportRows, RunsCsvGolden) {
  std::ostringstream out;
  report_write_csv(out, report_runs_table({sample_run()}));
  const std::string csv = out.str();
  const std::string header =
      "run_id,status,created_at,finished_at,workload,dataset,algorithm,backend,workers,batch,period,steps,warmup,"
      "seed,tag,target,throughput_samples_per_s,step_time_s,step_time_se_s,compute_s,fwd_s,bwd_s,opt_s,data_s,comm_s,"
      "wait_s,overlap_s,overlap_pct,injected_s,bytes_sent_per_step,timed_steps,final_train_loss,final_test_loss,"
      "final_test_acc,time_to_target_s,steps_to_target,staleness_mean,staleness_max,model_gflops,peak_gflops,mfu,"
      "eval_total_s,host_load,cpu_steal,model_pass_s" +
      config_header() + ",tool_version,git_commit,build_type,host,cpu_model,mpi_version,prediction,error\n";
  ASSERT_EQ(csv.substr(0, header.size()), header);
  const std::string row = csv.substr(header.size());
  // Identity and summary part, byte for byte: the tag quoted with its quotes doubled and
  // its newline kept inside the quotes; shortest round-trip reals; nulls empty.
  const std::string expected_start =
      "7,completed,2026-11-30T01:02:03Z,2026-11-30T01:02:09Z,svm,\"synthetic:n=100,d=5\",localsgd,mpi,2,64,8,100,5,"
      "42,\"a,b "
      "\"\"q\"\"\nline2\",acc=0.8,12345.678,0.0103,0.0002,0.006,0.002,0.003,0.001,0.0005,0.003,1e-07,0.001,25,0,"
      "1500000,95,0.5,0.25,0.8125,,,,,,,,,";
  ASSERT_EQ(row.substr(0, expected_start.size()), expected_start);
  const std::string expected_end = ",0.1.0,abc123,Release,node1,Test CPU,MPICH 4.0,,\n";
  ASSERT_EQ(row.substr(row.size() - expected_end.size()), expected_end);
  // Configuration values read from config_json; the straggler spec has commas: quoted.
  EXPECT_NE(row.find(",0.05,0,0.0001,"), std::string::npos) << row;
  EXPECT_NE(row.find(",\"fixed:rank=1,delay=20ms\","), std::string::npos) << row;
  EXPECT_NE(row.find(",false,"), std::string::npos) << row;
}

TEST(ReportRows, CsvFieldEscaping) {
  EXPECT_EQ(report_csv_field("plain"), "plain");
  EXPECT_EQ(report_csv_field("a,b"), "\"a,b\"");
  EXPECT_EQ(report_csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(report_csv_field("two\nlines"), "\"two\nlines\"");
  EXPECT_EQ(report_csv_field("cr\r"), "\"cr\r\"");
  EXPECT_EQ(report_csv_field(""), "");
}

TEST(ReportRows, NumberFormatting) {
  EXPECT_EQ(report_value_text(ReportValue{0.1}), "0.1");
  EXPECT_EQ(report_value_text(ReportValue{1e-7}), "1e-07");
  EXPECT_EQ(report_value_text(ReportValue{12345.678}), "12345.678");
  EXPECT_EQ(report_value_text(ReportValue{1.0 / 3.0}), "0.3333333333333333");
  EXPECT_EQ(report_value_text(ReportValue{int64_t{-3}}), "-3");
  EXPECT_EQ(report_value_text(ReportValue{}), "");
  EXPECT_EQ(report_value_text(ReportValue{std::nan("")}), "");
  EXPECT_TRUE(report_value_json(ReportValue{std::nan("")}).is_null());
  EXPECT_EQ(report_value_json(ReportValue{2.5}).dump(), "2.5");
}

TEST(ReportRows, UnitsOfSummaryColumns) {
  const ReportTable table = report_runs_table({});
  auto unit = [&](const char* name) { return table.columns[table.column_index(name)].unit; };
  EXPECT_EQ(unit("throughput_samples_per_s"), "samples/s");
  EXPECT_EQ(unit("step_time_s"), "s");
  EXPECT_EQ(unit("wait_s"), "s");
  EXPECT_EQ(unit("bytes_sent_per_step"), "bytes");
  EXPECT_EQ(unit("final_test_acc"), "1");
  EXPECT_EQ(unit("overlap_pct"), "%");
  EXPECT_EQ(unit("timed_steps"), "steps");
  // Every column name ending in _s (but not _per_s) is in seconds.
  for (const ReportColumn& c : table.columns)
    if (c.name.size() > 2 && c.name.substr(c.name.size() - 2) == "_s" && c.name.find("_per_") == std::string::npos) {
      EXPECT_EQ(c.unit, "s") << c.name;
    }
  EXPECT_THROW(table.column_index("nope"), Error);
}

TEST(ReportRows, RunWithoutSummaryIsNullNotZero) {
  RunWithSummary rs = sample_run();
  rs.summary.reset();
  rs.run.status = RunStatus::run_running;
  const ReportTable table = report_runs_table({rs});
  const auto& row = table.rows.at(0);
  EXPECT_TRUE(std::holds_alternative<std::monostate>(row[table.column_index("throughput_samples_per_s")]));
  EXPECT_TRUE(std::holds_alternative<std::monostate>(row[table.column_index("timed_steps")]));
  EXPECT_EQ(std::get<std::string>(row[table.column_index("status")]), "running");
}

TEST(ReportRows, JsonGolden) {
  ReportContext context;
  context.schema_version = report_schema_version();
  context.db_schema_version = 3;
  context.tool_version = "0.1.0";
  context.git_commit = "abc123";
  context.build_type = "Release";
  context.host = "node1";
  context.generated_at = "2026-11-30T02:00:00Z";
  context.db_path = "t.db";
  context.selection = "--tag x";
  std::vector<std::pair<int64_t, std::vector<EvalRow>>> evals = {
      {7, {{0, 0.0, 1.5, 1.25, 0.1, std::nullopt, 0.5}, {50, 0.75, 0.5, 0.25, 0.8125, std::nullopt, std::nullopt}}}};
  std::ostringstream out;
  report_write_json(out, context, report_evals_table(evals));
  EXPECT_EQ(
      out.str(),
      "{\n\"context\": {\"build_type\":\"Release\",\"db\":\"t.db\",\"db_schema_version\":3,"
      "\"generated_at\":\"2026-11-30T02:00:00Z\",\"git_commit\":\"abc123\",\"host\":\"node1\","
      "\"schema_version\":1,\"selection\":\"--tag x\",\"tool\":\"dsgd-bench\",\"tool_version\":\"0.1.0\","
      "\"warnings\":[]},\n"
      "\"table\": \"evals\",\n"
      "\"columns\": [{\"name\":\"run_id\",\"type\":\"integer\",\"unit\":\"\"},{\"name\":\"step\",\"type\":\"integer\","
      "\"unit\":\"steps\"},{\"name\":\"time_s\",\"type\":\"real\",\"unit\":\"s\"},{\"name\":\"train_loss\",\"type\":"
      "\"real\",\"unit\":\"\"},{\"name\":\"test_loss\",\"type\":\"real\",\"unit\":\"\"},{\"name\":\"test_acc\","
      "\"type\":\"real\",\"unit\":\"1\"},{\"name\":\"eval_s\",\"type\":\"real\",\"unit\":\"s\"}],\n"
      "\"rows\": [\n"
      "{\"run_id\": 7, \"step\": 0, \"time_s\": 0.0, \"train_loss\": 1.5, \"test_loss\": 1.25, \"test_acc\": 0.1, "
      "\"eval_s\": 0.5},\n"
      "{\"run_id\": 7, \"step\": 50, \"time_s\": 0.75, \"train_loss\": 0.5, \"test_loss\": 0.25, \"test_acc\": "
      "0.8125, \"eval_s\": null}\n"
      "]\n}\n");
  // And it parses, with the tag's special characters intact in the runs table.
  std::ostringstream runs;
  report_write_json(runs, context, report_runs_table({sample_run()}));
  const nlohmann::json parsed = nlohmann::json::parse(runs.str());
  EXPECT_EQ(parsed["rows"][0]["tag"], "a,b \"q\"\nline2");
  EXPECT_TRUE(parsed["rows"][0]["time_to_target_s"].is_null());
  EXPECT_EQ(parsed["columns"].size(), report_runs_table({}).columns.size());
}

TEST(ReportRows, StepsCsvGolden) {
  StepRow s;
  s.rank = 1;
  s.step = 3;
  s.timed = true;
  s.start_s = 0.25;
  s.step_s = 0.01;
  s.data_s = 0.001;
  s.fwd_s = 0.002;
  s.bwd_s = 0.003;
  s.opt_s = 0.0005;
  s.comm_s = 0.002;
  s.wait_s = 0.0015;
  s.overlap_s = 0;
  s.injected_s = 0;
  s.bytes_sent = 4096;
  s.train_loss = std::nan("");
  std::ostringstream out;
  report_write_csv(out, report_steps_table({{9, {s}}}));
  EXPECT_EQ(out.str(),
            "run_id,rank,step,timed,start_s,step_s,data_s,fwd_s,bwd_s,opt_s,comm_s,wait_s,overlap_s,injected_s,"
            "bytes_sent,train_loss,staleness\n9,1,3,1,0.25,0.01,0.001,0.002,0.003,0.0005,0.002,0.0015,0,0,4096,,\n");
}

TEST(ReportSelect, IdsTagsDates) {
  EXPECT_EQ(report_parse_ids("3,5,9-11"), (std::vector<int64_t>{3, 5, 9, 10, 11}));
  EXPECT_EQ(report_parse_ids(" 2 , 1,2"), (std::vector<int64_t>{1, 2}));
  EXPECT_THROW(report_parse_ids("x"), InputError);
  EXPECT_THROW(report_parse_ids("5-3"), InputError);
  EXPECT_THROW(report_parse_ids("0"), InputError);
  EXPECT_TRUE(report_tag_matches("suite=smoke,rep=2", "suite=smoke"));
  EXPECT_TRUE(report_tag_matches("suite=smoke,rep=2", "rep=2, suite=smoke"));
  EXPECT_FALSE(report_tag_matches("suite=smoke,rep=2", "suite=standard"));
  EXPECT_FALSE(report_tag_matches("h16", "h1"));
  EXPECT_TRUE(report_tag_matches("h16", "h16"));
  EXPECT_EQ(report_parse_since("2026-11-30"), "2026-11-30T00:00:00Z");
  EXPECT_EQ(report_parse_since("2026-11-30T14:05"), "2026-11-30T14:05:00Z");
  EXPECT_EQ(report_parse_since("2026-11-30 14:05:07Z"), "2026-11-30T14:05:07Z");
  EXPECT_THROW(report_parse_since("yesterday"), InputError);
}

TEST(ReportSelect, FromStore) {
  const fs::path dir = fs::temp_directory_path() / ("report_select_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string db = (dir / "t.db").string();
  {
    Store store = Store::open(db);
    for (int i = 0; i < 3; ++i) {
      RunRecord r = sample_run().run;
      r.tag = i == 2 ? "other" : "suite=smoke,rep=" + std::to_string(i + 1);
      r.created_at = "2026-11-2" + std::to_string(7 + i) + "T00:00:00Z";
      r.config_json = "{}";
      const int64_t id = store.run_begin(r);
      store.run_finish(id, RunStatus::run_completed, "");
    }
  }
  Store store = Store::open_readonly(db);
  EXPECT_EQ(report_select_runs(store, {}).size(), 3u);
  EXPECT_EQ(report_select_runs(store, {"", "suite=smoke", ""}).size(), 2u);
  EXPECT_EQ(report_select_runs(store, {"", "", "2026-11-28"}).size(), 2u);
  EXPECT_EQ(report_select_runs(store, {"1,3", "", ""}).size(), 2u);
  EXPECT_EQ(report_select_runs(store, {"1-3", "suite=smoke", "2026-11-28"}).at(0).run.id, 2);
  try {
    report_select_runs(store, {"2,99", "", ""});
    FAIL() << "no error for an unknown id";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("run 99 not found"), std::string::npos) << e.what();
  }
  try {
    report_select_runs(store, {"", "nope", ""});
    FAIL() << "no error for an unknown tag";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--tag nope"), std::string::npos) << e.what();
  }
  { Store::open((dir / "empty.db").string()); }
  Store empty = Store::open_readonly((dir / "empty.db").string());
  try {
    report_select_runs(empty, {});
    FAIL() << "no error for an empty database";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("has no runs"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace dsgd
