// See report_output.hpp.
#include "results/report_output.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "core/errors.hpp"

namespace dsgd {

namespace fs = std::filesystem;

ReportOutput::ReportOutput(const std::string& path) : path_(path) {
  if (path.empty()) DSGD_THROW(InputError, "pass -o FILE (or -o - for standard output)", "the report path is empty");
  if (path == "-") return;
  std::error_code ec;
  if (fs::is_directory(path, ec))
    DSGD_THROW(InputError, "pass a file name to -o", "cannot write report '{}': it is a directory", path);
  fs::path dir = fs::path(path).parent_path();
  if (dir.empty()) dir = ".";
  if (!fs::is_directory(dir, ec))
    DSGD_THROW(InputError, "create the directory or pass another -o", "cannot write report '{}': directory '{}' does not exist",
               path, dir.string());
  temp_path_ = path + ".tmp-" + std::to_string(::getpid());
  file_ = std::make_unique<std::ofstream>(temp_path_, std::ios::binary | std::ios::trunc);
  if (!*file_) {
    const std::string reason = std::strerror(errno);
    file_.reset();
    DSGD_THROW(InputError, "pass a writable path to -o", "cannot write report '{}': {}", path, reason);
  }
  if (fs::exists(path, ec) && ::access(path.c_str(), W_OK) != 0) {
    file_.reset();
    fs::remove(temp_path_, ec);
    DSGD_THROW(InputError, "pass a writable path to -o", "cannot write report '{}': the file is not writable", path);
  }
}

ReportOutput::~ReportOutput() {
  if (file_ && !committed_) {
    file_.reset();
    std::error_code ec;
    fs::remove(temp_path_, ec);
  }
}

std::ostream& ReportOutput::stream() { return file_ ? static_cast<std::ostream&>(*file_) : std::cout; }

void ReportOutput::commit() {
  if (!file_) {
    std::cout.flush();
    committed_ = true;
    return;
  }
  file_->flush();
  const bool ok = static_cast<bool>(*file_);
  file_->close();
  if (!ok) DSGD_THROW(Error, "check the free disk space", "writing report '{}' failed", path_);
  std::error_code ec;
  fs::rename(temp_path_, path_, ec);
  if (ec) DSGD_THROW(Error, "", "cannot move report into place at '{}': {}", path_, ec.message());
  committed_ = true;
}

}  // namespace dsgd
