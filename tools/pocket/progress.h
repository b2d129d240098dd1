// Conversion progress on stderr: one self-overwriting line on a terminal,
// and a line per tenth of the work otherwise (logs stay short); and the
// closing report shared by `convert` and `synth`.
#pragma once

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>

#include "convert/converter.h"
#include "tools/pocket/commands.h"
#include "tools/pocket/option_flags.h"

namespace pocket::cli {

class StderrProgress {
 public:
  StderrProgress() : tty_(::isatty(STDERR_FILENO) != 0) {}
  ~StderrProgress() {
    if (tty_ && started_) std::fputc('\n', stderr);
  }

  ProgressFn Callback() {
    return [this](size_t i, size_t total, const std::string& name) {
      started_ = true;
      if (tty_) {
        std::fprintf(stderr, "\r\033[K[%zu/%zu] %s", i + 1, total, name.c_str());
        return;
      }
      const size_t tenth = (i + 1) * 10 / total;
      if (i == 0 || tenth != last_tenth_) {
        std::fprintf(stderr, "[%zu/%zu] %s\n", i + 1, total, name.c_str());
        last_tenth_ = tenth;
      }
    };
  }

 private:
  bool tty_;
  bool started_ = false;
  size_t last_tenth_ = 0;
};

// Prints "wrote OUT: summary" or "<command>: error" and returns the exit code.
inline int ReportConversion(const char* command, const StatusOr<ConvertStats>& stats,
                            const std::string& out, std::chrono::steady_clock::time_point start) {
  if (!stats.ok()) {
    std::fprintf(stderr, "pocket %s: %s\n", command, InFlagTerms(stats.status()).c_str());
    return kExitError;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::fprintf(stderr, "wrote %s: %s\n", out.c_str(),
               FormatConvertSummary(*stats, seconds).c_str());
  return kExitOk;
}

}  // namespace pocket::cli
