// The backend registry and the reference backend (the scalar reference ops
// run as a whole backend): it reproduces llama2.c run.c's greedy goldens on
// stories260K, matches the CPU backend's greedy ids with f32 maths on q4
// weights, slides its KV window like the CPU, and its session states load on
// the CPU backend (and back), since both write the same serialized rows.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "backends/registry.h"
#include "runtime/generate.h"
#include "testing/run_cli.h"
#include "tests/runtime/qwen3_fixture.h"
#include "tests/runtime/stories_fixture.h"

namespace pocket {
namespace {

using testing_stories::GoldenRun;
using testing_stories::GreedyFor;

std::unique_ptr<Model> Load(const std::string& path, const std::string& backend,
                            QuantMath math = QuantMath::kInt8) {
  ModelOptions options;
  options.backend = backend;
  options.quant_math = math;
  auto model = Model::Load(path, options);
  EXPECT_TRUE(model.ok()) << model.status().ToString();
  return model.ok() ? std::move(model).value() : nullptr;
}

const Model* ReferenceStories() {
  static std::unique_ptr<Model> model = Load(testing_stories::StoriesPath(), "reference");
  return model.get();
}

GenerateOptions Greedy(int n) {
  GenerateOptions options;
  options.sampling.temperature = 0.0f;
  options.max_new_tokens = n;
  return options;
}

TEST(BackendRegistryTest, ListsCpuAndReferenceAndRefusesUnknownNames) {
  const std::string names = RegisteredBackendNames();
  EXPECT_EQ(names.rfind("cpu, ", 0), 0u) << names;
  EXPECT_NE(names.find("reference"), std::string::npos) << names;
  const std::string devices = DescribeBackendDevices();
  EXPECT_EQ(devices.rfind("cpu ", 0), 0u) << devices;
  EXPECT_NE(devices.find("\nreference "), std::string::npos) << devices;
  ModelOptions options;
  options.backend = "metal2";
  auto model = Model::Load(testing_stories::StoriesPath(), options);
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(model.status().message().find("backend 'metal2' is not built into this library; "
                                          "available: " +
                                          names),
            std::string::npos)
      << model.status().message();
}

TEST(ReferenceBackendTest, ReproducesRunCGoldens) {
  const Model* model = ReferenceStories();
  ASSERT_NE(model, nullptr);
  EXPECT_EQ(model->default_kv_type(), KvType::kF32);
  for (KvType type : {KvType::kF32, KvType::kF16}) {
    SessionOptions options;
    options.kv_type = type;
    for (const GoldenRun& run : testing_stories::LoadGolden()) {
      SCOPED_TRACE("prompt '" + run.prompt + "', KV " + KvTypeName(type));
      Session session(model, options);
      GenerateResult result;
      ASSERT_TRUE(Generate(&session, run.prompt, GreedyFor(run), nullptr, &result).ok());
      std::vector<int32_t> all = result.prompt_ids;
      all.insert(all.end(), result.ids.begin(), result.ids.end());
      EXPECT_EQ(all, run.ids);
    }
  }
}

// q4 weights: the reference dequantizes each row and multiplies in f32, as
// the CPU does with --quant-math f32.
TEST(ReferenceBackendTest, MatchesCpuF32MathsOnQ4Weights) {
  const std::string path = std::string(POCKET_BINARY_DIR) + "/runtime_test_reference_q4_" +
                           std::to_string(getpid()) + ".pocket";
  ConvertOptions convert;
  convert.quant.weights = DType::kQ4;
  convert.tokenizer_path = testing_stories::DataPath("stories260K/tok512.model");
  ASSERT_TRUE(
      ConvertModel(testing_stories::DataPath("stories260K/stories260K.bin"), path, convert).ok());
  std::vector<int32_t> ids[2];
  const char* backends[2] = {"cpu", "reference"};
  for (int b = 0; b < 2; ++b) {
    std::unique_ptr<Model> model = Load(path, backends[b], QuantMath::kF32);
    ASSERT_NE(model, nullptr);
    SessionOptions options;
    options.kv_type = KvType::kF32;
    Session session(model.get(), options);
    GenerateResult result;
    ASSERT_TRUE(Generate(&session, "Once upon a time", Greedy(80), nullptr, &result).ok());
    ids[b] = result.ids;
  }
  std::remove(path.c_str());
  EXPECT_EQ(ids[1], ids[0]);
  EXPECT_EQ(ids[0].size(), 80u);
}

// Qwen3's ops beyond stories260K's (per-head RMSNorm of q and k, NeoX
// RoPE, grouped-query attention) on q8 weights: the reference's logits for
// every row of a prompt are the CPU's with f32 maths, to f32 rounding.
TEST(ReferenceBackendTest, Qwen3LogitsMatchCpuF32Maths) {
  const std::string path = testing_qwen3::Write("reference_q8", 256, DType::kQ8);
  ASSERT_FALSE(path.empty());
  std::vector<float> logits[2];
  const char* backends[2] = {"cpu", "reference"};
  for (int b = 0; b < 2; ++b) {
    std::unique_ptr<Model> model = Load(path, backends[b], QuantMath::kF32);
    ASSERT_NE(model, nullptr);
    auto ids = model->tokenizer().Encode("Once upon a time, a little dog found a ball.");
    ASSERT_TRUE(ids.ok());
    ASSERT_GT(ids->size(), 8u);
    SessionOptions options;
    options.kv_type = KvType::kF32;
    Session session(model.get(), options);
    ASSERT_TRUE(session.Eval(*ids, LogitsMode::kAll, &logits[b]).ok());
  }
  ASSERT_EQ(logits[1].size(), logits[0].size());
  float scale = 0.0f, worst = 0.0f;
  for (size_t i = 0; i < logits[0].size(); ++i) {
    scale = std::max(scale, std::fabs(logits[0][i]));
    worst = std::max(worst, std::fabs(logits[1][i] - logits[0][i]));
  }
  EXPECT_GT(scale, 0.0f);
  EXPECT_LE(worst, 1e-4f * scale) << "largest |logit| " << scale;
}

// A window that slides under a budget: the reference and the CPU keep the
// same tokens and generate the same ids.
TEST(ReferenceBackendTest, SlidesLikeTheCpu) {
  std::unique_ptr<Model> cpu = Load(testing_stories::StoriesPath(), "cpu");
  ASSERT_NE(cpu, nullptr);
  const Model* models[2] = {cpu.get(), ReferenceStories()};
  ASSERT_NE(models[1], nullptr);
  std::vector<int32_t> ids[2], kept[2];
  for (int b = 0; b < 2; ++b) {
    SessionOptions options;
    options.kv_type = KvType::kF32;
    options.kv_policy = KvPolicy::kSlide;
    options.kv_page_tokens = 16;
    options.prefill_chunk = 16;
    Session probe(models[b], options);
    // Room for 64 positions beside what the session holds anyway.
    options.budget_bytes = probe.memory().total() + 4 * probe.backend_session().kv_page_bytes() +
                           probe.backend_session().ScratchBytesFor(16, BackendOutput::kLastRow) +
                           probe.backend_session().kv_commit_slack();
    auto session = Session::Create(models[b], options);
    ASSERT_TRUE(session.ok()) << session.status().ToString();
    GenerateResult result;
    ASSERT_TRUE(Generate(session->get(), "Once upon a time", Greedy(150), nullptr, &result).ok());
    ids[b] = result.ids;
    kept[b] = (*session)->tokens();
    EXPECT_LT(kept[b].size(), 150u);  // it did slide
  }
  EXPECT_EQ(kept[1], kept[0]);
  EXPECT_EQ(ids[1], ids[0]);
}

std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Session states hold rows in one serialized layout, so a state saved on
// one backend loads on the other and saves again byte for byte, and (f32)
// continues there as it would have where it was made.
TEST(ReferenceBackendTest, StatesMoveBetweenCpuAndReference) {
  std::unique_ptr<Model> cpu = Load(testing_stories::StoriesPath(), "cpu");
  const Model* reference = ReferenceStories();
  ASSERT_NE(cpu, nullptr);
  ASSERT_NE(reference, nullptr);
  const std::string path =
      std::string(POCKET_BINARY_DIR) + "/runtime_test_reference_state_" + std::to_string(getpid());
  for (KvType type : {KvType::kF32, KvType::kF16, KvType::kBf16, KvType::kQ8}) {
    SessionOptions options;
    options.kv_type = type;
    for (const Model* from : {static_cast<const Model*>(cpu.get()), reference}) {
      const Model* to = from == reference ? cpu.get() : reference;
      SCOPED_TRACE(std::string(KvTypeName(type)) + " from " + from->backend().name());
      Session a(from, options);
      GenerateResult r;
      ASSERT_TRUE(Generate(&a, "Once upon a time", Greedy(40), nullptr, &r).ok());
      ASSERT_TRUE(a.Save(path).ok());
      const std::string saved = ReadBytes(path);
      Session b(to, options);
      const Status loaded = b.Load(path);
      ASSERT_TRUE(loaded.ok()) << loaded.ToString();
      EXPECT_EQ(b.tokens(), a.tokens());
      ASSERT_TRUE(b.Save(path).ok());
      EXPECT_TRUE(ReadBytes(path) == saved);
      if (type != KvType::kF32) continue;
      GenerateResult ra, rb;
      ASSERT_TRUE(Generate(&a, " The end", Greedy(20), nullptr, &ra).ok());
      ASSERT_TRUE(Generate(&b, " The end", Greedy(20), nullptr, &rb).ok());
      EXPECT_EQ(rb.ids, ra.ids);
    }
  }
  std::remove(path.c_str());
}

// The command line picks the backend by name and lists every registered
// one.
TEST(ReferenceBackendTest, CliRunReproducesGoldenAndInspectListsIt) {
  const std::string model = testing_stories::StoriesPath();
  for (const GoldenRun& g : testing_stories::LoadGolden()) {
    if (g.prompt != "Once upon a time") continue;
    const int n = g.steps - static_cast<int>(g.prompt_ids.size()) + 1;
    const testing::CliOutput o = testing::RunCli(
        "run -m '" + model + "' --backend reference -p 'Once upon a time' --temp 0 --json -n " +
        std::to_string(n));
    ASSERT_EQ(o.exit_code, 0) << o.out;
    auto j = ParseJson(o.out, "pocket run --json");
    ASSERT_TRUE(j.ok()) << o.out;
    EXPECT_EQ(testing_stories::Ints(*j, "ids"),
              std::vector<int32_t>(g.ids.begin() + g.prompt_ids.size(), g.ids.end()));
  }
  const testing::CliOutput devices = testing::RunCli("inspect --devices");
  ASSERT_EQ(devices.exit_code, 0) << devices.out;
  // Each backend's first line starts with its name, then a space or (for
  // a device index, "opencl:0.0") a colon.
  for (const BackendEntry& e : RegisteredBackends()) {
    bool listed = false;
    for (size_t at = 0; at != std::string::npos && !listed;
         at = devices.out.find('\n' + e.name, at + 1)) {
      const size_t start = devices.out[at] == '\n' ? at + 1 : at;
      const size_t end = start + e.name.size();
      listed = devices.out.compare(start, e.name.size(), e.name) == 0 && end < devices.out.size() &&
               (devices.out[end] == ' ' || devices.out[end] == ':');
    }
    EXPECT_TRUE(listed) << e.name << " missing from:\n" << devices.out;
  }
}

}  // namespace
}  // namespace pocket
