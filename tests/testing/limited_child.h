// Runs part of a test in a child process under resource limits, as an
// unprivileged user: how Pocket meets a phone's or a container's thread and
// memory limits. RLIMIT_NPROC does not bind root (CAP_SYS_RESOURCE), so a
// child of a root test process drops to uid and gid 65534 (nobody) after
// setting its limits; other users keep their uid, and the limit counts
// every process and thread that user has.
#pragma once

#include <grp.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>

namespace pocket::testing {

struct ChildLimits {
  rlim_t nproc = RLIM_INFINITY;          // processes and threads of the user
  rlim_t address_space = RLIM_INFINITY;  // bytes (ulimit -v)
};

struct ChildResult {
  bool exited = false;  // normally, not killed by a signal
  int exit_code = -1;   // when exited
  int signal = 0;       // when killed
  std::string output;   // what the child wrote to out_fd (and, exec'd, stdout/stderr)
};

// Exit code of a child whose limits or user could not be set.
constexpr int kChildSetupFailed = 120;
// Exit code of a child whose body let an exception escape (std::bad_alloc
// thrown through the library, in a C++ host).
constexpr int kChildThrew = 121;

// Forks; the child sets `limits`, drops to nobody where it runs as root,
// then calls body(out_fd) and exits with what it returns (kChildThrew
// where it throws, so the child never returns to gtest). Everything the
// child writes to out_fd comes back in `output`. The body runs in a copy of
// the test process: it may call the library and exec programs.
inline ChildResult RunLimitedChild(const ChildLimits& limits,
                                   const std::function<int(int out_fd)>& body) {
  ChildResult result;
  int fds[2];
  if (::pipe(fds) != 0) return result;
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    const rlimit nproc{limits.nproc, limits.nproc};
    const rlimit as{limits.address_space, limits.address_space};
    if ((limits.nproc != RLIM_INFINITY && ::setrlimit(RLIMIT_NPROC, &nproc) != 0) ||
        (limits.address_space != RLIM_INFINITY && ::setrlimit(RLIMIT_AS, &as) != 0)) {
      ::_exit(kChildSetupFailed);
    }
    if (::geteuid() == 0 &&
        (::setgroups(0, nullptr) != 0 || ::setgid(65534) != 0 || ::setuid(65534) != 0)) {
      ::_exit(kChildSetupFailed);
    }
    int code = kChildThrew;
    try {
      code = body(fds[1]);
    } catch (...) {
    }
    ::_exit(code);
  }
  ::close(fds[1]);
  if (pid < 0) {
    ::close(fds[0]);
    return result;
  }
  char buf[4096];
  ssize_t got;
  while ((got = ::read(fds[0], buf, sizeof(buf))) > 0) result.output.append(buf, got);
  ::close(fds[0]);
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid) return result;
  result.exited = WIFEXITED(status);
  result.exit_code = result.exited ? WEXITSTATUS(status) : -1;
  result.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  return result;
}

// Runs the `pocket` CLI ($POCKET_CLI, set by ctest) with `args` in a child
// under `limits`; stdout and stderr come back in `output`.
inline ChildResult RunCliLimited(const ChildLimits& limits, const std::string& args) {
  const char* cli = std::getenv("POCKET_CLI");
  const std::string command = "exec " + std::string(cli != nullptr ? cli : "pocket") + " " + args;
  return RunLimitedChild(limits, [&](int out_fd) {
    ::dup2(out_fd, 1);
    ::dup2(out_fd, 2);
    ::execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    return 127;
  });
}

}  // namespace pocket::testing
