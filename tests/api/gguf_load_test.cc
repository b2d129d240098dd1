// pocket_model_load on a GGUF file: stories260K written as a llama GGUF
// loads through the C API (converted into a temporary file that is gone
// afterwards) and generates the same ids as the .pocket conversion of the
// llama2.c checkpoint; a malformed GGUF is POCKET_CORRUPT_FILE naming it.
#include <dirent.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "convert/gguf_stories.h"
#include "pocket/pocket.h"

namespace {

using pocket::testing_gguf::StoriesArch;
using pocket::testing_gguf::StoriesGguf;

const char kModel[] = POCKET_TEST_MODELS "/stories260K-f32.pocket";

size_t Entries(const std::string& dir) {
  size_t n = 0;
  DIR* d = ::opendir(dir.c_str());
  while (d != nullptr && ::readdir(d) != nullptr) ++n;
  if (d != nullptr) ::closedir(d);
  return n;
}

std::vector<int32_t> Greedy(pocket_model* model) {
  pocket_session* session = nullptr;
  EXPECT_EQ(pocket_session_new(model, nullptr, &session), POCKET_OK) << pocket_last_error();
  std::vector<int32_t> ids;
  if (session == nullptr) return ids;
  pocket_sampling sampling;
  pocket_sampling_init(&sampling);
  sampling.max_new_tokens = 32;
  pocket_generation result;
  pocket_generation_init(&result);
  EXPECT_EQ(pocket_generate(
                session, "Once upon a time", &sampling,
                [](const char*, size_t, int32_t id, void* user) {
                  static_cast<std::vector<int32_t>*>(user)->push_back(id);
                  return 0;
                },
                &ids, &result),
            POCKET_OK)
      << pocket_last_error();
  pocket_session_free(session);
  return ids;
}

TEST(GgufLoad, CApiLoadsAGgufLikeItsConversion) {
  const std::string dir = pocket::testing_util::MakeTempDir("gguf_load");
  pocket::testing_util::WriteFile(dir + "/stories.gguf", StoriesGguf(StoriesArch::kLlama));
  const std::string tmp = dir + "/tmp";
  ASSERT_EQ(::mkdir(tmp.c_str(), 0700), 0);
  const char* old = std::getenv("TMPDIR");
  const std::string saved = old ? old : "";
  ::setenv("TMPDIR", tmp.c_str(), 1);
  pocket_model* gguf = nullptr;
  const pocket_status s = pocket_model_load((dir + "/stories.gguf").c_str(), nullptr, &gguf);
  if (old) {
    ::setenv("TMPDIR", saved.c_str(), 1);
  } else {
    ::unsetenv("TMPDIR");
  }
  ASSERT_EQ(s, POCKET_OK) << pocket_last_error();
  EXPECT_EQ(Entries(tmp), 2u) << "the temporary .pocket file is left in " << tmp;
  EXPECT_STREQ(pocket_model_architecture(gguf), "llama");
  EXPECT_EQ(pocket_model_vocab_size(gguf), 512);
  pocket_model* reference = nullptr;
  ASSERT_EQ(pocket_model_load(kModel, nullptr, &reference), POCKET_OK) << pocket_last_error();
  const std::vector<int32_t> ids = Greedy(gguf);
  EXPECT_EQ(ids.size(), 32u);
  EXPECT_EQ(ids, Greedy(reference));
  pocket_model_free(gguf);
  pocket_model_free(reference);
}

TEST(GgufLoad, CApiRefusesAMalformedGguf) {
  const std::string dir = pocket::testing_util::MakeTempDir("gguf_load");
  const std::string path = dir + "/bad.gguf";
  pocket::testing_util::WriteFile(path, StoriesGguf(StoriesArch::kLlama).substr(0, 3000));
  pocket_model* model = nullptr;
  EXPECT_EQ(pocket_model_load(path.c_str(), nullptr, &model), POCKET_CORRUPT_FILE);
  EXPECT_EQ(model, nullptr);
  EXPECT_NE(std::string(pocket_last_error()).find("bad.gguf"), std::string::npos)
      << pocket_last_error();
}

}  // namespace
