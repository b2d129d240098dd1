// Pocket under a phone's or a container's resource limits, in an
// unprivileged child process (testing/limited_child.h): a thread limit
// (RLIMIT_NPROC, `ulimit -u`) below the threads asked for, and an address
// space limit (RLIMIT_AS, `ulimit -v`) too small for the model or the
// session. Every case ends in a clean error (a non-zero status and a
// message) or in a fallback that works and says so, never in SIGABRT or
// SIGSEGV: `-t 200` under `ulimit -u 64` and threads = 100000 in
// pocket_model_options used to abort inside pocket_model_load.
#include <sys/resource.h>
#include <sys/stat.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "pocket/pocket.h"
#include "testing/limited_child.h"
#include "testing/run_cli.h"
#include "testing/temp_dir.h"

namespace pocket {
namespace {

using testing::ChildLimits;
using testing::ChildResult;

const std::string kModel = std::string(POCKET_TEST_MODELS) + "/stories260K-f32.pocket";

bool Sanitized() {
#if defined(__SANITIZE_ADDRESS__)
  return true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  return true;
#endif
#endif
  return false;
}

// An address space limit cannot be tested where the process reserves far
// more than it uses: AddressSanitizer's shadow memory, qemu-user's
// translation buffer.
bool AddressSpaceLimitTestable(std::string* why) {
  if (Sanitized()) {
    *why = "AddressSanitizer reserves terabytes of address space";
  } else if (std::getenv("QEMU_CPU") != nullptr || std::getenv("QEMU_LD_PREFIX") != nullptr) {
    *why = "qemu-user reserves its own address space for translated code";
  }
  return why->empty();
}

// This process's address space in bytes (VmSize), 0 where unknown.
size_t AddressSpaceInUse() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmSize:", 0) == 0) return std::strtoull(line.c_str() + 7, nullptr, 10) * 1024;
  }
  return 0;
}

void ExpectCleanExit(const ChildResult& r, const std::string& what) {
  ASSERT_TRUE(r.exited) << what << ": killed by signal " << r.signal << " (" << strsignal(r.signal)
                        << "): " << r.output;
}

TEST(ResourceLimits, CliRunOnMoreThreadsThanTheLimitFallsBack) {
  ChildLimits limits;
  limits.nproc = 64;
  const ChildResult r = testing::RunCliLimited(
      limits, "run -m '" + kModel + "' -p 'Once upon a time' -n 12 --temp 0 -t 200");
  if (r.exit_code == testing::kChildSetupFailed) {
    GTEST_SKIP() << "cannot lower RLIMIT_NPROC or drop to an unprivileged user here";
  }
  ExpectCleanExit(r, "run -t 200 under ulimit -u 64");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("pocket: warning: computing on "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(" threads instead of 200: the system refused thread "), std::string::npos)
      << r.output;
  // The same greedy story as on any thread count.
  const testing::CliOutput ref =
      testing::RunCli("run -m '" + kModel + "' -p 'Once upon a time' -n 12 --temp 0 -t 1");
  ASSERT_EQ(ref.exit_code, 0);
  EXPECT_NE(r.output.find(ref.out), std::string::npos) << r.output << "\nvs\n" << ref.out;
}

void CollectLog(pocket_log_level, const char* message, void* user_data) {
  static_cast<std::string*>(user_data)->append(message).append("\n");
}

TEST(ResourceLimits, ApiModelLoadOnMoreThreadsThanTheLimitFallsBack) {
  ChildLimits limits;
  limits.nproc = 64;
  const ChildResult r = testing::RunLimitedChild(limits, [](int out_fd) {
    std::string log;
    pocket_set_log_callback(CollectLog, &log);
    pocket_model_options options;
    pocket_model_options_init(&options);
    options.threads = 200;
    pocket_model* model = nullptr;
    const pocket_status s = pocket_model_load(kModel.c_str(), &options, &model);
    const std::string report = std::string(pocket_status_name(s)) + ": " + log;
    (void)!::write(out_fd, report.data(), report.size());
    pocket_model_free(model);
    return s == POCKET_OK ? 0 : 1;
  });
  if (r.exit_code == testing::kChildSetupFailed) {
    GTEST_SKIP() << "cannot lower RLIMIT_NPROC or drop to an unprivileged user here";
  }
  ExpectCleanExit(r, "pocket_model_load with threads = 200 under ulimit -u 64");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find(" threads instead of 200: the system refused thread "), std::string::npos)
      << r.output;
}

TEST(ResourceLimits, ThreadsOptionIsCapped) {
  pocket_model_options options;
  pocket_model_options_init(&options);
  options.threads = 100000;
  pocket_model* model = nullptr;
  EXPECT_EQ(pocket_model_load(kModel.c_str(), &options, &model), POCKET_INVALID_ARGUMENT);
  EXPECT_EQ(model, nullptr);
  EXPECT_EQ(
      std::string(pocket_last_error()),
      "pocket_model_options.threads must be in [0, 1024] (0 = one per fast core), got 100000");
  const testing::CliOutput o =
      testing::RunCli("run -m '" + kModel + "' -p hi -n 1 -t 100000", "", true);
  EXPECT_EQ(o.exit_code, 2) << o.out;
  EXPECT_NE(o.out.find("option '-t' needs an integer in [0, 1024], got '100000'"),
            std::string::npos)
      << o.out;
}

// The CLI from an address space just large enough to start the process up
// to one where the story is generated, in 256 KiB steps: every step runs
// the story or ends in an error message; none aborts. Below that, the
// dynamic loader or a shared library's static initializer fails before
// main() (a library that aborts there is beyond Pocket's reach), so the
// sweep starts 256 KiB above the smallest limit `pocket --help` runs in.
TEST(ResourceLimits, CliUnderAnyAddressSpaceLimitEndsCleanly) {
  std::string why;
  if (!AddressSpaceLimitTestable(&why)) GTEST_SKIP() << why;
  constexpr rlim_t kStepKib = 256, kMaxKib = 64 << 10;
  rlim_t start_kib = 0;
  for (rlim_t kib = 4 << 10; kib <= kMaxKib && start_kib == 0; kib += kStepKib) {
    ChildLimits limits;
    limits.address_space = kib << 10;
    const ChildResult r = testing::RunCliLimited(limits, "--help");
    if (r.exit_code == testing::kChildSetupFailed) {
      GTEST_SKIP() << "cannot lower RLIMIT_AS or drop to an unprivileged user here";
    }
    if (r.exited && r.exit_code == 0) start_kib = kib + kStepKib;
  }
  ASSERT_NE(start_kib, 0u) << "pocket --help did not start under any limit up to 64 MiB";
  int ran = 0, refused = 0;
  for (rlim_t kib = start_kib; kib <= kMaxKib && ran < 4; kib += kStepKib) {
    ChildLimits limits;
    limits.address_space = kib << 10;
    const ChildResult r = testing::RunCliLimited(
        limits, "run -m '" + kModel + "' -p 'Once upon a time' -n 12 --temp 0 -t 2");
    const std::string at = "ulimit -v " + std::to_string(kib);
    ExpectCleanExit(r, at);
    if (r.exit_code == 0) {
      EXPECT_NE(r.output.find("Once upon a time"), std::string::npos) << at << ": " << r.output;
      ++ran;
    } else {
      EXPECT_EQ(r.exit_code, 1) << at << ": " << r.output;
      EXPECT_TRUE(r.output.find("error: ") != std::string::npos ||
                  r.output.find("pocket: out of memory: ") != std::string::npos)
          << at << ": " << r.output;
      ++refused;
    }
  }
  EXPECT_GT(ran, 0) << "no limit up to 64 MiB was enough to run the story";
  EXPECT_GT(refused, 0) << "every limit from " << start_kib << " KiB ran the story";
}

// pocket_model_load when the address space left cannot map the model: a
// status and a message naming the file.
TEST(ResourceLimits, ApiModelLoadWithoutAddressSpaceFailsCleanly) {
  std::string why;
  if (!AddressSpaceLimitTestable(&why)) GTEST_SKIP() << why;
  const ChildResult r = testing::RunLimitedChild(ChildLimits(), [](int out_fd) {
    // Room for small allocations from the heap's free space, none for the
    // model's mapping (1 MiB).
    const rlim_t limit = AddressSpaceInUse() + (64 << 10);
    const rlimit as{limit, limit};
    if (::setrlimit(RLIMIT_AS, &as) != 0) return testing::kChildSetupFailed;
    pocket_model* model = nullptr;
    const pocket_status s = pocket_model_load(kModel.c_str(), nullptr, &model);
    const std::string report = std::string(pocket_status_name(s)) + ": " + pocket_last_error();
    (void)!::write(out_fd, report.data(), report.size());
    pocket_model_free(model);
    return s == POCKET_IO_ERROR ? 0 : 1;
  });
  if (r.exit_code == testing::kChildSetupFailed) {
    GTEST_SKIP() << "cannot lower RLIMIT_AS or drop to an unprivileged user here";
  }
  ExpectCleanExit(r, "pocket_model_load under RLIMIT_AS");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("cannot mmap '" + kModel + "': Cannot allocate memory"),
            std::string::npos)
      << r.output;
}

// pocket_session_load of a state larger than the address space left: the
// state is mapped, not copied to the heap, so the limit gives a status and
// a message naming the file, and the session is unchanged.
TEST(ResourceLimits, ApiSessionLoadWithoutAddressSpaceFailsCleanly) {
  std::string why;
  if (!AddressSpaceLimitTestable(&why)) GTEST_SKIP() << why;
  const std::string state = testing::MakeTempDir("resource_limits") + "/long.state";
  {
    pocket_model* model = nullptr;
    pocket_session* session = nullptr;
    ASSERT_EQ(pocket_model_load(kModel.c_str(), nullptr, &model), POCKET_OK);
    ASSERT_EQ(pocket_session_new(model, nullptr, &session), POCKET_OK);
    pocket_sampling sampling;
    pocket_sampling_init(&sampling);
    sampling.max_new_tokens = 400;
    sampling.ignore_eos = 1;
    ASSERT_EQ(pocket_generate(session, "Once upon a time", &sampling, nullptr, nullptr, nullptr),
              POCKET_OK)
        << pocket_last_error();
    ASSERT_EQ(pocket_session_save(session, state.c_str()), POCKET_OK) << pocket_last_error();
    pocket_session_free(session);
    pocket_model_free(model);
  }
  // Readable by the unprivileged child.
  ASSERT_EQ(::chmod(state.c_str(), 0644), 0);
  ASSERT_EQ(::chmod(state.substr(0, state.rfind('/')).c_str(), 0755), 0);
  const ChildResult r = testing::RunLimitedChild(ChildLimits(), [&state](int out_fd) {
    pocket_model* model = nullptr;
    pocket_session* session = nullptr;
    if (pocket_model_load(kModel.c_str(), nullptr, &model) != POCKET_OK ||
        pocket_session_new(model, nullptr, &session) != POCKET_OK) {
      return 2;
    }
    // Room for small allocations from the heap's free space, none for the
    // state's mapping (over 600 KiB).
    const rlim_t limit = AddressSpaceInUse() + (64 << 10);
    const rlimit as{limit, limit};
    if (::setrlimit(RLIMIT_AS, &as) != 0) return testing::kChildSetupFailed;
    const pocket_status s = pocket_session_load(session, state.c_str());
    const std::string report = std::string(pocket_status_name(s)) + ": " + pocket_last_error() +
                               "; position " + std::to_string(pocket_session_position(session));
    (void)!::write(out_fd, report.data(), report.size());
    return s == POCKET_IO_ERROR && pocket_session_position(session) == 0 ? 0 : 1;
  });
  if (r.exit_code == testing::kChildSetupFailed) {
    GTEST_SKIP() << "cannot lower RLIMIT_AS or drop to an unprivileged user here";
  }
  ExpectCleanExit(r, "pocket_session_load under RLIMIT_AS");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("cannot mmap '" + state + "': Cannot allocate memory"), std::string::npos)
      << r.output;
}

}  // namespace
}  // namespace pocket
