// The CSV and JSON forms of report tables, as used by their printers (report_printer.hpp, which
// also has markdown; html: results/html_report.*). All print the same ReportTable rows
// (results/report_rows.hpp); report_write_csv / report_write_json print one table.
// CSV (RFC 4180): a header row of column names, one line per row, "\n" line ends;
// fields containing a comma, a double quote, CR or LF are quoted with quotes doubled;
// null is an empty field; reals in their shortest round-trip form; other control characters
// (ESC, DEL, C1) are written escaped as \xHH / \u00HH (core/output_file.hpp), so a
// tag cannot drive the terminal that shows the CSV. CSV carries no context
// header (it would break CSV readers); the JSON form has it.
// JSON: {"context": {...}, "table": NAME, "columns": [{"name", "unit", "type"}...],
//        "rows": [{column: value}...]}, written row by row (no whole-document tree, so a
// per-step table of millions of rows streams).
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

#include "results/report_rows.hpp"

namespace dsgd {

// One CSV field, quoted when needed.
std::string report_csv_field(const std::string& text);
void report_write_csv(std::ostream& out, const ReportTable& table);

nlohmann::json report_context_json(const ReportContext& context);
void report_write_json(std::ostream& out, const ReportContext& context, const ReportTable& table);

}  // namespace dsgd
