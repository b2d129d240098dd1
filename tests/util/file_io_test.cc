// util/file_io.h: what a path may name besides a regular file. Reads of a
// FIFO, a device or a directory are refused at once with a message naming
// what the path is (a FIFO would otherwise block open() forever, /dev/zero
// read until memory runs out), reads are bounded by the size allowed, and
// writes never replace a destination that is not a regular file.
#include "util/file_io.h"

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <string>

#include <gtest/gtest.h>

#include "testing/temp_dir.h"

namespace pocket {
namespace {

// Ends the test process if a call blocks (SIGALRM's default action), so a
// regression fails instead of hanging the suite.
class BlockGuard {
 public:
  BlockGuard() { ::alarm(30); }
  ~BlockGuard() { ::alarm(0); }
};

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

bool Exists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

bool IsFifo(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0 && S_ISFIFO(st.st_mode);
}

Status WriteWhole(const std::string& path, const char* what, const std::string& bytes) {
  AtomicFileWriter out;
  POCKET_RETURN_IF_ERROR(out.Open(path, what));
  out.Write(bytes.data(), bytes.size());
  return out.Commit();
}

TEST(FileIo, ReadsARegularFileWhole) {
  const std::string path = testing::MakeTempDir("file_io_read") + "/a.txt";
  std::ofstream(path, std::ios::binary) << "hello pocket";
  StatusOr<std::string> text = ReadRegularFile(path, "text file", 100);
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_EQ(*text, "hello pocket");
}

TEST(FileIo, ReadOfAFifoIsRefusedWithoutBlocking) {
  BlockGuard guard;
  const std::string path = testing::MakeTempDir("file_io_fifo") + "/fifo";
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  Status s = ReadRegularFile(path, "session state file", 1 << 20).status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "'" + path +
                             "' is a FIFO (named pipe), not a regular file; give the path of a "
                             "session state file");
}

TEST(FileIo, ReadOfADeviceIsRefused) {
  BlockGuard guard;
  Status s = ReadRegularFile("/dev/zero", "session state file", 1 << 20).status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "'/dev/zero' is a character device, not a regular file; give the path of a session "
            "state file");
}

TEST(FileIo, ReadOfADirectorySaysSo) {
  const std::string dir = testing::MakeTempDir("file_io_dir");
  Status s = ReadRegularFile(dir, "SentencePiece .model file", 1 << 20).status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "'" + dir + "' is a directory; give the path of a SentencePiece .model file");
}

TEST(FileIo, ReadIsBoundedByTheAllowedSize) {
  const std::string path = testing::MakeTempDir("file_io_big") + "/big";
  std::ofstream(path, std::ios::binary) << std::string(101, 'x');
  Status s = ReadRegularFile(path, "session state file", 100).status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "'" + path +
                             "' is 101 bytes, larger than any session state file (at most 100 "
                             "bytes); check the path");
}

TEST(FileIo, MissingFileIsNotFound) {
  const std::string path = testing::MakeTempDir("file_io_missing") + "/none";
  Status s = ReadRegularFile(path, "text file", 100).status();
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.message(), "cannot open '" + path + "': No such file or directory");
}

TEST(FileIo, WriteReplacesARegularFileAndLeavesNoTemporary) {
  const std::string path = testing::MakeTempDir("file_io_write") + "/out";
  std::ofstream(path, std::ios::binary) << "old contents, longer than the new";
  ASSERT_TRUE(WriteWhole(path, "session state file", "new").ok());
  EXPECT_EQ(Slurp(path), "new");
  EXPECT_FALSE(Exists(path + ".tmp"));
}

TEST(FileIo, WriteOverAFifoIsRefusedAndLeavesItAFifo) {
  BlockGuard guard;
  const std::string path = testing::MakeTempDir("file_io_wfifo") + "/fifo";
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  Status s = WriteWhole(path, "session state file", "bytes");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "'" + path +
                             "' exists and is a FIFO (named pipe); Pocket writes a session state "
                             "file only to a new path or over a regular file, so give another "
                             "path");
  EXPECT_TRUE(IsFifo(path));
  EXPECT_FALSE(Exists(path + ".tmp"));
}

// A device node as the destination is refused before anything is written
// (the check alone: a test must not risk /dev/null).
TEST(FileIo, DeviceDestinationIsRefused) {
  Status s = CheckWriteDestination("/dev/null", "NumPy .npy file");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("'/dev/null' exists and is a character device"), std::string::npos)
      << s.message();
  const std::string dir = testing::MakeTempDir("file_io_wdir");
  s = WriteWhole(dir, "NumPy .npy file", "bytes");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("exists and is a directory"), std::string::npos) << s.message();
}

// A FIFO left at the temporary path neither blocks the write nor is
// written through.
TEST(FileIo, FifoAtTheTemporaryPathIsRefused) {
  BlockGuard guard;
  const std::string path = testing::MakeTempDir("file_io_tmpfifo") + "/out";
  ASSERT_EQ(::mkfifo((path + ".tmp").c_str(), 0600), 0);
  Status s = WriteWhole(path, "session state file", "bytes");
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find(path + ".tmp"), std::string::npos) << s.message();
  EXPECT_FALSE(Exists(path));
  EXPECT_TRUE(IsFifo(path + ".tmp"));
}

TEST(FileIo, WriteIntoAMissingDirectoryNamesThePath) {
  const std::string path = testing::MakeTempDir("file_io_nodir") + "/no/such/out";
  Status s = WriteWhole(path, "session state file", "bytes");
  EXPECT_EQ(s.code(), StatusCode::kIoError);
  EXPECT_EQ(s.message(), "cannot create '" + path + ".tmp', the temporary file for '" + path +
                             "': No such file or directory");
}

}  // namespace
}  // namespace pocket
