// Tokenizer goldens as JSON lines ({"text", "ids"}; the pre-tokenizer
// goldens have "pre" and "words", and "ids" for some), read independently
// of the code under test, and a check that a tokenizer encodes them.
#pragma once

#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "convert/convert_test_util.h"
#include "tokenizer/tokenizer.h"
#include "util/json_util.h"

namespace pocket::testing_gguf {

struct Golden {
  std::string pre;                 // gguf-pretokenizers goldens only
  std::vector<std::string> words;  // the same
  std::string text;
  std::vector<int32_t> ids;
};

inline std::vector<Golden> LoadGolden(const std::string& path) {
  std::vector<Golden> out;
  std::istringstream lines(testing_util::ReadFile(path));
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty()) continue;
    auto j = ParseJson(line, "golden row");
    EXPECT_TRUE(j.ok());
    if (!j.ok()) continue;
    Golden g;
    std::vector<int64_t> ids;
    if (j->contains("pre")) {
      EXPECT_TRUE(GetString(*j, "pre", &g.pre, "golden").ok());
      for (const Json& w : (*j)["words"]) g.words.push_back(w.get<std::string>());
    }
    EXPECT_TRUE(GetString(*j, "text", &g.text, "golden").ok());
    if (!j->contains("pre") || j->contains("ids")) {
      EXPECT_TRUE(GetIntArray(*j, "ids", &ids, "golden").ok());
    }
    g.ids.assign(ids.begin(), ids.end());
    out.push_back(g);
  }
  EXPECT_FALSE(out.empty()) << path;
  return out;
}

// `keep_whitespace`: only the rows whose spaces libsentencepiece keeps as
// they are (tok512's normalizer removes extra whitespace, which its GGUF
// metadata cannot say and llama.cpp never does).
inline void ExpectGoldens(const Tokenizer& tok, const std::string& golden_path,
                          bool keep_whitespace = false) {
  for (const Golden& g : LoadGolden(golden_path)) {
    if (keep_whitespace && (g.text.find("  ") != std::string::npos ||
                            (!g.text.empty() && (g.text.front() == ' ' || g.text.back() == ' ')))) {
      continue;
    }
    auto ids = tok.Encode(g.text);
    ASSERT_TRUE(ids.ok()) << ids.status().ToString();
    EXPECT_EQ(*ids, g.ids) << "text '" << g.text << "'";
  }
}

}  // namespace pocket::testing_gguf
