// Helpers shared by the converter tests: scratch directories, whole-file
// I/O, an independent safetensors parser and reading tensors back.
#pragma once

#include <stdlib.h>
#include <sys/stat.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "format/reader.h"
#include "quant/quantize.h"
#include "testing/temp_dir.h"

namespace pocket::testing_util {

inline std::string DataPath(const std::string& rel) {
  return std::string(POCKET_TEST_DATA) + "/" + rel;
}

using testing::MakeTempDir;  // testing/temp_dir.h

inline bool IsRegularFileForTest(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// An F32 safetensors file parsed here, independently of src/convert.
struct RawTensor {
  std::vector<uint64_t> shape;
  std::vector<float> values;
};
inline std::map<std::string, RawTensor> ParseF32Safetensors(const std::string& path) {
  const std::string bytes = ReadFile(path);
  uint64_t header_len = 0;
  std::memcpy(&header_len, bytes.data(), 8);
  nlohmann::json header =
      nlohmann::json::parse(bytes.substr(8, header_len), nullptr, /*allow_exceptions=*/false);
  std::map<std::string, RawTensor> out;
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") continue;
    EXPECT_EQ(it.value()["dtype"], "F32");
    RawTensor t;
    t.shape = it.value()["shape"].get<std::vector<uint64_t>>();
    const uint64_t begin = it.value()["data_offsets"][0].get<uint64_t>();
    const uint64_t end = it.value()["data_offsets"][1].get<uint64_t>();
    t.values.resize((end - begin) / 4);
    std::memcpy(t.values.data(), bytes.data() + 8 + header_len + begin, end - begin);
    out[it.key()] = std::move(t);
  }
  return out;
}

// All rows of a stored tensor, dequantized.
inline std::vector<float> ReadTensor(const PocketFile& file, const std::string& name) {
  const TensorInfo* t = file.FindTensor(name);
  EXPECT_NE(t, nullptr) << name;
  if (!t) return {};
  std::vector<float> out(t->elements());
  for (uint64_t r = 0; r < t->rows(); ++r) {
    DequantizeRow(file.TensorData(*t), t->dtype, t->layout, t->rows(), t->cols(), t->group, r,
                  out.data() + r * t->cols());
  }
  return out;
}

}  // namespace pocket::testing_util
