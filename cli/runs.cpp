// `dsgd-bench runs`: lists the stored runs, newest first.
#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/run_format.hpp"
#include "results/store.hpp"

namespace dsgd {

namespace {
struct RunsOptions {
  std::string db = "./dsgd.db";
  int limit = 50;
};
}  // namespace

void setup_runs(CLI::App& app) {
  auto opts = std::make_shared<RunsOptions>();
  CLI::App* sub =
      app.add_subcommand("runs", "List stored runs (id, time, workload, algorithm, workers, status, key metrics)");
  sub->add_option("--db", opts->db, "SQLite results database")->capture_default_str();
  sub->add_option("--limit", opts->limit, "show at most this many runs (newest first)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub->callback([opts]() {
    Store store = Store::open_readonly(opts->db);
    fmt::print("{}", format_runs_table(store.runs_list(opts->limit)));
  });
}

}  // namespace dsgd
