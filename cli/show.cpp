// `dsgd-bench show RUN_ID`: one run's configuration, breakdown and convergence, as a
// table for people or one JSON object for programs (keys in docs/metrics.md).
#include <fmt/format.h>

#include <iostream>
#include <vector>

#include "cli/commands.hpp"
#include "cli/run_format.hpp"
#include "core/output_file.hpp"
#include "results/report_printer.hpp"
#include "results/report_rows.hpp"
#include "results/row_fields.hpp"
#include "results/run_json.hpp"
#include "results/store.hpp"

namespace dsgd {

namespace {
struct ShowOptions {
  int64_t run_id = 0;
  std::string db = "./dsgd.db";
  std::string format = "table";
  bool evals = false;
};
}  // namespace

void setup_show(CLI::App& app) {
  auto opts = std::make_shared<ShowOptions>();
  CLI::App* sub = app.add_subcommand("show", "Show one run: configuration, time breakdown, convergence");
  sub->add_option("run_id", opts->run_id, "run id (see dsgd-bench runs)")->required()->check(CLI::PositiveNumber);
  sub->add_option("--db", opts->db, "SQLite results database")->capture_default_str();
  sub->add_option("--format", opts->format, "table or json")
      ->capture_default_str()
      ->check(CLI::IsMember({"table", "json"}));
  sub->add_flag("--evals", opts->evals, "also list every evaluation (table: lines; json: an \"evals\" array)");
  sub->callback([opts]() {
    Store store = Store::open_readonly(opts->db);
    const RunWithSummary run = store.run_get(opts->run_id);
    const std::vector<EvalRow> evals = opts->evals ? store.evals_get(opts->run_id) : std::vector<EvalRow>{};
    if (opts->format == "json") {  // one object for programs (docs/metrics.md), not a report table
      nlohmann::json j = run_to_json(run);
      if (opts->evals) {
        nlohmann::json rows = nlohmann::json::array();
        for (const auto& e : evals) rows.push_back(row_to_json(eval_fields(), e));
        j["evals"] = rows;
      }
      fmt::print("{}\n", j.dump(2));
      return;
    }
    std::vector<ReportTable> tables = {report_runs_table({run})};
    if (opts->evals) tables.push_back(report_evals_table({{run.run.id, evals}}, true));
    OutputFile out("-", "run");  // standard output through the checked buffer: a full disk names its reason
    report_print(*text_printer_create(out.stream()), ReportContext{}, tables);
    out.commit();
  });
}

}  // namespace dsgd
