// The one printer interface of every report format: begin(context) once, rows(table) for each
// table of the report, end() once. Every format prints any ReportTable (results/report_rows.hpp),
// so a report section of its own (a tuning session's trials, ...) is a function returning
// ReportTables that the caller hands to rows(); no printer needs to know it.
//   csv       RFC 4180: per table a header row and one line per row (report_csv_field); no
//             context header (it would break CSV readers); a second table follows a blank line.
//   json      {"context": {...}, "table": NAME, "columns": [...], "rows": [...]} for the first
//             table, written row by row; each further table adds a key NAME: {"columns", "rows"}.
//   markdown  a heading and the context, then per table "## NAME" and a pipe table (numeric
//             columns right-aligned, `|` in values escaped); report_markdown_table is the table
//             alone (compare's summary uses it).
//   html      the self-contained report (results/html_report.hpp): its charts come from the runs'
//             curves given at creation, each table passed to rows() becomes a section.
//   text      for people: `show` and `run`'s summary (cli/run_format.hpp, which knows the
//             variants) — the same interface, created there.
#pragma once

#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "results/report_rows.hpp"

namespace dsgd {

class ReportPrinter {
 public:
  virtual ~ReportPrinter() = default;
  virtual void begin(const ReportContext& context) = 0;
  virtual void rows(const ReportTable& table) = 0;
  virtual void end() = 0;
};

// csv, json or markdown, writing to `out` (html: html_report_printer, which needs the curves).
std::unique_ptr<ReportPrinter> report_printer_create(const std::string& format, std::ostream& out);

// The table as markdown lines: header, alignment row (numeric columns right-aligned), rows.
std::string report_markdown_table(const ReportTable& table);

// Prints a whole report: begin, rows of each table, end.
void report_print(ReportPrinter& printer, const ReportContext& context, const std::vector<ReportTable>& tables);

}  // namespace dsgd
