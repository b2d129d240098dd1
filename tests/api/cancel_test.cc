// pocket_session_cancel from another thread, on the bundled stories260K
// model: the generation stops after the token it was computing, the session
// keeps every token it generated, and a later call continues exactly as an
// uninterrupted generation does.
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "pocket/pocket.hpp"

namespace {

const char kModel[] = POCKET_TEST_MODELS "/stories260K-f32.pocket";

class CancelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    pocket::ModelOptions options;
    options.threads = 1;
    ASSERT_TRUE(pocket::Model::Load(kModel, options, &model_).ok()) << pocket_last_error();
  }
  pocket::Session NewSession() {
    pocket::Session session;
    EXPECT_TRUE(model_.NewSession(pocket::SessionOptions(), &session).ok()) << pocket_last_error();
    return session;
  }
  static pocket::Sampling Greedy(int n) {
    pocket::Sampling sampling;
    sampling.max_new_tokens = n;
    sampling.ignore_eos = 1;
    return sampling;
  }
  pocket::Model model_;
};

// The callback of the 5th piece has another thread cancel and waits until
// that call returned: the generation ends right after that token, with the
// cancelled status and stop reason, and what it generated stays in the
// session: 20 more tokens continue it exactly as one call of 25 does.
TEST_F(CancelTest, CancelFromAnotherThreadStopsAfterTheCurrentToken) {
  pocket::Session session = NewSession();
  std::mutex mutex;
  std::condition_variable cv;
  bool ask = false, asked = false;
  pocket::Status cancel_status(POCKET_INTERNAL);
  std::thread canceller([&] {
    std::unique_lock<std::mutex> lock(mutex);
    cv.wait(lock, [&] { return ask; });
    cancel_status = session.Cancel();
    asked = true;
    cv.notify_all();
  });
  int pieces = 0;
  pocket::Generation first;
  const pocket::Status status = session.Generate(
      "Once upon a time", Greedy(100),
      [&](std::string_view, int32_t) {
        if (++pieces == 5) {
          std::unique_lock<std::mutex> lock(mutex);
          ask = true;
          cv.notify_all();
          cv.wait(lock, [&] { return asked; });
        }
        return true;
      },
      &first);
  canceller.join();
  EXPECT_TRUE(cancel_status.ok());
  EXPECT_EQ(status.code(), POCKET_CANCELLED) << pocket_last_error();
  EXPECT_EQ(first.stop_reason, POCKET_STOP_CANCELLED);
  EXPECT_EQ(first.n_generated, 5);
  EXPECT_EQ(pieces, 5);

  pocket::Generation rest;
  ASSERT_TRUE(session.Generate("", Greedy(20), nullptr, &rest).ok()) << pocket_last_error();
  pocket::Session whole = NewSession();
  pocket::Generation all;
  ASSERT_TRUE(whole.Generate("Once upon a time", Greedy(25), nullptr, &all).ok());
  EXPECT_EQ(first.text + rest.text, all.text);
  EXPECT_EQ(session.position(), whole.position());
}

// A cancel with no generation running does nothing: the next call runs to
// its length.
TEST_F(CancelTest, CancelBetweenCallsDoesNotCancelTheNextOne) {
  pocket::Session session = NewSession();
  ASSERT_TRUE(session.Cancel().ok());
  pocket::Generation result;
  EXPECT_TRUE(session.Generate("Once upon a time", Greedy(8), nullptr, &result).ok())
      << pocket_last_error();
  EXPECT_EQ(result.n_generated, 8);
  EXPECT_EQ(result.stop_reason, POCKET_STOP_LENGTH);
}

// Cancelling from the callback itself works like returning false.
TEST_F(CancelTest, CancelFromTheCallbackStopsAfterThatToken) {
  pocket::Session session = NewSession();
  pocket::Generation result;
  int pieces = 0;
  const pocket::Status status = session.Generate(
      "Once upon a time", Greedy(50),
      [&](std::string_view, int32_t) {
        if (++pieces == 3) EXPECT_TRUE(session.Cancel().ok());
        return true;
      },
      &result);
  EXPECT_EQ(status.code(), POCKET_CANCELLED);
  EXPECT_EQ(result.n_generated, 3);
}

TEST(CancelArgs, NullSessionIsAnInvalidArgumentWithAMessage) {
  EXPECT_EQ(pocket_session_cancel(nullptr), POCKET_INVALID_ARGUMENT);
  EXPECT_NE(std::string(pocket_last_error()).find("NULL"), std::string::npos);
}

}  // namespace
