// Sharded Hugging Face checkpoints (model.safetensors.index.json): the
// stories260K-hf weights split over two shard files must convert to exactly
// the tensors of the single-file checkpoint; a tied model that still stores
// lm_head.weight keeps only token_embd.weight.
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "convert/converter.h"
#include "convert_test_util.h"
#include "format/reader.h"

namespace pocket {
namespace {

using testing_util::DataPath;
using testing_util::MakeTempDir;
using testing_util::ParseF32Safetensors;
using testing_util::RawTensor;
using testing_util::ReadFile;
using testing_util::ReadTensor;
using testing_util::WriteFile;

// Serializes F32 tensors as one safetensors file (8-byte header length,
// JSON header, packed data).
std::string SafetensorsBytes(const std::map<std::string, RawTensor>& tensors) {
  nlohmann::json header = nlohmann::json::object();
  std::string data;
  for (const auto& [name, t] : tensors) {
    const uint64_t begin = data.size();
    data.append(reinterpret_cast<const char*>(t.values.data()), t.values.size() * 4);
    header[name] = {{"dtype", "F32"}, {"shape", t.shape}, {"data_offsets", {begin, data.size()}}};
  }
  const std::string h = header.dump();
  const uint64_t len = h.size();
  std::string out(8, '\0');
  std::memcpy(&out[0], &len, 8);
  return out + h + data;
}

// Copies the stories260K-hf folder's metadata files and writes its weights
// as two shards plus an index; `extra` tensors go into the second shard.
std::string MakeShardedCopy(const std::map<std::string, RawTensor>& extra) {
  const std::string dir = MakeTempDir("sharded");
  for (const char* f : {"config.json", "generation_config.json", "tokenizer.model",
                        "tokenizer_config.json"}) {
    WriteFile(dir + "/" + f, ReadFile(DataPath(std::string("stories260K-hf/") + f)));
  }
  const auto all = ParseF32Safetensors(DataPath("stories260K-hf/model.safetensors"));
  std::map<std::string, RawTensor> shard[2];
  nlohmann::json weight_map = nlohmann::json::object();
  const char* names[2] = {"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"};
  int i = 0;
  for (const auto& [name, t] : all) {
    const int s = (i++ % 2);
    shard[s][name] = t;
    weight_map[name] = names[s];
  }
  for (const auto& [name, t] : extra) {
    shard[1][name] = t;
    weight_map[name] = names[1];
  }
  for (int s = 0; s < 2; ++s) WriteFile(dir + "/" + names[s], SafetensorsBytes(shard[s]));
  nlohmann::json index = {{"metadata", {{"total_size", 0}}}, {"weight_map", weight_map}};
  WriteFile(dir + "/model.safetensors.index.json", index.dump(2));
  return dir;
}

ConvertOptions F32() {
  ConvertOptions o;
  o.quant.weights = DType::kF32;
  o.quant.embeddings = DType::kF32;
  return o;
}

TEST(ShardedConvert, EqualsTheSingleFileCheckpoint) {
  const std::string dir = MakeShardedCopy({});
  const std::string sharded = dir + "/sharded.pocket";
  const std::string single = dir + "/single.pocket";
  ASSERT_TRUE(ConvertModel(dir, sharded, F32()).ok());
  ASSERT_TRUE(ConvertModel(DataPath("stories260K-hf"), single, F32()).ok());
  auto a = PocketFile::Open(sharded);
  auto b = PocketFile::Open(single);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ((*a)->tensors().size(), (*b)->tensors().size());
  for (const TensorInfo& t : (*b)->tensors()) {
    const TensorInfo* u = (*a)->FindTensor(t.name);
    ASSERT_NE(u, nullptr) << t.name;
    ASSERT_EQ(u->nbytes, t.nbytes) << t.name;
    EXPECT_EQ(std::memcmp((*a)->TensorData(*u), (*b)->TensorData(t), t.nbytes), 0) << t.name;
  }
}

TEST(ShardedConvert, TiedModelDropsAStoredLmHead) {
  const auto all = ParseF32Safetensors(DataPath("stories260K-hf/model.safetensors"));
  const RawTensor& embed = all.at("model.embed_tokens.weight");
  const std::string dir = MakeShardedCopy({{"lm_head.weight", embed}});
  const std::string out = dir + "/tied.pocket";
  ASSERT_TRUE(ConvertModel(dir, out, F32()).ok());
  auto f = PocketFile::Open(out);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ((*f)->FindTensor("output.weight"), nullptr);
  EXPECT_EQ(ReadTensor(**f, "token_embd.weight"), embed.values);
}

TEST(ShardedConvert, MissingShardIsAnErrorNamingIt) {
  const std::string dir = MakeShardedCopy({});
  ASSERT_EQ(std::remove((dir + "/model-00002-of-00002.safetensors").c_str()), 0);
  auto stats = ConvertModel(dir, dir + "/x.pocket", F32());
  ASSERT_FALSE(stats.ok());
  EXPECT_NE(stats.status().message().find("model-00002-of-00002.safetensors"), std::string::npos)
      << stats.status().message();
}

}  // namespace
}  // namespace pocket
