#include "util/json_util.h"

#include <gtest/gtest.h>

namespace pocket {
namespace {

Json Parse(const char* text) {
  StatusOr<Json> j = ParseJson(text, "test");
  EXPECT_TRUE(j.ok());
  return j.ok() ? *j : Json();
}

TEST(JsonUtil, ParseErrorNamesWhat) {
  StatusOr<Json> j = ParseJson("{\"a\": [1, 2", "config section");
  ASSERT_FALSE(j.ok());
  EXPECT_EQ(j.status().code(), StatusCode::kCorruptFile);
  EXPECT_NE(j.status().message().find("config section"), std::string::npos);
}

TEST(JsonUtil, RequiredMembers) {
  const Json j = Parse(R"({"n": 3, "x": 1.5, "b": true, "s": "hi", "v": [1, 2], "f": 1e6})");
  int64_t n = 0;
  ASSERT_TRUE(GetInt(j, "n", &n, "cfg").ok());
  EXPECT_EQ(n, 3);
  ASSERT_TRUE(GetInt(j, "f", &n, "cfg").ok());  // integral float from Python
  EXPECT_EQ(n, 1000000);
  double x = 0;
  ASSERT_TRUE(GetDouble(j, "x", &x, "cfg").ok());
  EXPECT_EQ(x, 1.5);
  bool b = false;
  ASSERT_TRUE(GetBool(j, "b", &b, "cfg").ok());
  EXPECT_TRUE(b);
  std::string s;
  ASSERT_TRUE(GetString(j, "s", &s, "cfg").ok());
  EXPECT_EQ(s, "hi");
  std::vector<int64_t> v;
  ASSERT_TRUE(GetIntArray(j, "v", &v, "cfg").ok());
  EXPECT_EQ(v, (std::vector<int64_t>{1, 2}));

  Status missing = GetInt(j, "layers", &n, "config section");
  EXPECT_EQ(missing.code(), StatusCode::kCorruptFile);
  EXPECT_EQ(missing.message(), "config section: missing required key 'layers'");
  Status wrong = GetInt(j, "x", &n, "cfg");
  EXPECT_EQ(wrong.message(), "cfg: key 'x' must be an integer");
  EXPECT_FALSE(GetString(j, "n", &s, "cfg").ok());
  EXPECT_FALSE(GetBool(j, "n", &b, "cfg").ok());
  EXPECT_FALSE(GetDouble(j, "s", &x, "cfg").ok());
  EXPECT_FALSE(GetIntArray(j, "s", &v, "cfg").ok());
}

TEST(JsonUtil, OptionalMembersKeepDefaults) {
  const Json j = Parse(R"({"z": null, "s": 5, "a": [1, "x"]})");
  int64_t n = 7;
  ASSERT_TRUE(GetOptInt(j, "absent", &n, "cfg").ok());
  ASSERT_TRUE(GetOptInt(j, "z", &n, "cfg").ok());
  EXPECT_EQ(n, 7);
  std::string s = "keep";
  Status st = GetOptString(j, "s", &s, "cfg");
  EXPECT_EQ(st.message(), "cfg: key 's' must be a string");
  EXPECT_EQ(s, "keep");
  std::vector<int64_t> v;
  EXPECT_FALSE(GetIntArray(j, "a", &v, "cfg").ok());
  // Accessors on a non-object are errors, not crashes.
  const Json arr = Parse("[1]");
  EXPECT_EQ(FindMember(arr, "k"), nullptr);
  EXPECT_FALSE(GetInt(arr, "k", &n, "cfg").ok());
  EXPECT_EQ(GetOptInt(j, "a", &n, "cfg").message(), "cfg: key 'a' must be an integer");
}

TEST(JsonUtil, DumpReplacesInvalidUtf8) {
  Json j = Json::object();
  j["k"] = std::string(
      "a\xff"
      "b");
  EXPECT_EQ(DumpJson(j),
            "{\"k\":\"a\xEF\xBF\xBD"
            "b\"}");
  EXPECT_EQ(DumpJson(Parse("[1,2]")), "[1,2]");
}

}  // namespace
}  // namespace pocket
