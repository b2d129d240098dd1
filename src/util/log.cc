#include "util/log.h"

#include <cstdarg>
#include <cstdio>
#include <mutex>
#include <vector>

namespace pocket {
namespace {

std::mutex& LogMutex() {
  static std::mutex mu;
  return mu;
}

LogCallback& Callback() {
  static LogCallback cb;
  return cb;
}

}  // namespace

void SetLogCallback(LogCallback callback) {
  std::lock_guard<std::mutex> lock(LogMutex());
  Callback() = std::move(callback);
}

void Log(LogLevel level, const char* fmt, ...) {
  std::lock_guard<std::mutex> lock(LogMutex());
  if (!Callback()) return;  // formatting is skipped when nobody listens
  va_list args;
  va_start(args, fmt);
  va_list copy;
  va_copy(copy, args);
  const int n = std::vsnprintf(nullptr, 0, fmt, copy);
  va_end(copy);
  std::vector<char> buf(n > 0 ? static_cast<size_t>(n) + 1 : 1, '\0');
  if (n > 0) std::vsnprintf(buf.data(), buf.size(), fmt, args);
  va_end(args);
  Callback()(level, std::string(buf.data()));
}

}  // namespace pocket
