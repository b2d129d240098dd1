// Round trip through PocketWriter and PocketFile, and the writer's checks.
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "format/pocket_test_util.h"
#include "format/reader.h"
#include "format/small_model.h"
#include "format/writer.h"

namespace pocket {
namespace {

using testing::Bytes;

bool Exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

TEST(WriterReader, RoundTripKeepsEveryField) {
  const std::string path = testing::TempPath("roundtrip.pocket");
  ASSERT_TRUE(testing::WriteSmallModel(path).ok());
  EXPECT_FALSE(Exists(path + ".tmp"));

  StatusOr<std::unique_ptr<PocketFile>> f = PocketFile::Open(path);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  const PocketFile& pf = **f;
  EXPECT_EQ(pf.major(), 1);
  EXPECT_EQ(pf.minor(), 0);
  EXPECT_EQ(pf.config_json(), testing::kSmallConfig);
  EXPECT_EQ(pf.graph_json(), testing::kSmallGraph);
  EXPECT_EQ(pf.tokenizer_blob(),
            std::string(testing::kSmallTokenizer, sizeof(testing::kSmallTokenizer) - 1));
  EXPECT_EQ(pf.data_offset() % 16384, 0u);
  EXPECT_EQ(pf.data_offset(), 16384u);  // the metadata is far below 16 KiB
  EXPECT_EQ(pf.data_size(), 576u + 24u);
  EXPECT_EQ(pf.sections().size(), 5u);

  const std::vector<testing::SmallTensor> want = testing::SmallTensors();
  const std::vector<uint64_t> offsets = testing::SmallOffsets();
  ASSERT_EQ(pf.tensors().size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    const TensorInfo& got = pf.tensors()[i];
    const TensorInfo& w = want[i].info;
    SCOPED_TRACE(w.name);
    EXPECT_EQ(got.name, w.name);
    EXPECT_EQ(got.dtype, w.dtype);
    EXPECT_EQ(got.layout, TensorLayout::kRowMajor);
    EXPECT_EQ(got.group, w.group);
    EXPECT_EQ(got.shape, w.shape);
    EXPECT_EQ(got.nbytes, w.nbytes);
    EXPECT_EQ(got.offset, offsets[i]);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(pf.TensorData(got)) % 64, 0u);
    EXPECT_EQ(Bytes(pf.TensorData(got), pf.TensorData(got) + got.nbytes), want[i].bytes);
    EXPECT_EQ(pf.FindTensor(w.name), &got);
  }
  EXPECT_EQ(pf.FindTensor("missing"), nullptr);
  EXPECT_TRUE(pf.VerifyChecksums().ok());
  // Padding between tensors is zero.
  EXPECT_EQ(pf.TensorData(pf.tensors()[0])[60], 0);
  EXPECT_EQ(pf.TensorData(pf.tensors()[2])[191], 0);
}

TEST(WriterReader, TensorInfoDerivedSizes) {
  const TensorInfo t = testing::MakeInfo("x", DType::kBF16, {2, 3, 4}, 0, 48);
  EXPECT_EQ(t.rows(), 6u);
  EXPECT_EQ(t.cols(), 4u);
  EXPECT_EQ(t.elements(), 24u);
  const TensorInfo v = testing::MakeInfo("v", DType::kF32, {9}, 0, 36);
  EXPECT_EQ(v.rows(), 1u);
  EXPECT_EQ(v.elements(), 9u);
}

TEST(WriterReader, OutputMatchesTheSpecAssemblerByteForByte) {
  const std::string path = testing::TempPath("spec.pocket");
  ASSERT_TRUE(testing::WriteSmallModel(path).ok());
  std::vector<testing::RawTensor> dir;
  Bytes data;
  const std::vector<uint64_t> offsets = testing::SmallOffsets();
  const std::vector<testing::SmallTensor> ts = testing::SmallTensors();
  for (size_t i = 0; i < ts.size(); ++i) {
    const TensorInfo& t = ts[i].info;
    dir.push_back(
        {t.name, static_cast<uint8_t>(t.dtype), 0, t.group, t.shape, offsets[i], t.nbytes});
    data.resize(offsets[i], 0);
    data.insert(data.end(), ts[i].bytes.begin(), ts[i].bytes.end());
  }
  const Bytes expected =
      testing::Assemble({{1, testing::ToBytes(testing::kSmallConfig)},
                         {2, testing::ToBytes(std::string(testing::kSmallTokenizer,
                                                          sizeof(testing::kSmallTokenizer) - 1))},
                         {3, testing::ToBytes(testing::kSmallGraph)},
                         {4, testing::EncodeDirectory(dir)},
                         {5, data, kDataAlignment}});
  EXPECT_EQ(testing::ReadFileBytes(path), expected);
}

TEST(WriterReader, Deterministic) {
  const std::string a = testing::TempPath("det_a.pocket");
  const std::string b = testing::TempPath("det_b.pocket");
  ASSERT_TRUE(testing::WriteSmallModel(a).ok());
  ASSERT_TRUE(testing::WriteSmallModel(b).ok());
  EXPECT_EQ(testing::ReadFileBytes(a), testing::ReadFileBytes(b));
}

TEST(WriterReader, EmptyModelRoundTrips) {
  const std::string path = testing::TempPath("empty.pocket");
  PocketWriter w;
  w.SetConfigJson("{}");
  w.SetGraphJson("{}");
  ASSERT_TRUE(w.Finish(path).ok());
  StatusOr<std::unique_ptr<PocketFile>> f = PocketFile::Open(path);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_TRUE((*f)->tensors().empty());
  EXPECT_EQ((*f)->tokenizer_blob(), "");
  EXPECT_TRUE((*f)->VerifyChecksums().ok());
}

TEST(WriterReader, FinishFailureNamesPathAndLeavesNoTmp) {
  const std::string dir = testing::TempPath("no_such_dir");
  const std::string path = dir + "/model.pocket";
  Status s = testing::WriteSmallModel(path);
  ASSERT_EQ(s.code(), StatusCode::kIoError);
  EXPECT_NE(s.message().find(path), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("No such file or directory"), std::string::npos) << s.message();

  // A directory as the destination is refused, and no temporary file is
  // left behind.
  const std::string target = testing::TempPath("target_is_dir");
  ::mkdir(target.c_str(), 0755);
  s = testing::WriteSmallModel(target);
  ASSERT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("'" + target + "' exists and is a directory"), std::string::npos)
      << s.message();
  EXPECT_FALSE(Exists(target + ".tmp"));
}

TEST(WriterReader, AddTensorRejectsInvalidTensors) {
  struct Case {
    TensorInfo info;
    size_t bytes;
    const char* expect;
  };
  const std::string long_name(257, 'a');
  const Case cases[] = {
      {testing::MakeInfo("", DType::kF32, {4}, 0, 16), 16, "empty name"},
      {testing::MakeInfo(long_name, DType::kF32, {4}, 0, 16), 16, "limit is 256"},
      {testing::MakeInfo("nodims", DType::kF32, {}, 0, 4), 4, "0 dims"},
      {testing::MakeInfo("five", DType::kF32, {1, 1, 1, 1, 1}, 0, 4), 4, "5 dims"},
      {testing::MakeInfo("zero", DType::kF32, {4, 0}, 0, 0), 0, "dim 1 is zero"},
      {testing::MakeInfo("grp", DType::kQ4, {1, 96}, 48, 60), 60, "group 48"},
      {testing::MakeInfo("plaingrp", DType::kF16, {4}, 32, 8), 8, "group 32"},
      {testing::MakeInfo("indiv", DType::kQ4, {1, 96}, 64, 52), 52, "does not divide"},
      {testing::MakeInfo("size", DType::kF32, {4}, 0, 12), 12, "takes 16"},
      {testing::MakeInfo("given", DType::kF32, {4}, 0, 16), 15, "15 data bytes"},
  };
  for (const Case& c : cases) {
    PocketWriter w;
    Status s = w.AddTensor(c.info, std::vector<uint8_t>(c.bytes));
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << c.info.name;
    EXPECT_NE(s.message().find(c.expect), std::string::npos) << s.message();
  }
  PocketWriter w;
  const TensorInfo t = testing::MakeInfo("dup", DType::kF32, {4}, 0, 16);
  ASSERT_TRUE(w.AddTensor(t, std::vector<uint8_t>(16)).ok());
  Status s = w.AddTensor(t, std::vector<uint8_t>(16));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("'dup' was already added"), std::string::npos) << s.message();
}

// Writes valid files as the seed corpus of fuzz/reader_fuzz.cc and checks
// each one opens, so the fuzzer starts from inputs that pass every check.
TEST(WriterReader, WritesFuzzSeedCorpus) {
  const std::string dir = std::string(POCKET_BINARY_DIR) + "/fuzz_corpus";
  ::mkdir(dir.c_str(), 0755);
  ::mkdir((dir + "/reader").c_str(), 0755);
  const std::string small = dir + "/reader/small.pocket";
  ASSERT_TRUE(testing::WriteSmallModel(small).ok());
  PocketWriter w;
  w.SetConfigJson("{}");
  w.SetGraphJson("{}");
  const std::string empty = dir + "/reader/empty.pocket";
  ASSERT_TRUE(w.Finish(empty).ok());
  for (const std::string& p : {small, empty}) {
    StatusOr<std::unique_ptr<PocketFile>> f = PocketFile::Open(p);
    EXPECT_TRUE(f.ok()) << f.status().ToString();
  }
}

}  // namespace
}  // namespace pocket
