// The CSV, JSON and markdown printers of report tables (report_printer.hpp) and the CSV / JSON
// helpers of report_print.hpp.
#include "results/report_print.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/errors.hpp"
#include "core/output_file.hpp"
#include "results/report_printer.hpp"

namespace dsgd {

namespace {

const char* type_name(ReportType type) {
  switch (type) {
    case ReportType::report_integer: return "integer";
    case ReportType::report_real: return "real";
    case ReportType::report_text: return "text";
  }
  return "text";
}

}  // namespace

std::string report_csv_field(const std::string& raw) {
  // Other control characters (an ANSI escape in a tag) are made visible; CR, LF and tab
  // are data that RFC 4180 quoting carries.
  bool controls = false;
  for (size_t i = 0; i < raw.size(); ++i) {
    const auto c = static_cast<unsigned char>(raw[i]);
    if ((c < 0x20 && c != '\n' && c != '\r' && c != '\t') || c == 0x7f ||
        (c == 0xc2 && i + 1 < raw.size() && static_cast<unsigned char>(raw[i + 1]) >= 0x80 &&
         static_cast<unsigned char>(raw[i + 1]) <= 0x9f))
      controls = true;
  }
  std::string text;
  if (controls) {
    for (size_t start = 0; start <= raw.size();) {  // escape between the kept CR/LF/tab
      const size_t end = std::min(raw.find_first_of("\r\n\t", start), raw.size());
      text += text_escape_controls(std::string_view(raw).substr(start, end - start));
      if (end < raw.size()) text += raw[end];
      start = end + 1;
    }
  } else {
    text = raw;
  }
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string out;
  out.reserve(text.size() + 2);
  out += '"';
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
  return out;
}

nlohmann::json report_context_json(const ReportContext& c) {
  nlohmann::json j;
  j["schema_version"] = c.schema_version;
  j["db_schema_version"] = c.db_schema_version;
  j["tool"] = "dsgd-bench";
  j["tool_version"] = c.tool_version;
  j["git_commit"] = c.git_commit;
  j["build_type"] = c.build_type;
  j["host"] = c.host;
  j["generated_at"] = c.generated_at;
  j["db"] = c.db_path;
  j["selection"] = c.selection;
  j["warnings"] = c.warnings;
  return j;
}

namespace {

class CsvPrinter final : public ReportPrinter {
 public:
  explicit CsvPrinter(std::ostream& out) : out_(out) {}
  // CSV has no room for the context: its warnings (a Debug build) go to standard error.
  void begin(const ReportContext& context) override {
    for (const std::string& w : context.warnings) fmt::print(stderr, "dsgd-bench: warning: {}\n", w);
  }
  void rows(const ReportTable& table) override {
    std::string line = tables_++ ? "\n" : "";
    for (size_t i = 0; i < table.columns.size(); ++i) {
      if (i) line += ',';
      line += report_csv_field(table.columns[i].name);
    }
    line += '\n';
    out_ << line;
    for (const auto& row : table.rows) {
      line.clear();
      for (size_t i = 0; i < row.size(); ++i) {
        if (i) line += ',';
        line += report_csv_field(report_value_text(row[i]));
      }
      line += '\n';
      out_ << line;
    }
  }
  void end() override {}

 private:
  std::ostream& out_;
  int tables_ = 0;
};

class JsonPrinter final : public ReportPrinter {
 public:
  explicit JsonPrinter(std::ostream& out) : out_(out) {}
  void begin(const ReportContext& context) override {
    out_ << "{\n\"context\": " << report_context_json(context).dump() << ",\n";
  }
  void rows(const ReportTable& table) override {
    nlohmann::json columns = nlohmann::json::array();
    for (const ReportColumn& c : table.columns)
      columns.push_back({{"name", c.name}, {"unit", c.unit}, {"type", type_name(c.type)}});
    if (tables_++ == 0) {
      out_ << "\"table\": " << nlohmann::json(table.name).dump() << ",\n";
    } else {
      out_ << ",\n" << nlohmann::json(table.name).dump() << ": {\n";
    }
    out_ << "\"columns\": " << columns.dump() << ",\n";
    out_ << "\"rows\": [";
    std::vector<std::string> keys;
    for (const ReportColumn& c : table.columns) keys.push_back(nlohmann::json(c.name).dump());
    std::string line;
    for (size_t r = 0; r < table.rows.size(); ++r) {
      line.assign(r ? ",\n{" : "\n{");
      const auto& row = table.rows[r];
      for (size_t i = 0; i < row.size(); ++i) {
        if (i) line += ", ";
        line += keys[i];
        line += ": ";
        line += report_value_json(row[i]).dump();
      }
      line += '}';
      out_ << line;
    }
    out_ << "\n]";
    if (tables_ > 1) out_ << "\n}";
  }
  void end() override { out_ << "\n}\n"; }

 private:
  std::ostream& out_;
  int tables_ = 0;
};

std::string markdown_cell(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '|') out += '\\';
    out += (c == '\n' || c == '\r') ? ' ' : c;
  }
  return out;
}

class MarkdownPrinter final : public ReportPrinter {
 public:
  explicit MarkdownPrinter(std::ostream& out) : out_(out) {}
  void begin(const ReportContext& c) override {
    out_ << "# dsgd-bench report\n\n";
    out_ << markdown_cell(fmt::format("{} {} ({}, commit {}), generated {} from {} (schema v{})", "dsgd-bench",
                                      c.tool_version, c.build_type, c.git_commit, c.generated_at, c.db_path,
                                      c.db_schema_version));
    if (!c.selection.empty()) out_ << markdown_cell(fmt::format("; runs: {}", c.selection));
    out_ << "\n";
    for (const std::string& w : c.warnings) out_ << "\n> warning: " << markdown_cell(w) << "\n";
  }
  void rows(const ReportTable& table) override {
    out_ << fmt::format("\n## {} ({} row{})\n\n", table.name, table.rows.size(), table.rows.size() == 1 ? "" : "s");
    out_ << report_markdown_table(table);
  }
  void end() override {}

 private:
  std::ostream& out_;
};

}  // namespace

std::string report_markdown_table(const ReportTable& table) {
  std::string out = "|";
  for (const ReportColumn& c : table.columns) out += fmt::format(" {} |", markdown_cell(c.name));
  out += "\n|";
  for (const ReportColumn& c : table.columns) out += c.type == ReportType::report_text ? "---|" : "---:|";
  out += "\n";
  for (const auto& row : table.rows) {
    out += "|";
    for (const ReportValue& v : row)
      out += fmt::format(" {} |", markdown_cell(text_escape_controls(report_value_text(v))));
    out += "\n";
  }
  return out;
}

std::unique_ptr<ReportPrinter> report_printer_create(const std::string& format, std::ostream& out) {
  if (format == "csv") return std::make_unique<CsvPrinter>(out);
  if (format == "json") return std::make_unique<JsonPrinter>(out);
  if (format == "markdown") return std::make_unique<MarkdownPrinter>(out);
  DSGD_THROW(InputError, "pass --format csv, json, markdown or html", "unknown report format '{}'", format);
}

void report_print(ReportPrinter& printer, const ReportContext& context, const std::vector<ReportTable>& tables) {
  printer.begin(context);
  for (const ReportTable& table : tables) printer.rows(table);
  printer.end();
}

void report_write_csv(std::ostream& out, const ReportTable& table) {
  CsvPrinter printer(out);
  printer.begin(ReportContext{});
  printer.rows(table);
  printer.end();
}

void report_write_json(std::ostream& out, const ReportContext& context, const ReportTable& table) {
  JsonPrinter printer(out);
  printer.begin(context);
  printer.rows(table);
  printer.end();
}

}  // namespace dsgd
