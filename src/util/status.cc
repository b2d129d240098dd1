#include "util/status.h"

#include <cstdio>
#include <vector>

namespace pocket {

const char* StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "OK";
    case StatusCode::kInvalidArgument: return "InvalidArgument";
    case StatusCode::kNotFound: return "NotFound";
    case StatusCode::kIoError: return "IoError";
    case StatusCode::kCorruptFile: return "CorruptFile";
    case StatusCode::kUnsupported: return "Unsupported";
    case StatusCode::kBudgetExceeded: return "BudgetExceeded";
    case StatusCode::kCancelled: return "Cancelled";
    case StatusCode::kOutOfRange: return "OutOfRange";
    case StatusCode::kInternal: return "Internal";
    case StatusCode::kBusy:
      return "Busy";
  }
  return "Unknown";
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  return std::string(StatusCodeName(code_)) + ": " + message_;
}

static std::string VStringPrintf(const char* fmt, va_list args) {
  va_list copy;
  va_copy(copy, args);
  const int n = std::vsnprintf(nullptr, 0, fmt, copy);
  va_end(copy);
  if (n <= 0) return std::string();
  std::vector<char> buf(static_cast<size_t>(n) + 1);
  std::vsnprintf(buf.data(), buf.size(), fmt, args);
  return std::string(buf.data(), static_cast<size_t>(n));
}

std::string StringPrintf(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  std::string s = VStringPrintf(fmt, args);
  va_end(args);
  return s;
}

Status Errorf(StatusCode code, const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  std::string s = VStringPrintf(fmt, args);
  va_end(args);
  return Status(code, std::move(s));
}

}  // namespace pocket
