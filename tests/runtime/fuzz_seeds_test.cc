// Seeds for the model-level fuzzers (docs/testing.md): the stories260K
// config and graph in reader_fuzz's section-replacing form, and a saved
// session for session_state_fuzz, written to <build>/fuzz_corpus. Both
// fuzzers run against the same stories260K conversion, an f16 KV cache.
#include <sys/stat.h>

#include <string>

#include <gtest/gtest.h>

#include "runtime/session.h"
#include "tests/runtime/stories_fixture.h"

namespace pocket {
namespace {

void WriteSeed(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << path;
}

std::string SeedDir(const std::string& name) {
  const std::string corpus = std::string(POCKET_BINARY_DIR) + "/fuzz_corpus";
  ::mkdir(corpus.c_str(), 0755);
  const std::string dir = corpus + "/" + name;
  ::mkdir(dir.c_str(), 0755);
  return dir;
}

TEST(FuzzSeeds, WritesReaderModelSeeds) {
  const Model* model = testing_stories::StoriesModel();
  ASSERT_NE(model, nullptr);
  const std::string config(model->file().config_json());
  const std::string graph(model->file().graph_json());
  // reader_fuzz: byte 0 replaces the config, 1 the graph, 2 both (split at
  // the first NUL).
  const std::string dir = SeedDir("reader");
  WriteSeed(dir + "/stories-config", std::string(1, '\0') + config);
  WriteSeed(dir + "/stories-graph", std::string(1, '\1') + graph);
  WriteSeed(dir + "/stories-both", std::string(1, '\2') + config + std::string(1, '\0') + graph);
}

TEST(FuzzSeeds, WritesSessionStateSeeds) {
  const Model* model = testing_stories::StoriesModel();
  ASSERT_NE(model, nullptr);
  SessionOptions options;
  options.kv_type = KvType::kF16;
  const std::string dir = SeedDir("session_state");
  for (const std::vector<int32_t>& tokens :
       {std::vector<int32_t>{1}, std::vector<int32_t>{1, 403, 407, 261, 378, 300, 290, 72}}) {
    Session session(model, options);
    std::vector<float> logits;
    ASSERT_TRUE(session.Eval(tokens, LogitsMode::kLast, &logits).ok());
    const std::string path = dir + "/stories-" + std::to_string(tokens.size()) + "-tokens";
    const Status s = session.Save(path);
    ASSERT_TRUE(s.ok()) << s.ToString();
    EXPECT_TRUE(session.Load(path).ok());
  }
}

}  // namespace
}  // namespace pocket
