// `pocket inspect`, `verify` and `run` on good, truncated and byte-flipped
// files: the acceptance rules. A truncated file is exit 1 with a
// clear message for all three; a flip in tensor data fails only `verify`
// (loading does not read tensor bytes), a flip in a metadata section fails
// loading too; no case ever ends on a signal.
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "backends/cpu/kernel_target.h"
#include "backends/registry.h"
#include "testing/run_cli.h"

namespace pocket {
namespace {

using testing::CliOutput;
using testing::RunCli;

const std::string kModel = std::string(POCKET_TEST_MODELS) + "/stories260K-f32.pocket";

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// A damaged copy of the model, unique to this process.
std::string WriteCopy(const std::string& tag, std::string bytes) {
  const std::string path = std::string(POCKET_BINARY_DIR) + "/inspect_verify_" +
                           std::to_string(::getpid()) + "_" + tag + ".pocket";
  std::ofstream(path, std::ios::binary).write(bytes.data(), bytes.size());
  return path;
}

// Byte offset of a section, read from `pocket inspect --json` of the good file.
uint64_t SectionOffset(const std::string& kind) {
  const CliOutput o = RunCli("inspect --json '" + kModel + "'");
  const nlohmann::json j = nlohmann::json::parse(o.out, nullptr, false);
  if (!j.is_object() || !j["sections"].is_array()) {
    ADD_FAILURE() << "inspect --json gave: " << o.out;
    return 0;
  }
  for (const auto& s : j["sections"]) {
    if (s["kind"] == kind) return s["offset"].get<uint64_t>();
  }
  ADD_FAILURE() << "no section " << kind;
  return 0;
}

TEST(InspectVerify, InspectShowsTheStoriesShape) {
  const CliOutput o = RunCli("inspect --json '" + kModel + "'");
  ASSERT_EQ(o.exit_code, 0);
  const nlohmann::json j = nlohmann::json::parse(o.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << o.out;
  EXPECT_EQ(j["config"]["n_layers"], 5);
  EXPECT_EQ(j["config"]["n_heads"], 8);
  EXPECT_EQ(j["config"]["n_kv_heads"], 4);
  EXPECT_EQ(j["config"]["vocab"], 512);
  EXPECT_EQ(j["config"]["stop_token_ids"], nlohmann::json::array({1}));
  // llama2.c's stories260K: 260,032 weights counting the shared classifier once.
  EXPECT_EQ(j["parameters"], 260032);
  const CliOutput text = RunCli("inspect '" + kModel + "'");
  EXPECT_EQ(text.exit_code, 0);
  EXPECT_NE(text.out.find("layers           5"), std::string::npos) << text.out;
  // The converter's summary of the types (test-models: --quant f32).
  EXPECT_NE(text.out.find("quantization     f32, embeddings f32, norms f32\n"), std::string::npos)
      << text.out;
}

TEST(InspectVerify, VerifyAcceptsTheGoodFile) {
  const CliOutput o = RunCli("verify '" + kModel + "'", "", true);
  EXPECT_EQ(o.exit_code, 0) << o.out;
  EXPECT_NE(o.out.find("OK"), std::string::npos) << o.out;
}

TEST(InspectVerify, TruncatedFileFailsEveryCommandWithExit1) {
  const std::string bytes = ReadAll(kModel);
  ASSERT_GT(bytes.size(), 4096u);
  for (size_t cut : {size_t{10}, size_t{100}, bytes.size() / 2, bytes.size() - 1}) {
    const std::string path = WriteCopy("cut" + std::to_string(cut), bytes.substr(0, cut));
    for (const std::string cmd : {"inspect", "verify"}) {
      const CliOutput o = RunCli(cmd + " '" + path + "'", "", true);
      EXPECT_EQ(o.exit_code, 1) << cmd << " cut " << cut << ": " << o.out;
      EXPECT_NE(o.out.find("truncated"), std::string::npos)
          << cmd << " cut " << cut << ": " << o.out;
    }
    const CliOutput run = RunCli("run -m '" + path + "' -p hi -n 2", "", true);
    EXPECT_EQ(run.exit_code, 1) << run.out;
    EXPECT_NE(run.out.find(path), std::string::npos) << run.out;
    ::unlink(path.c_str());
  }
}

TEST(InspectVerify, FlipInTensorDataFailsOnlyVerify) {
  std::string bytes = ReadAll(kModel);
  const uint64_t data = SectionOffset("data");
  ASSERT_GT(data, 0u);
  bytes[data + 1000] ^= 0x5A;
  const std::string path = WriteCopy("flipdata", bytes);
  const CliOutput v = RunCli("verify '" + path + "'", "", true);
  EXPECT_EQ(v.exit_code, 1) << v.out;
  EXPECT_NE(v.out.find("data"), std::string::npos) << v.out;
  EXPECT_EQ(RunCli("inspect '" + path + "'").exit_code, 0);
  ::unlink(path.c_str());
}

TEST(InspectVerify, FlipInMetadataFailsLoading) {
  for (const std::string kind : {"config", "tokenizer", "graph", "tensors"}) {
    std::string bytes = ReadAll(kModel);
    bytes[SectionOffset(kind) + 3] ^= 0x01;
    const std::string path = WriteCopy("flip" + kind, bytes);
    for (const std::string cmd : {"inspect", "verify"}) {
      const CliOutput o = RunCli(cmd + " '" + path + "'", "", true);
      EXPECT_EQ(o.exit_code, 1) << kind << " " << cmd << ": " << o.out;
      EXPECT_NE(o.out.find(kind), std::string::npos) << kind << " " << cmd << ": " << o.out;
    }
    const CliOutput run = RunCli("run -m '" + path + "' -p hi -n 2", "", true);
    EXPECT_EQ(run.exit_code, 1) << kind << ": " << run.out;
    ::unlink(path.c_str());
  }
}

TEST(InspectVerify, DevicesListsTheCpuAndEveryBackend) {
  const CliOutput o = RunCli("inspect --devices");
  EXPECT_EQ(o.exit_code, 0);
  EXPECT_EQ(o.out.rfind("cpu ", 0), 0u) << o.out;
  // Each backend this build registered has its lines (a build without
  // OpenCL has none for it).
  for (const BackendEntry& e : RegisteredBackends()) {
    EXPECT_TRUE(o.out.rfind(e.name, 0) == 0 || o.out.find("\n" + e.name) != std::string::npos)
        << e.name << " missing from:\n" << o.out;
  }
  // The kernel targets --cpu-target accepts, the one in use first.
  std::string targets;
  for (const std::string& name : cpu::KernelTargets()) targets += " " + name;
  EXPECT_NE(o.out.find(std::string(cpu::KernelTargetName()) + " kernels"), std::string::npos)
      << o.out;
  EXPECT_NE(o.out.find("(targets here:" + targets + ")"), std::string::npos) << o.out;
  // And the matrix unit prompts use, where there is one.
  const bool matrix = o.out.find(", prompts by ") != std::string::npos;
  EXPECT_EQ(matrix, cpu::MatrixExtensionChosen()) << o.out;
  if (matrix) {
    EXPECT_NE(o.out.find(std::string(", prompts by ") + cpu::MatrixExtensionName() + ","),
              std::string::npos)
        << o.out;
  }
  // And bf16 attention, where the unit multiplies bf16 (x86's AMX-BF16).
  const bool bf16 = o.out.find(", bf16 attention by ") != std::string::npos;
  EXPECT_EQ(bf16, cpu::MatrixExtensionMultipliesBf16()) << o.out;
}

}  // namespace
}  // namespace pocket
