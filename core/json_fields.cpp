// Checked reading of a JSON file's fields (json_fields.hpp).
#include "core/json_fields.hpp"

#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "core/errors.hpp"

namespace dsgd {

nlohmann::json json_file_load(const std::string& what, const std::string& path) {
  std::ifstream in(path);
  if (!in) DSGD_THROW(InputError, "check the path", "{} {}: cannot be read", what, path);
  std::stringstream text;
  text << in.rdbuf();
  try {
    return nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::parse_error& e) {
    DSGD_THROW(InputError, "write it with json.dump(..., allow_nan=False) (NaN and Infinity are not JSON)",
               "{} {}: not valid JSON ({})", what, path, e.what());
  }
}

JsonFields::JsonFields(const std::string& what, const std::string& file, const std::string& hint,
                       const nlohmann::json& j, std::string where)
    : what_(what), file_(file), hint_(hint), j_(j), where_(std::move(where)) {
  if (!j_.is_object()) fail("", "is not an object");
}

void JsonFields::fail(const std::string& key, const std::string& problem) const {
  // An element that is not an object has no key: its own path, without the trailing dot.
  const std::string field = key.empty() && !where_.empty() ? where_.substr(0, where_.size() - 1) : path_of(key);
  DSGD_THROW(InputError, hint_, "{} {}: {}{}", what_, file_, field.empty() ? "" : field + " ", problem);
}

void JsonFields::check_format(const std::string& format, int64_t version, const std::string& version_hint) const {
  const std::string found = text("format");
  if (found != format) fail("format", fmt::format("is '{}', not '{}'", found, format));
  const int64_t v = count("version", 0);
  if (v != version)
    DSGD_THROW(InputError, version_hint, "{} {}: version {}; this dsgd-bench reads version {}", what_, file_, v,
               version);
}

const nlohmann::json& JsonFields::get(const std::string& key) const {
  if (!j_.contains(key)) fail(key, "is missing");
  return j_.at(key);
}

bool JsonFields::has(const std::string& key) const {
  return j_.contains(key) && !j_.at(key).is_null();
}

std::string JsonFields::text(const std::string& key) const {
  const nlohmann::json& v = get(key);
  if (!v.is_string()) fail(key, "is not a string");
  return v.get<std::string>();
}

double JsonFields::number(const std::string& key) const {
  const nlohmann::json& v = get(key);
  if (!v.is_number()) fail(key, "is not a number");
  const double x = v.get<double>();
  if (!std::isfinite(x)) fail(key, "is not finite");
  return x;
}

double JsonFields::non_negative(const std::string& key) const {
  const double x = number(key);
  if (x < 0) fail(key, fmt::format("is negative ({:g})", x));
  return x;
}

double JsonFields::positive(const std::string& key) const {
  const double x = number(key);
  if (!(x > 0)) fail(key, fmt::format("is {:g} (must be positive)", x));
  return x;
}

int64_t JsonFields::count(const std::string& key, int64_t min) const {
  const nlohmann::json& v = get(key);
  if (!v.is_number_integer()) fail(key, "is not an integer");
  const int64_t x = v.get<int64_t>();
  if (x < min) fail(key, fmt::format("is {} (at least {})", x, min));
  return x;
}

const nlohmann::json& JsonFields::array(const std::string& key) const {
  const nlohmann::json& v = get(key);
  if (!v.is_array() || v.empty()) fail(key, "is not a non-empty array");
  return v;
}

JsonFields JsonFields::at(const std::string& key) const {
  return JsonFields(what_, file_, hint_, get(key), path_of(key) + ".");
}

JsonFields JsonFields::item(const std::string& key, size_t i) const {
  return JsonFields(what_, file_, hint_, j_.at(key).at(i), fmt::format("{}[{}].", path_of(key), i));
}

}  // namespace dsgd
