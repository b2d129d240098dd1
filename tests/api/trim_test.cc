// pocket_session_trim on the bundled stories260K model: after either level
// a conversation continues with the ids an untouched session generates, and
// the memory it frees shows in pocket_session_memory.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "pocket/pocket.hpp"

namespace {

const char kModel[] = POCKET_TEST_MODELS "/stories260K-f32.pocket";

bool Exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

class TrimTest : public ::testing::Test {
 protected:
  void SetUp() override {
    pocket::ModelOptions options;
    options.threads = 1;
    ASSERT_TRUE(pocket::Model::Load(kModel, options, &model_).ok()) << pocket_last_error();
    path_ = std::string(POCKET_BINARY_DIR) + "/trim_test_" + std::to_string(getpid()) + ".state";
  }
  void TearDown() override { std::remove(path_.c_str()); }

  pocket::Session NewSession() {
    pocket::Session session;
    pocket::SessionOptions options;
    options.kv_type = 1;  // f32: the same numbers whether or not the cache went to a file
    EXPECT_TRUE(model_.NewSession(options, &session).ok()) << pocket_last_error();
    return session;
  }

  // Generates n greedy tokens continuing the session; their ids.
  static std::vector<int32_t> Continue(pocket::Session& session, const std::string& prompt, int n) {
    pocket::Sampling sampling;
    sampling.max_new_tokens = n;
    sampling.ignore_eos = 1;
    std::vector<int32_t> ids;
    const pocket::Status s = session.Generate(prompt, sampling, [&](std::string_view, int32_t id) {
      ids.push_back(id);
      return true;
    });
    EXPECT_TRUE(s.ok()) << pocket_last_error();
    return ids;
  }

  // The ids of 20 tokens then 15 more in a session never trimmed.
  std::vector<int32_t> Untouched() {
    pocket::Session session = NewSession();
    std::vector<int32_t> ids = Continue(session, "Once upon a time", 20);
    const std::vector<int32_t> more = Continue(session, " and", 15);
    ids.insert(ids.end(), more.begin(), more.end());
    return ids;
  }

  pocket::Model model_;
  std::string path_;
};

TEST_F(TrimTest, ScratchTrimFreesTheBuffersAndTheConversationGoesOn) {
  pocket::Session session = NewSession();
  std::vector<int32_t> ids = Continue(session, "Once upon a time", 20);
  pocket::MemoryUsage before, after;
  ASSERT_TRUE(session.Memory(&before).ok());
  ASSERT_GT(before.scratch, 0u);
  ASSERT_TRUE(session.Trim(POCKET_TRIM_SCRATCH).ok()) << pocket_last_error();
  ASSERT_TRUE(session.Memory(&after).ok());
  EXPECT_EQ(after.scratch, 0u);
  EXPECT_EQ(after.kv, before.kv);  // the pages hold the conversation
  const std::vector<int32_t> more = Continue(session, " and", 15);
  ids.insert(ids.end(), more.begin(), more.end());
  EXPECT_EQ(ids, Untouched());
}

// Suspended, the session holds no KV cache and its state is in the file;
// the next generate restores it, continues exactly, and deletes the file.
TEST_F(TrimTest, SuspendWritesTheCacheOutAndTheNextCallRestoresIt) {
  pocket::Session session = NewSession();
  std::vector<int32_t> ids = Continue(session, "Once upon a time", 20);
  const int32_t position = session.position();
  ASSERT_TRUE(session.Trim(POCKET_TRIM_SUSPEND, path_).ok()) << pocket_last_error();
  EXPECT_TRUE(Exists(path_));
  pocket::MemoryUsage suspended;
  ASSERT_TRUE(session.Memory(&suspended).ok());
  EXPECT_EQ(suspended.kv, 0u);
  EXPECT_EQ(suspended.scratch, 0u);
  EXPECT_EQ(session.position(), position);
  // Suspending again only frees scratch: the file stays the session's.
  ASSERT_TRUE(session.Trim(POCKET_TRIM_SUSPEND, path_ + ".other").ok());
  EXPECT_FALSE(Exists(path_ + ".other"));

  const std::vector<int32_t> more = Continue(session, " and", 15);
  ids.insert(ids.end(), more.begin(), more.end());
  EXPECT_EQ(ids, Untouched());
  EXPECT_FALSE(Exists(path_));
}

TEST_F(TrimTest, ResetOrFreeOfASuspendedSessionDeletesItsFile) {
  {
    pocket::Session session = NewSession();
    Continue(session, "Once upon a time", 5);
    ASSERT_TRUE(session.Trim(POCKET_TRIM_SUSPEND, path_).ok());
    ASSERT_TRUE(session.Reset().ok());
    EXPECT_FALSE(Exists(path_));
    EXPECT_EQ(session.position(), 0);
    Continue(session, "Once upon a time", 5);
    ASSERT_TRUE(session.Trim(POCKET_TRIM_SUSPEND, path_).ok());
    EXPECT_TRUE(Exists(path_));
  }
  EXPECT_FALSE(Exists(path_));
}

// A suspend that cannot write its file changes nothing.
TEST_F(TrimTest, SuspendToAnUnwritablePathLeavesTheSessionAsItWas) {
  pocket::Session session = NewSession();
  std::vector<int32_t> ids = Continue(session, "Once upon a time", 20);
  const pocket::Status s = session.Trim(POCKET_TRIM_SUSPEND, "/nonexistent-dir/state");
  EXPECT_FALSE(s.ok());
  EXPECT_NE(std::string(pocket_last_error()).find("/nonexistent-dir/state"), std::string::npos)
      << pocket_last_error();
  pocket::MemoryUsage usage;
  ASSERT_TRUE(session.Memory(&usage).ok());
  EXPECT_GT(usage.kv, 0u);
  const std::vector<int32_t> more = Continue(session, " and", 15);
  ids.insert(ids.end(), more.begin(), more.end());
  EXPECT_EQ(ids, Untouched());
}

TEST_F(TrimTest, BadArgumentsAreInvalidWithAMessage) {
  EXPECT_EQ(pocket_session_trim(nullptr, POCKET_TRIM_SCRATCH, nullptr), POCKET_INVALID_ARGUMENT);
  EXPECT_NE(std::string(pocket_last_error()).find("NULL"), std::string::npos);
  pocket::Session session = NewSession();
  for (int32_t level : {0, 3, -1}) {
    EXPECT_EQ(pocket_session_trim(session.get(), level, nullptr), POCKET_INVALID_ARGUMENT);
    EXPECT_NE(std::string(pocket_last_error()).find("level must be"), std::string::npos);
  }
  EXPECT_EQ(pocket_session_trim(session.get(), POCKET_TRIM_SUSPEND, nullptr),
            POCKET_INVALID_ARGUMENT);
  EXPECT_NE(std::string(pocket_last_error()).find("needs a state_path"), std::string::npos);
  EXPECT_EQ(pocket_session_trim(session.get(), POCKET_TRIM_SUSPEND, ""), POCKET_INVALID_ARGUMENT);
}

}  // namespace
