// Runs the `pocket` CLI (path in $POCKET_CLI, set by ctest) through /bin/sh
// and captures its exit status and output, for tests of the command line.
#pragma once

#include <string>

namespace pocket::testing {

struct CliOutput {
  int exit_code = -1;  // -1 when the process did not exit normally (signal)
  std::string out;     // stdout, then stderr when requested
};

// `stdin_printf` (a printf format) is piped in when non-empty; stderr is
// appended to `out` when `with_stderr`, else discarded.
CliOutput RunCli(const std::string& args, const std::string& stdin_printf = "",
                 bool with_stderr = false);

}  // namespace pocket::testing
