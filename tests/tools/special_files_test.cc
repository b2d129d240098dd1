// Paths that name something other than a regular file, given to every
// command and C API call that reads or writes a file by path: a FIFO, a
// device, a directory. Reads are refused at once with a message that says
// what the path is (a FIFO used to block open() forever, /dev/zero to read
// until memory ran out, a directory to give "read error" or a SentencePiece
// internal error); writes never replace such a destination (convert -o
// used to turn a FIFO into a regular file). Each test ends within seconds
// or fails: a call that blocks is killed by the alarm.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include <gtest/gtest.h>

#include "pocket/pocket.h"
#include "testing/run_cli.h"
#include "testing/temp_dir.h"

namespace pocket {
namespace {

using testing::CliOutput;
using testing::RunCli;

const std::string kModel = std::string(POCKET_TEST_MODELS) + "/stories260K-f32.pocket";
const std::string kStoriesBin = std::string(POCKET_MODELS_DIR) + "/stories260K/stories260K.bin";
const std::string kStoriesTok = std::string(POCKET_MODELS_DIR) + "/stories260K/tok512.model";

// A blocked call ends the test process (SIGALRM's default action) instead of
// hanging the suite.
class SpecialFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ::alarm(60);
    dir_ = testing::MakeTempDir("special_files");
    fifo_ = dir_ + "/fifo";
    ASSERT_EQ(::mkfifo(fifo_.c_str(), 0600), 0);
  }
  void TearDown() override { ::alarm(0); }

  static bool IsFifo(const std::string& path) {
    struct stat st;
    return ::lstat(path.c_str(), &st) == 0 && S_ISFIFO(st.st_mode);
  }
  static bool Exists(const std::string& path) {
    struct stat st;
    return ::lstat(path.c_str(), &st) == 0;
  }

  std::string dir_, fifo_;
};

std::string FifoModelMessage(const std::string& fifo) {
  return "'" + fifo + "' is a FIFO (named pipe), not a regular file; give the path of a Pocket " +
         "model (.pocket file)";
}

TEST_F(SpecialFilesTest, FifoAsModelIsRefusedByRunVerifyAndInspect) {
  for (const std::string& command :
       {"run -m '" + fifo_ + "' -p hi -n 1", "verify '" + fifo_ + "'", "inspect '" + fifo_ + "'"}) {
    const CliOutput o = RunCli(command, "", true);
    EXPECT_EQ(o.exit_code, 1) << command << ": " << o.out;
    EXPECT_NE(o.out.find(FifoModelMessage(fifo_)), std::string::npos) << command << ": " << o.out;
  }
}

TEST_F(SpecialFilesTest, FifoAsConvertInputIsRefused) {
  const CliOutput o = RunCli(
      "convert '" + fifo_ + "' --tokenizer '" + kStoriesTok + "' -o '" + dir_ + "/out.pocket'", "",
      true);
  EXPECT_EQ(o.exit_code, 1) << o.out;
  EXPECT_NE(o.out.find("'" + fifo_ +
                       "' is a FIFO (named pipe), not a regular file; give the "
                       "path of a llama2.c checkpoint (.bin file)"),
            std::string::npos)
      << o.out;
}

TEST_F(SpecialFilesTest, DirectoryAsTokenizerSaysSo) {
  const CliOutput o = RunCli(
      "convert '" + kStoriesBin + "' --tokenizer '" + dir_ + "' -o '" + dir_ + "/out.pocket'", "",
      true);
  EXPECT_EQ(o.exit_code, 1) << o.out;
  EXPECT_NE(o.out.find("'" + dir_ +
                       "' is a directory; give the path of a SentencePiece .model "
                       "file (--tokenizer FILE)"),
            std::string::npos)
      << o.out;
}

// A source file that is there but not a regular file is refused as what it
// is, not taken for absent ("has no config.json").
TEST_F(SpecialFilesTest, FifoInAHuggingFaceDirectoryIsRefused) {
  const std::string model_dir = dir_ + "/hf";
  ASSERT_EQ(::mkdir(model_dir.c_str(), 0755), 0);
  ASSERT_EQ(::mkfifo((model_dir + "/config.json").c_str(), 0600), 0);
  const CliOutput o = RunCli("convert '" + model_dir + "' -o '" + dir_ + "/out.pocket'", "", true);
  EXPECT_EQ(o.exit_code, 1) << o.out;
  EXPECT_NE(o.out.find("'" + model_dir +
                       "/config.json' is a FIFO (named pipe), not a regular "
                       "file"),
            std::string::npos)
      << o.out;
}

TEST_F(SpecialFilesTest, ConvertOutputFifoIsRefusedAndKept) {
  const CliOutput o =
      RunCli("convert '" + kStoriesBin + "' --tokenizer '" + kStoriesTok + "' -o '" + fifo_ + "'",
             "", true);
  EXPECT_EQ(o.exit_code, 1) << o.out;
  EXPECT_NE(o.out.find("'" + fifo_ + "' exists and is a FIFO (named pipe)"), std::string::npos)
      << o.out;
  EXPECT_TRUE(IsFifo(fifo_));
  EXPECT_FALSE(Exists(fifo_ + ".tmp"));
}

TEST_F(SpecialFilesTest, LogitsOutputFifoIsRefusedAndKept) {
  const CliOutput o =
      RunCli("logits -m '" + kModel + "' --tokens 1,2 -o '" + fifo_ + "'", "", true);
  EXPECT_EQ(o.exit_code, 1) << o.out;
  EXPECT_NE(o.out.find("'" + fifo_ +
                       "' exists and is a FIFO (named pipe); Pocket writes a NumPy "
                       ".npy file only to a new path or over a regular file"),
            std::string::npos)
      << o.out;
  EXPECT_TRUE(IsFifo(fifo_));
}

TEST_F(SpecialFilesTest, PerplexityOfAFifoIsRefused) {
  const CliOutput o = RunCli("perplexity -m '" + kModel + "' -f '" + fifo_ + "'", "", true);
  EXPECT_EQ(o.exit_code, 1) << o.out;
  EXPECT_NE(o.out.find("'" + fifo_ +
                       "' is a FIFO (named pipe), not a regular file; give the "
                       "path of a text file"),
            std::string::npos)
      << o.out;
}

TEST_F(SpecialFilesTest, TokenizerSourceDirectoryIsRefused) {
  const CliOutput o = RunCli("tokenize --spm-model '" + dir_ + "' --text hi", "", true);
  EXPECT_EQ(o.exit_code, 1) << o.out;
  EXPECT_NE(o.out.find("'" + dir_ +
                       "' is a directory; give the path of a SentencePiece .model "
                       "file (--spm-model)"),
            std::string::npos)
      << o.out;
}

// tokenizer_config.json beside --tokenizer-json is optional, but one that is
// there as a FIFO is refused, not read (which would block) or ignored.
TEST_F(SpecialFilesTest, FifoTokenizerConfigBesideTokenizerJsonIsRefused) {
  const std::string json = std::string(POCKET_TEST_DATA) + "/qwen3-tokenizer/tokenizer.json";
  ASSERT_EQ(::symlink(json.c_str(), (dir_ + "/tokenizer.json").c_str()), 0);
  ASSERT_EQ(::mkfifo((dir_ + "/tokenizer_config.json").c_str(), 0600), 0);
  const CliOutput o =
      RunCli("tokenize --tokenizer-json '" + dir_ + "/tokenizer.json' --text hi", "", true);
  EXPECT_EQ(o.exit_code, 1) << o.out;
  EXPECT_NE(o.out.find("'" + dir_ + "/tokenizer_config.json' is a FIFO (named pipe)"),
            std::string::npos)
      << o.out;
}

// The C API: pocket_model_load of a FIFO, pocket_session_load of a FIFO,
// /dev/zero and a directory, pocket_session_save over a FIFO.
class SpecialFilesApiTest : public SpecialFilesTest {
 protected:
  void SetUp() override {
    SpecialFilesTest::SetUp();
    ASSERT_EQ(pocket_model_load(kModel.c_str(), nullptr, &model_), POCKET_OK)
        << pocket_last_error();
    ASSERT_EQ(pocket_session_new(model_, nullptr, &session_), POCKET_OK) << pocket_last_error();
  }
  void TearDown() override {
    pocket_session_free(session_);
    pocket_model_free(model_);
    SpecialFilesTest::TearDown();
  }

  pocket_model* model_ = nullptr;
  pocket_session* session_ = nullptr;
};

TEST_F(SpecialFilesApiTest, ModelLoadOfAFifoIsRefused) {
  pocket_model* model = nullptr;
  EXPECT_EQ(pocket_model_load(fifo_.c_str(), nullptr, &model), POCKET_INVALID_ARGUMENT);
  EXPECT_EQ(model, nullptr);
  EXPECT_EQ(std::string(pocket_last_error()), FifoModelMessage(fifo_));
}

TEST_F(SpecialFilesApiTest, SessionLoadOfAFifoADeviceOrADirectoryIsRefused) {
  const std::string want = "; give the path of a session state file saved with this model";
  EXPECT_EQ(pocket_session_load(session_, fifo_.c_str()), POCKET_INVALID_ARGUMENT);
  EXPECT_EQ(std::string(pocket_last_error()),
            "'" + fifo_ + "' is a FIFO (named pipe), not a regular file" + want);
  EXPECT_EQ(pocket_session_load(session_, "/dev/zero"), POCKET_INVALID_ARGUMENT);
  EXPECT_EQ(std::string(pocket_last_error()),
            "'/dev/zero' is a character device, not a regular file" + want);
  EXPECT_EQ(pocket_session_load(session_, dir_.c_str()), POCKET_INVALID_ARGUMENT);
  EXPECT_EQ(std::string(pocket_last_error()), "'" + dir_ + "' is a directory" + want);
}

// A file larger than any state of this model is refused before it is read.
TEST_F(SpecialFilesApiTest, SessionLoadIsBoundedByTheLargestState) {
  const std::string big = dir_ + "/big.state";
  const int fd = ::open(big.c_str(), O_WRONLY | O_CREAT, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, off_t{1} << 32), 0);  // sparse: takes no disk space
  ::close(fd);
  EXPECT_EQ(pocket_session_load(session_, big.c_str()), POCKET_INVALID_ARGUMENT);
  EXPECT_NE(std::string(pocket_last_error())
                .find("is 4294967296 bytes, larger than any session state file saved with this "
                      "model (at most "),
            std::string::npos)
      << pocket_last_error();
}

TEST_F(SpecialFilesApiTest, SessionSaveOverAFifoIsRefusedAndKept) {
  EXPECT_EQ(pocket_session_save(session_, fifo_.c_str()), POCKET_INVALID_ARGUMENT);
  EXPECT_NE(std::string(pocket_last_error())
                .find("'" + fifo_ +
                      "' exists and is a FIFO (named pipe); Pocket writes a session "
                      "state file only to a new path or over a regular file"),
            std::string::npos)
      << pocket_last_error();
  EXPECT_TRUE(IsFifo(fifo_));
  EXPECT_FALSE(Exists(fifo_ + ".tmp"));
  // A regular destination is written (through a temporary file) and loads.
  const std::string state = dir_ + "/session.state";
  ASSERT_EQ(pocket_session_save(session_, state.c_str()), POCKET_OK) << pocket_last_error();
  EXPECT_FALSE(Exists(state + ".tmp"));
  EXPECT_EQ(pocket_session_load(session_, state.c_str()), POCKET_OK) << pocket_last_error();
}

}  // namespace
}  // namespace pocket
