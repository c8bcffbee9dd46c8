// Writing output files so that a failure is never silent and never leaves half a file:
// OutputFile checks the path before any work, streams into a temporary file beside the
// destination (checking every write, the final flush, fsync and close), renames it into
// place on commit(), and removes it otherwise. A destination that exists and is not a
// regular file (/dev/null, /dev/full, a FIFO, /dev/stdout) is written directly, with the
// same checks and no rename. "-" is standard output (flushed and checked on commit).
// stdout_close_checked() is the same check for everything else printed to stdout, run once
// at the end of main. text_escape_controls() makes stored text (tags, errors) safe to
// print to a terminal.
// Limits: one writer per destination; the temporary file is PATH.tmp-PID (left behind only
// when the process is killed mid-write).
#pragma once

#include <memory>
#include <ostream>
#include <streambuf>
#include <string>
#include <string_view>

namespace dsgd {

class OutputFile {
 public:
  // what names the output in messages ("report", "trace", "parameters"); hint_flag the
  // option that gave the path ("-o", "--save-params"). Throws InputError naming the path
  // when it cannot be written (missing directory, a directory in the way, no permission).
  OutputFile(const std::string& path, std::string what, std::string hint_flag = "-o");
  ~OutputFile();  // removes the temporary file unless commit() ran
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  std::ostream& stream();
  // Flushes, syncs, closes and renames into place; throws Error naming the path and the
  // system's reason (e.g. "No space left on device") when any write failed. The partial
  // file is removed.
  void commit();
  // Throws commit()'s error when a write has already failed (for a writer that stopped on a
  // failed stream with a message of its own); does nothing otherwise.
  void throw_if_failed();
  const std::string& path() const { return path_; }

 private:
  class Buffer;
  void fail_and_remove(int err);
  std::string path_, what_, hint_flag_, temp_path_, dest_;
  bool to_stdout_ = false, direct_ = false, committed_ = false;
  int fd_ = -1;
  std::unique_ptr<Buffer> buffer_;
  std::unique_ptr<std::ostream> stream_;
};

// Flushes stdout (and closes a duplicate of its descriptor); throws Error ("writing to standard output failed: REASON")
// when a write to it failed at any point. Called once by main after the subcommand. Says
// nothing when the failure was already taken by stdout_error_take().
void stdout_close_checked();

// For output printed while work goes on (a run's progress), which a full disk must not stop:
// prints text (and flushes when asked) without throwing; the first failure's errno is kept.
void stdout_print(std::string_view text, bool flush = false);
// The errno of stdout_print's first failure (0: none). Once taken, the caller reports it and
// stdout_close_checked() stays silent about it.
int stdout_error_take();

// Text with control characters made visible: \n \r \t as such, other C0 bytes, DEL and the
// UTF-8 C1 controls (U+0080..U+009F, e.g. the 8-bit CSI) as \xHH / \u00HH, backslashes
// kept as they are. Everything else (UTF-8 included) is unchanged.
std::string text_escape_controls(std::string_view text);

}  // namespace dsgd
