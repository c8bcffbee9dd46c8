// CSV and JSON printers of report tables (see report_print.hpp).
#include "results/report_print.hpp"

#include <algorithm>

#include "core/output_file.hpp"

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

void report_write_csv(std::ostream& out, const ReportTable& table) {
  std::string line;
  for (size_t i = 0; i < table.columns.size(); ++i) {
    if (i) line += ',';
    line += report_csv_field(table.columns[i].name);
  }
  line += '\n';
  out << line;
  for (const auto& row : table.rows) {
    line.clear();
    for (size_t i = 0; i < row.size(); ++i) {
      if (i) line += ',';
      line += report_csv_field(report_value_text(row[i]));
    }
    line += '\n';
    out << line;
  }
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

void report_write_json(std::ostream& out, const ReportContext& context, const ReportTable& table) {
  nlohmann::json columns = nlohmann::json::array();
  for (const ReportColumn& c : table.columns)
    columns.push_back({{"name", c.name}, {"unit", c.unit}, {"type", type_name(c.type)}});
  out << "{\n\"context\": " << report_context_json(context).dump() << ",\n";
  out << "\"table\": " << nlohmann::json(table.name).dump() << ",\n";
  out << "\"columns\": " << columns.dump() << ",\n";
  out << "\"rows\": [";
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
    out << line;
  }
  out << "\n]\n}\n";
}

}  // namespace dsgd
