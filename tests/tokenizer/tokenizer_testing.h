// Shared helpers for the tokenizer tests: test assets, golden rows and the
// tokenizers built from them (each built once per test process).
#pragma once

#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tokenizer/tokenizer.h"
#include "util/json_util.h"

namespace pocket::testing {

inline std::string ReadTestFile(const std::string& relative) {
  std::ifstream in(std::string(POCKET_TEST_DATA) + "/" + relative, std::ios::binary);
  EXPECT_TRUE(in.good()) << "missing test asset " << relative;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct GoldenRow {
  std::string text;
  std::vector<int32_t> ids;
};

inline std::vector<GoldenRow> ReadGolden(const std::string& relative) {
  std::vector<GoldenRow> rows;
  std::istringstream lines(ReadTestFile(relative));
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty()) continue;
    auto j = ParseJson(line, relative.c_str());
    EXPECT_TRUE(j.ok()) << j.status().ToString();
    if (!j.ok()) continue;
    GoldenRow row;
    std::vector<int64_t> ids;
    EXPECT_TRUE(GetString(*j, "text", &row.text, "golden").ok());
    EXPECT_TRUE(GetIntArray(*j, "ids", &ids, "golden").ok());
    row.ids.assign(ids.begin(), ids.end());
    rows.push_back(std::move(row));
  }
  EXPECT_FALSE(rows.empty()) << relative;
  return rows;
}

inline std::unique_ptr<Tokenizer> Must(StatusOr<std::unique_ptr<Tokenizer>> t) {
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return t.ok() ? std::move(t).value() : nullptr;
}

// Built once per process: parsing Qwen3's 11 MB tokenizer.json takes a while.
inline const Tokenizer& Qwen3() {
  static const Tokenizer* t =
      Must(Tokenizer::FromHfJson(ReadTestFile("qwen3-tokenizer/tokenizer.json"),
                                 ReadTestFile("qwen3-tokenizer/tokenizer_config.json")))
          .release();
  return *t;
}

inline const Tokenizer& Mistral() {
  static const Tokenizer* t =
      Must(Tokenizer::FromHfJson(ReadTestFile("mistral-tokenizer/tokenizer.json"), "")).release();
  return *t;
}

inline std::vector<int32_t> EncodeOk(const Tokenizer& t, const std::string& text,
                                     bool parse_special = true) {
  auto ids = t.Encode(text, parse_special);
  EXPECT_TRUE(ids.ok()) << ids.status().ToString();
  return ids.ok() ? *ids : std::vector<int32_t>{};
}

}  // namespace pocket::testing
