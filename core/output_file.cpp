// See output_file.hpp.
#include "core/output_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <vector>

#include "core/errors.hpp"

namespace dsgd {

namespace fs = std::filesystem;

// A streambuf over a file descriptor that keeps the first write error (errno), so the
// message can say why (ENOSPC) instead of "write failed".
class OutputFile::Buffer : public std::streambuf {
 public:
  explicit Buffer(int fd) : fd_(fd), data_(size_t{1} << 16) { setp(data_.data(), data_.data() + data_.size()); }
  int error() const { return error_; }
  bool drain() {
    const char* p = pbase();
    size_t left = static_cast<size_t>(pptr() - pbase());
    while (left > 0 && error_ == 0) {
      const ssize_t n = ::write(fd_, p, left);
      if (n < 0) {
        if (errno == EINTR) continue;
        error_ = errno;
      } else if (n == 0) {
        error_ = EIO;
      } else {
        p += n;
        left -= static_cast<size_t>(n);
      }
    }
    setp(data_.data(), data_.data() + data_.size());
    return error_ == 0;
  }

 protected:
  int_type overflow(int_type ch) override {
    if (!drain()) return traits_type::eof();
    if (!traits_type::eq_int_type(ch, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(ch);
      pbump(1);
    }
    return traits_type::not_eof(ch);
  }
  int sync() override { return drain() ? 0 : -1; }

 private:
  int fd_;
  std::vector<char> data_;
  int error_ = 0;
};

OutputFile::OutputFile(const std::string& path, std::string what, std::string hint_flag)
    : path_(path), what_(std::move(what)), hint_flag_(std::move(hint_flag)) {
  const std::string writable_hint = fmt::format("pass a writable path to {}", hint_flag_);
  if (path.empty())
    DSGD_THROW(InputError, fmt::format("pass {} FILE (or {} - for standard output)", hint_flag_, hint_flag_),
               "the {} path is empty", what_);
  if (path == "-") {
    // Written on descriptor 1 through the checked buffer (the system's reason survives);
    // what stdio holds goes first, to keep the order.
    to_stdout_ = true;
    std::cout.flush();
    std::fflush(stdout);
    buffer_ = std::make_unique<Buffer>(STDOUT_FILENO);
    stream_ = std::make_unique<std::ostream>(buffer_.get());
    return;
  }
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (fs::is_directory(status))
    DSGD_THROW(InputError, fmt::format("pass a file name to {}", hint_flag_), "cannot write {} '{}': it is a directory",
               what_, path);
  // A symbolic link is replaced at its target, not turned into a file.
  std::string target = path;
  if (fs::is_symlink(fs::symlink_status(path, ec)) && fs::exists(status)) target = fs::canonical(path, ec).string();
  const bool special = target.rfind("/dev/", 0) == 0 || target.rfind("/proc/", 0) == 0 || path.rfind("/dev/", 0) == 0 ||
                       path.rfind("/proc/", 0) == 0;
  if (fs::exists(status) && (!fs::is_regular_file(status) || special)) {
    // A device, FIFO or /dev/stdout: written in place, never a temporary file beside it
    // (that would be /dev/full.tmp-PID renamed over /dev/full).
    direct_ = true;
    fd_ = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | (fs::is_regular_file(status) ? O_TRUNC : 0));
    if (fd_ < 0) DSGD_THROW(InputError, writable_hint, "cannot write {} '{}': {}", what_, path, std::strerror(errno));
  } else {
    dest_ = target;
    fs::path dir = fs::path(target).parent_path();
    if (dir.empty()) dir = ".";
    if (!fs::is_directory(dir, ec))
      DSGD_THROW(InputError, fmt::format("create the directory or pass another {}", hint_flag_),
                 "cannot write {} '{}': directory '{}' does not exist", what_, path, dir.string());
    if (fs::exists(status) && ::access(target.c_str(), W_OK) != 0)
      DSGD_THROW(InputError, writable_hint, "cannot write {} '{}': the file is not writable", what_, path);
    temp_path_ = target + ".tmp-" + std::to_string(::getpid());
    fd_ = ::open(temp_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd_ < 0)
      DSGD_THROW(InputError, writable_hint, "cannot write {} '{}': {} (creating '{}')", what_, path,
                 std::strerror(errno), temp_path_);
  }
  buffer_ = std::make_unique<Buffer>(fd_);
  stream_ = std::make_unique<std::ostream>(buffer_.get());
}

OutputFile::~OutputFile() {
  if (committed_ || to_stdout_) return;  // an uncommitted stdout buffer is dropped
  stream_.reset();
  buffer_.reset();  // its data is dropped, never written
  if (fd_ >= 0) ::close(fd_);
  if (!temp_path_.empty()) ::unlink(temp_path_.c_str());
}

std::ostream& OutputFile::stream() {
  return *stream_;
}

void OutputFile::fail_and_remove(int err) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (!temp_path_.empty()) ::unlink(temp_path_.c_str());
  committed_ = true;  // nothing left for the destructor
  const std::string hint = err == ENOSPC || err == EDQUOT
                               ? fmt::format("free some disk space or pass another {}", hint_flag_)
                               : fmt::format("pass another {}", hint_flag_);
  const std::string where = to_stdout_ ? std::string("to standard output") : fmt::format("'{}'", path_);
  DSGD_THROW(Error, hint, "writing {} {} failed: {}{}", what_, where, err ? std::strerror(err) : "write error",
             direct_ || to_stdout_ ? "" : " (the partial file was removed)");
}

void OutputFile::throw_if_failed() {
  if (committed_ || buffer_->error() == 0) return;
  fail_and_remove(buffer_->error());
}

void OutputFile::commit() {
  if (committed_) return;
  if (to_stdout_) {
    stream_->flush();
    committed_ = true;
    if (!buffer_->drain() || !*stream_)
      DSGD_THROW(Error, "check where standard output goes (a full disk?)", "writing {} to standard output failed: {}",
                 what_, buffer_->error() ? std::strerror(buffer_->error()) : "write error");
    return;
  }
  stream_->flush();
  if (!buffer_->drain() || !*stream_) fail_and_remove(buffer_->error());
  if (!direct_ && ::fsync(fd_) != 0 && errno != EINVAL && errno != EROFS) fail_and_remove(errno);
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0 && errno != EINTR) fail_and_remove(errno);
  if (!direct_) {
    std::error_code ec;
    fs::rename(temp_path_, dest_, ec);
    if (ec) fail_and_remove(ec.value());
  }
  committed_ = true;
}

namespace {
int g_stdout_errno = 0;  // stdout_print's first failure
bool g_stdout_reported = false;
}  // namespace

void stdout_print(std::string_view text, bool flush) {
  errno = 0;
  bool ok = std::fwrite(text.data(), 1, text.size(), stdout) == text.size();
  if (ok && flush) ok = std::fflush(stdout) == 0;
  if (!ok && g_stdout_errno == 0) g_stdout_errno = errno ? errno : EIO;
}

int stdout_error_take() {
  if (g_stdout_errno != 0) g_stdout_reported = true;
  return g_stdout_errno;
}

void stdout_close_checked() {
  if (g_stdout_reported) return;  // reported by its taker; the rest of the output is lost with it
  // stdio first: its failing flush is the one that knows errno (cout's flush would
  // repeat it and lose the reason).
  errno = 0;
  bool ok = std::fflush(stdout) == 0;
  int err = ok ? 0 : errno;
  std::cout.flush();
  ok = ok && static_cast<bool>(std::cout) && !std::ferror(stdout);
  // Not fclose(stdout): static destructors flush std::cout into it later. Closing a
  // duplicate of the descriptor reports the errors a file system defers to close (NFS).
  const int dup_fd = ::dup(STDOUT_FILENO);
  errno = 0;
  if (dup_fd >= 0 && ::close(dup_fd) != 0 && errno != EINTR && ok) {
    ok = false;
    err = errno;
  }
  if (!ok)
    DSGD_THROW(Error, "check where standard output goes (a full disk?)", "writing to standard output failed: {}",
               err ? std::strerror(err) : "write error");
}

std::string text_escape_controls(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      out += fmt::format("\\x{:02x}", c);
    } else if (c == 0xc2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
               static_cast<unsigned char>(text[i + 1]) <= 0x9f) {
      out += fmt::format("\\u{:04x}", static_cast<unsigned char>(text[i + 1]));
      ++i;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

}  // namespace dsgd
