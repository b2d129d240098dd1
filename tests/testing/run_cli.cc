#include "testing/run_cli.h"

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>

#include <gtest/gtest.h>

namespace pocket::testing {

CliOutput RunCli(const std::string& args, const std::string& stdin_printf, bool with_stderr) {
  CliOutput o;
  const char* cli = std::getenv("POCKET_CLI");
  if (cli == nullptr) {
    ADD_FAILURE() << "POCKET_CLI is not set (ctest sets it to the pocket binary)";
    return o;
  }
  std::string cmd = std::string("'") + cli + "' " + args + (with_stderr ? " 2>&1" : " 2>/dev/null");
  if (!stdin_printf.empty()) cmd = "printf '" + stdin_printf + "' | " + cmd;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) {
    ADD_FAILURE() << "popen failed for: " << cmd;
    return o;
  }
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) o.out.append(buf, n);
  const int status = pclose(p);
  o.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return o;
}

}  // namespace pocket::testing
