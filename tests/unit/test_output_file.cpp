// OutputFile (core/output_file.hpp): a write that fails (a full device) throws with the
// system's reason and leaves no partial file; success renames into place; control
// characters are escaped for terminals.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "core/errors.hpp"
#include "core/output_file.hpp"

namespace dsgd {
namespace {

namespace fs = std::filesystem;

class OutputFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "dsgd_output_XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  size_t entries() const { return static_cast<size_t>(std::distance(fs::directory_iterator(dir_), {})); }
  fs::path dir_;
};

TEST_F(OutputFileTest, WritesAndRenamesIntoPlace) {
  const std::string path = (dir_ / "out.csv").string();
  {
    OutputFile out(path, "report");
    out.stream() << "a,b\n1,2\n";
    EXPECT_FALSE(fs::exists(path));  // only the temporary file until commit
    out.commit();
  }
  std::ifstream in(path);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "a,b\n1,2\n");
  EXPECT_EQ(entries(), 1u);
}

TEST_F(OutputFileTest, UncommittedOutputLeavesNothing) {
  const std::string path = (dir_ / "out.csv").string();
  {
    OutputFile out(path, "report");
    out.stream() << "half";
  }
  EXPECT_EQ(entries(), 0u);
}

TEST_F(OutputFileTest, FullDeviceIsAnErrorWithItsReason) {
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full";
  OutputFile out("/dev/full", "report");
  out.stream() << std::string(200000, 'x');
  try {
    out.commit();
    FAIL() << "writing to /dev/full succeeded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("No space left on device"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("/dev/full"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(fs::is_character_file("/dev/full"));  // never replaced by a file
}

TEST_F(OutputFileTest, DirectoryAndMissingDirectoryAreRefused) {
  EXPECT_THROW(OutputFile(dir_.string(), "trace"), InputError);
  try {
    OutputFile out(dir_.string(), "trace");
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("is a directory"), std::string::npos) << e.what();
  }
  EXPECT_THROW(OutputFile((dir_ / "no" / "x.json").string(), "trace"), InputError);
  EXPECT_EQ(entries(), 0u);
}

TEST(TextEscapeControls, MakesControlsVisibleAndKeepsUtf8) {
  EXPECT_EQ(text_escape_controls("plain tag"), "plain tag");
  EXPECT_EQ(text_escape_controls("a\nb\tc\r"), "a\\nb\\tc\\r");
  EXPECT_EQ(text_escape_controls("\x1b[31mred\x1b[0m"), "\\x1b[31mred\\x1b[0m");
  EXPECT_EQ(text_escape_controls("del\x7f"), "del\\x7f");
  EXPECT_EQ(text_escape_controls("csi\xc2\x9b"), "csi\\u009b");
  EXPECT_EQ(text_escape_controls("caf\xc3\xa9 \xe2\x9c\x93"), "caf\xc3\xa9 \xe2\x9c\x93");
}

}  // namespace
}  // namespace dsgd
