// Library logging. Pocket never writes to stdout/stderr itself: messages go
// to the callback the host installs (pocket_set_log_callback / SetLogCallback)
// and are dropped when none is set.
#pragma once

#include <functional>
#include <string>

namespace pocket {

enum class LogLevel : int { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

using LogCallback = std::function<void(LogLevel, const std::string&)>;

// Thread-safe; pass an empty function to silence the library again.
void SetLogCallback(LogCallback callback);
void Log(LogLevel level, const char* fmt, ...)
    __attribute__((format(printf, 2, 3)));

}  // namespace pocket
