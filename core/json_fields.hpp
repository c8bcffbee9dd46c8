// Checked reading of a JSON file written by another program (a model cost file, a fabric
// file): each accessor names the file and the field's JSON path in its error
// ("cost file m.json: batches[1].layers[3].backward.median_s is negative (-0.001)") and throws
// InputError with the caller's hint, so a bad file never turns into silent garbage.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace dsgd {

// Parses the file at `path`; InputError naming `what` ("cost file") and the path when it
// cannot be read or is not JSON (NaN and Infinity included: they are not JSON).
nlohmann::json json_file_load(const std::string& what, const std::string& path);

class JsonFields {
 public:
  // `what` names the kind of file ("cost file"); `hint` is every error's hint. The JSON must
  // outlive the object.
  JsonFields(const std::string& what, const std::string& file, const std::string& hint, const nlohmann::json& j,
             std::string where = "");
  [[noreturn]] void fail(const std::string& key, const std::string& problem) const;
  // The top-level "format" is `format` and "version" is `version`: InputError otherwise (for
  // another version, "this dsgd-bench reads version N" with `version_hint`).
  void check_format(const std::string& format, int64_t version, const std::string& version_hint) const;
  const nlohmann::json& get(const std::string& key) const;  // present (may be null)
  bool has(const std::string& key) const;                   // present and not null
  std::string text(const std::string& key) const;
  double number(const std::string& key) const;        // finite
  double non_negative(const std::string& key) const;  // finite, >= 0
  double positive(const std::string& key) const;      // finite, > 0
  int64_t count(const std::string& key, int64_t min) const;
  const nlohmann::json& array(const std::string& key) const;  // a non-empty array
  JsonFields at(const std::string& key) const;                // an object member
  JsonFields item(const std::string& key, size_t i) const;    // element i of array `key`

 private:
  std::string path_of(const std::string& key) const { return where_ + key; }
  std::string what_, file_, hint_;
  const nlohmann::json& j_;
  std::string where_;
};

}  // namespace dsgd
