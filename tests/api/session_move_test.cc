// pocket_session_move on the bundled stories260K model: a conversation
// moved cpu -> reference -> cpu (f32 weights, f32 KV, f32 maths: both
// backends compute the same numbers) goes on with the ids of a session that
// never moved; a suspended session moves too; NULL arguments and a model of
// another file return an error and leave the session where it was.
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "pocket/pocket.h"
#include "pocket/pocket.hpp"

namespace {

const char kModel[] = POCKET_TEST_MODELS "/stories260K-f32.pocket";

class SessionMoveTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* backend : {"cpu", "reference"}) {
      pocket::ModelOptions options;
      options.threads = 1;
      options.backend = backend;
      options.quant_math = POCKET_QUANT_MATH_F32;
      pocket::Model& model = backend[0] == 'c' ? cpu_ : reference_;
      ASSERT_TRUE(pocket::Model::Load(kModel, options, &model).ok()) << pocket_last_error();
    }
    path_ = std::string(POCKET_BINARY_DIR) + "/session_move_test_" + std::to_string(getpid()) +
            ".state";
  }
  void TearDown() override { std::remove(path_.c_str()); }

  pocket::Session NewSession(pocket::Model& model) {
    pocket::Session session;
    pocket::SessionOptions options;
    options.kv_type = 1;  // f32
    EXPECT_TRUE(model.NewSession(options, &session).ok()) << pocket_last_error();
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

  // 20 tokens, 15 more, 15 more, in a session that never moves.
  std::vector<int32_t> Unmoved() {
    pocket::Session session = NewSession(cpu_);
    std::vector<int32_t> ids = Continue(session, "Once upon a time", 20);
    for (const char* more : {" and", " then"}) {
      const std::vector<int32_t> next = Continue(session, more, 15);
      ids.insert(ids.end(), next.begin(), next.end());
    }
    return ids;
  }

  pocket::Model cpu_, reference_;
  std::string path_;
};

TEST_F(SessionMoveTest, CpuToReferenceToCpuGoesOnWithTheSameIds) {
  pocket::Session session = NewSession(cpu_);
  std::vector<int32_t> ids = Continue(session, "Once upon a time", 20);
  const int32_t position = session.position();
  ASSERT_TRUE(session.MoveTo(reference_).ok()) << pocket_last_error();
  EXPECT_EQ(session.position(), position);
  std::vector<int32_t> next = Continue(session, " and", 15);
  ids.insert(ids.end(), next.begin(), next.end());
  ASSERT_TRUE(session.MoveTo(cpu_).ok()) << pocket_last_error();
  next = Continue(session, " then", 15);
  ids.insert(ids.end(), next.begin(), next.end());
  EXPECT_EQ(ids, Unmoved());
}

// A session suspended by pocket_session_trim moves without its cache; the
// next call restores the state file on the new backend.
TEST_F(SessionMoveTest, ASuspendedSessionMovesAndResumesThere) {
  pocket::Session session = NewSession(cpu_);
  std::vector<int32_t> ids = Continue(session, "Once upon a time", 20);
  ASSERT_TRUE(session.Trim(POCKET_TRIM_SUSPEND, path_).ok()) << pocket_last_error();
  ASSERT_TRUE(session.MoveTo(reference_).ok()) << pocket_last_error();
  std::vector<int32_t> next = Continue(session, " and", 15);
  ids.insert(ids.end(), next.begin(), next.end());
  ASSERT_TRUE(session.MoveTo(cpu_).ok()) << pocket_last_error();
  next = Continue(session, " then", 15);
  ids.insert(ids.end(), next.begin(), next.end());
  EXPECT_EQ(ids, Unmoved());
}

TEST_F(SessionMoveTest, BadArgumentsAreRefusedAndTheSessionStays) {
  pocket::Session session = NewSession(cpu_);
  const std::vector<int32_t> ids = Continue(session, "Once upon a time", 10);
  const int32_t position = session.position();

  EXPECT_EQ(pocket_session_move(nullptr, reference_.get()), POCKET_INVALID_ARGUMENT);
  EXPECT_NE(std::string(pocket_last_error()).find("pocket_session_move"), std::string::npos);
  EXPECT_EQ(pocket_session_move(session.get(), nullptr), POCKET_INVALID_ARGUMENT);
  EXPECT_NE(std::string(pocket_last_error()).find("NULL"), std::string::npos);

  // A model of another file (stories260K quantized to q8): its KV rows
  // would mean nothing.
  pocket::Model other;
  pocket::ModelOptions options;
  options.threads = 1;
  ASSERT_TRUE(
      pocket::Model::Load(POCKET_TEST_DATA "/gguf-py/stories260K-q8_0.gguf", options, &other).ok())
      << pocket_last_error();
  EXPECT_EQ(pocket_session_move(session.get(), other.get()), POCKET_INVALID_ARGUMENT);
  EXPECT_NE(std::string(pocket_last_error()).find("same model file"), std::string::npos)
      << pocket_last_error();

  // Still on the CPU model, with its conversation: it goes on as one that
  // was never asked to move.
  EXPECT_EQ(session.position(), position);
  std::vector<int32_t> all = ids;
  const std::vector<int32_t> next = Continue(session, " and", 10);
  all.insert(all.end(), next.begin(), next.end());
  pocket::Session fresh = NewSession(cpu_);
  std::vector<int32_t> want = Continue(fresh, "Once upon a time", 10);
  const std::vector<int32_t> more = Continue(fresh, " and", 10);
  want.insert(want.end(), more.begin(), more.end());
  EXPECT_EQ(all, want);
}

}  // namespace
