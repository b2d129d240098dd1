// The small parts of the public API that generation tests do not reach:
// the version, the status names and the log callback.
#include <cstring>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "pocket/pocket.hpp"

namespace {

const char kModel[] = POCKET_TEST_MODELS "/stories260K-f32.pocket";

// The version the build declares in CMakeLists.txt's project(), passed to
// this test by CMake, not read from the library.
TEST(PublicSurface, VersionIsTheProjectVersion) {
  EXPECT_STREQ(pocket_version(), POCKET_PROJECT_VERSION);
}

// Every status has its own documented name; a value outside the enum is
// named as unknown instead of crashing.
TEST(PublicSurface, EveryStatusHasItsName) {
  const std::vector<std::pair<pocket_status, const char*>> names = {
      {POCKET_OK, "OK"},
      {POCKET_INVALID_ARGUMENT, "InvalidArgument"},
      {POCKET_NOT_FOUND, "NotFound"},
      {POCKET_IO_ERROR, "IoError"},
      {POCKET_CORRUPT_FILE, "CorruptFile"},
      {POCKET_UNSUPPORTED, "Unsupported"},
      {POCKET_BUDGET_EXCEEDED, "BudgetExceeded"},
      {POCKET_CANCELLED, "Cancelled"},
      {POCKET_OUT_OF_RANGE, "OutOfRange"},
      {POCKET_INTERNAL, "Internal"},
      {POCKET_BUSY, "Busy"},
  };
  for (const auto& [status, name] : names) EXPECT_STREQ(pocket_status_name(status), name);
  EXPECT_STREQ(pocket_status_name(static_cast<pocket_status>(POCKET_BUSY + 1)), "Unknown");
  EXPECT_STREQ(pocket_status_name(static_cast<pocket_status>(-1)), "Unknown");
}

struct LogRecord {
  std::mutex mutex;
  std::vector<std::pair<pocket_log_level, std::string>> messages;
  static void Receive(pocket_log_level level, const char* message, void* user) {
    auto* self = static_cast<LogRecord*>(user);
    std::lock_guard<std::mutex> lock(self->mutex);
    self->messages.emplace_back(level, message);
  }
};

// A model load reports what it loaded through the callback the host set,
// with the host's user data; after the callback is cleared nothing arrives.
TEST(PublicSurface, LogCallbackReceivesTheModelLoad) {
  LogRecord record;
  pocket_set_log_callback(&LogRecord::Receive, &record);
  pocket::ModelOptions options;
  options.threads = 1;
  {
    pocket::Model model;
    ASSERT_TRUE(pocket::Model::Load(kModel, options, &model).ok());
  }
  pocket_set_log_callback(nullptr, nullptr);
  {
    pocket::Model model;
    ASSERT_TRUE(pocket::Model::Load(kModel, options, &model).ok());
  }
  ASSERT_EQ(record.messages.size(), 1u);
  EXPECT_EQ(record.messages[0].first, POCKET_LOG_INFO);
  const std::string& message = record.messages[0].second;
  EXPECT_NE(message.find(kModel), std::string::npos) << message;
  EXPECT_NE(message.find("llama, 5 layers, vocabulary 512"), std::string::npos) << message;
  EXPECT_NE(message.find("cpu backend, threads 1"), std::string::npos) << message;
}

}  // namespace
