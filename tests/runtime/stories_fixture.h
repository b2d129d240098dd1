// Shared by the runtime tests: the stories260K llama2.c checkpoint converted
// at f32 (once per test process, into a temp file), its golden greedy runs,
// and a loaded Model.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "convert/converter.h"
#include "format/pocket_test_util.h"
#include "runtime/generate.h"
#include "runtime/model.h"
#include "util/json_util.h"

namespace pocket::testing_stories {

struct GoldenRun {
  std::string prompt;
  int steps = 0;
  std::vector<int32_t> prompt_ids;
  std::vector<int32_t> ids;  // BOS + every token run.c printed
  bool stopped_on_bos = false;
  std::string stdout_text;
};

inline std::string DataPath(const std::string& rel) {
  return std::string(POCKET_TEST_DATA) + "/" + rel;
}

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline std::vector<int32_t> Ints(const Json& j, const char* key) {
  std::vector<int64_t> v;
  EXPECT_TRUE(GetIntArray(j, key, &v, "golden row").ok()) << key;
  return std::vector<int32_t>(v.begin(), v.end());
}

inline std::vector<GoldenRun> LoadGolden() {
  std::vector<GoldenRun> runs;
  std::ifstream in(DataPath("stories260K/golden-greedy.jsonl"));
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    auto j = ParseJson(line, "golden-greedy.jsonl");
    EXPECT_TRUE(j.ok());
    if (!j.ok()) continue;
    GoldenRun r;
    int64_t steps = 0;
    EXPECT_TRUE(GetString(*j, "prompt", &r.prompt, "golden").ok());
    EXPECT_TRUE(GetInt(*j, "steps", &steps, "golden").ok());
    EXPECT_TRUE(GetBool(*j, "stopped_on_bos", &r.stopped_on_bos, "golden").ok());
    EXPECT_TRUE(GetString(*j, "stdout", &r.stdout_text, "golden").ok());
    r.steps = static_cast<int>(steps);
    r.prompt_ids = Ints(*j, "prompt_ids");
    r.ids = Ints(*j, "ids");
    runs.push_back(r);
  }
  EXPECT_EQ(runs.size(), 3u);
  return runs;
}

// Greedy generation as run.c's: its steps count forward passes including
// the prompt's, and it prints one token per pass, so it generates
// steps - (prompt length - 1) tokens.
inline GenerateOptions GreedyFor(const GoldenRun& run) {
  GenerateOptions options;
  options.sampling.temperature = 0.0f;
  options.max_new_tokens = run.steps - static_cast<int>(run.prompt_ids.size()) + 1;
  return options;
}

// The converted model file; converted on first use, removed at exit.
inline const std::string& StoriesPath() {
  static const std::string path = [] {
    const std::string p = std::string(POCKET_BINARY_DIR) + "/runtime_test_stories260K_" +
                          std::to_string(getpid()) + ".pocket";
    ConvertOptions options;
    options.quant.weights = DType::kF32;
    options.quant.embeddings = DType::kF32;
    options.tokenizer_path = DataPath("stories260K/tok512.model");
    auto stats = ConvertModel(DataPath("stories260K/stories260K.bin"), p, options);
    EXPECT_TRUE(stats.ok()) << stats.status().ToString();
    static std::string to_remove = p;
    std::atexit([] { std::remove(to_remove.c_str()); });
    return p;
  }();
  return path;
}

// Null when conversion or loading failed (the failure is reported).
inline const Model* StoriesModel() {
  static std::unique_ptr<Model> model = [] {
    auto m = Model::Load(StoriesPath(), ModelOptions());
    EXPECT_TRUE(m.ok()) << m.status().ToString();
    return m.ok() ? std::move(m).value() : nullptr;
  }();
  return model.get();
}

// The converted file with one weight, the first of blk.0.attn_q.weight, set
// to NaN and the checksums recomputed: it loads, and every logit it
// computes is NaN. Written on first use, removed at exit.
inline const std::string& NanWeightStoriesPath() {
  static const std::string path = [] {
    const std::string p = std::string(POCKET_BINARY_DIR) + "/runtime_test_nan_weight_" +
                          std::to_string(getpid()) + ".pocket";
    const Model* model = StoriesModel();
    const TensorInfo* q =
        model == nullptr ? nullptr : model->file().FindTensor("blk.0.attn_q.weight");
    EXPECT_NE(q, nullptr);
    if (q == nullptr) return p;
    testing::Bytes bytes = testing::ReadFileBytes(StoriesPath());
    const float nan = std::numeric_limits<float>::quiet_NaN();
    std::memcpy(bytes.data() + model->file().data_offset() + q->offset, &nan, sizeof(nan));
    testing::FixAllCrcs(&bytes);
    testing::WriteFileBytes(p, bytes);
    static std::string to_remove = p;
    std::atexit([] { std::remove(to_remove.c_str()); });
    return p;
  }();
  return path;
}

}  // namespace pocket::testing_stories
