// Human-readable tables of runs, shared by `run` (its final summary), `show` and `runs`.
// The text printer (results/report_printer.hpp's interface, here because it asks the variants
// whether a run's H means something): a `runs` table prints one block per run, its summary
// laid out by the summary field table (results/row_fields.hpp: the per-step block, then one
// line per label), an `evals` table one line per evaluation (format_eval_line), any other
// table aligned columns.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "core/run_config.hpp"
#include "results/report_printer.hpp"
#include "results/store.hpp"

namespace dsgd {

// The run's configuration as `run` prints it at start: with `full`, every field of the table;
// otherwise the run's identity (workload, dataset, algo, batch, lr, steps, workers, backend)
// and the fields that apply to it (its variant's own flags, its workload's shape, its
// backend's settings) and differ from the defaults. Then the context line.
std::string format_config(const RunConfig& cfg, const RunRecord& record, bool full = false);
std::string format_eval_line(const EvalRow& row, int64_t total_steps);
// A warning line when the run's config "dataset-pages" (engine/trainer.cpp) says most of a
// large training set sits on 4 KiB pages; empty otherwise.
std::string format_paging_warning(const nlohmann::json& pages);
// A warning line when the record's "copy-aliasing" says copies are slow and were not avoided
// (core/copy_aliasing.hpp); empty otherwise.
std::string format_copy_aliasing_warning(const nlohmann::json& copies);
// The line saying a run evaluates on a subset of its test set (config "eval-set"), with the
// widest 95 % confidence interval of an accuracy on it; empty when it evaluates them all.
std::string format_eval_set(const nlohmann::json& eval_set);
// One run's block, as the text printer prints it.
std::string format_run_summary(const RunWithSummary& run);
std::unique_ptr<ReportPrinter> text_printer_create(std::ostream& out);
std::string format_runs_table(const std::vector<RunWithSummary>& runs);

}  // namespace dsgd
