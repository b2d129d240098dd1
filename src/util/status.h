// Status and StatusOr: how every fallible call in Pocket reports failure.
// The library builds with -fno-exceptions, so errors travel as values. Each
// message says what is wrong, where, and (when known) what to do about it.
#pragma once

#include <cstdarg>
#include <string>
#include <utility>
#include <variant>

namespace pocket {

// Values match the C API's pocket_status (include/pocket/pocket.h).
enum class StatusCode : int {
  kOk = 0,
  kInvalidArgument = 1,  // the caller passed something wrong
  kNotFound = 2,         // a file, tensor or key does not exist
  kIoError = 3,          // the OS refused a read, write or map
  kCorruptFile = 4,      // a file failed validation
  kUnsupported = 5,      // valid, but this build cannot handle it
  kBudgetExceeded = 6,   // the memory budget would be exceeded
  kCancelled = 7,        // the host's callback asked to stop
  kOutOfRange = 8,       // e.g. a prompt longer than the context
  kInternal = 9,         // a bug in Pocket
  kBusy = 10,            // the session is in another call (its callback's, or another thread's)
};

const char* StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message)
      : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "CorruptFile: tensor 'x' ..." — for logs and CLI output.
  std::string ToString() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

// printf-style constructor: Errorf(StatusCode::kCorruptFile, "at %zu", off).
Status Errorf(StatusCode code, const char* fmt, ...)
    __attribute__((format(printf, 2, 3)));
std::string StringPrintf(const char* fmt, ...)
    __attribute__((format(printf, 1, 2)));

template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(Status status) : v_(std::move(status)) {}  // NOLINT: implicit
  StatusOr(T value) : v_(std::move(value)) {}         // NOLINT: implicit

  bool ok() const { return std::holds_alternative<T>(v_); }
  Status status() const { return ok() ? Status::Ok() : std::get<Status>(v_); }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<Status, T> v_;
};

#define POCKET_CONCAT_INNER(a, b) a##b
#define POCKET_CONCAT(a, b) POCKET_CONCAT_INNER(a, b)

#define POCKET_RETURN_IF_ERROR(expr)           \
  do {                                         \
    ::pocket::Status pocket_status_ = (expr);  \
    if (!pocket_status_.ok()) return pocket_status_; \
  } while (0)

#define POCKET_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                 \
  if (!tmp.ok()) return tmp.status();                \
  lhs = std::move(tmp).value()

#define POCKET_ASSIGN_OR_RETURN(lhs, expr) \
  POCKET_ASSIGN_OR_RETURN_IMPL(POCKET_CONCAT(pocket_or_, __LINE__), lhs, expr)

}  // namespace pocket
