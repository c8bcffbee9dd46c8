// `dsgd-bench show RUN_ID`: one run's configuration, breakdown and convergence, as a
// table for people or one JSON object for programs (keys in docs/metrics.md).
#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/run_format.hpp"
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
    if (opts->format == "json") {
      nlohmann::json j = run_to_json(run);
      if (opts->evals) {
        nlohmann::json evals = nlohmann::json::array();
        for (const auto& e : store.evals_get(opts->run_id)) evals.push_back(row_to_json(eval_fields(), e));
        j["evals"] = evals;
      }
      fmt::print("{}\n", j.dump(2));
      return;
    }
    fmt::print("{}", format_run_summary(run));
    if (opts->evals) {
      for (const auto& e : store.evals_get(opts->run_id)) fmt::print("  {}\n", format_eval_line(e, run.run.steps));
    }
  });
}

}  // namespace dsgd
