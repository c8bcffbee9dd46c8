// Writing a report file safely: the path is checked (and the file created) before any
// work, the content goes to a temporary file beside it, renamed over the target only when
// complete, so a failure never leaves a half-written report. "-" is standard output.
#pragma once

#include <fstream>
#include <memory>
#include <ostream>
#include <string>

namespace dsgd {

class ReportOutput {
 public:
  // Throws InputError naming the path when it cannot be written (missing directory,
  // no permission, a directory in the way).
  explicit ReportOutput(const std::string& path);
  ~ReportOutput();  // removes the temporary file unless commit() ran
  ReportOutput(const ReportOutput&) = delete;
  ReportOutput& operator=(const ReportOutput&) = delete;

  std::ostream& stream();
  // Flushes and renames into place; throws Error on a write failure (disk full).
  void commit();
  const std::string& path() const { return path_; }

 private:
  std::string path_, temp_path_;
  std::unique_ptr<std::ofstream> file_;
  bool committed_ = false;
};

}  // namespace dsgd
