// JSON Schema: hand-written instances each keyword must accept and reject,
// errors naming unsupported keywords, and random walks through the compiled
// grammar whose every complete output must parse and pass the independent
// validator (schema_validator.h).
#include "grammar/json_schema.h"

#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "grammar/matcher.h"
#include "grammar_testing.h"
#include "schema_validator.h"
#include "test_schemas.h"

namespace pocket {
namespace {

using grammar::CompileJsonSchema;
using testing::IsPrefix;
using testing::Matches;
using testing::MustCompile;

std::shared_ptr<const grammar::Grammar> Schema(const std::string& text) {
  return MustCompile(CompileJsonSchema(text));
}

std::string Error(const std::string& text) {
  auto g = CompileJsonSchema(text);
  EXPECT_FALSE(g.ok()) << text;
  return g.ok() ? std::string() : g.status().message();
}

TEST(JsonSchema, AnyValue) {
  auto g = Schema("{}");
  for (const char* ok : {"1", "-0.5e+3", "\"a\\u00e9\\n\"", "true", "null", "[]", "{}",
                         R"({"a": [1, {"b": null}], "c" : "d"})", "[ 1 ,2 ]"}) {
    EXPECT_TRUE(Matches(g, ok)) << ok;
  }
  for (const char* bad :
       {"01", "1.", ".5", "\"\n\"", "\"\\x\"", "[1,]", "{\"a\"}", "nul", "{'a': 1}", "tru"}) {
    EXPECT_FALSE(Matches(g, bad)) << bad;
  }
}

TEST(JsonSchema, Types) {
  EXPECT_TRUE(Matches(Schema(R"({"type": "string"})"), "\"x\""));
  EXPECT_FALSE(Matches(Schema(R"({"type": "string"})"), "1"));
  EXPECT_TRUE(Matches(Schema(R"({"type": "integer"})"), "-12"));
  EXPECT_FALSE(Matches(Schema(R"({"type": "integer"})"), "1.5"));
  EXPECT_TRUE(Matches(Schema(R"({"type": "number"})"), "1.5e3"));
  EXPECT_TRUE(Matches(Schema(R"({"type": "boolean"})"), "false"));
  EXPECT_FALSE(Matches(Schema(R"({"type": "boolean"})"), "null"));
  EXPECT_TRUE(Matches(Schema(R"({"type": "null"})"), "null"));
  auto either = Schema(R"({"type": ["string", "null"]})");
  EXPECT_TRUE(Matches(either, "null"));
  EXPECT_TRUE(Matches(either, "\"a\""));
  EXPECT_FALSE(Matches(either, "1"));
}

TEST(JsonSchema, ObjectProperties) {
  auto g = Schema(R"({"type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"},
                   "tags": {"type": "array", "items": {"type": "string"}}},
    "required": ["name"], "additionalProperties": false})");
  // Members come in name order: age, name, tags.
  EXPECT_TRUE(Matches(g, R"({"name": "Bo"})"));
  EXPECT_TRUE(Matches(g, R"({"age": 3, "name": "Bo"})"));
  EXPECT_TRUE(Matches(g, R"({"age":3,"name":"Bo","tags":["a","b"]})"));
  EXPECT_TRUE(Matches(g, R"({"name": "Bo", "tags": []})"));
  EXPECT_FALSE(Matches(g, R"({})"));  // name is required
  EXPECT_FALSE(Matches(g, R"({"age": 3})"));
  EXPECT_FALSE(Matches(g, R"({"name": 1})"));
  EXPECT_FALSE(Matches(g, R"({"name": "Bo", "x": 1})"));  // no additional properties
  EXPECT_FALSE(Matches(g, R"({"name": "Bo",})"));
  EXPECT_FALSE(Matches(g, R"({, "name": "Bo"})"));
}

TEST(JsonSchema, AdditionalProperties) {
  auto open = Schema(R"({"type": "object", "properties": {"a": {"type": "integer"}}})");
  EXPECT_TRUE(Matches(open, R"({"a": 1, "b": [true]})"));
  EXPECT_TRUE(Matches(open, R"({"zz": "x", "ab": null})"));
  EXPECT_TRUE(Matches(open, R"({"": 0})"));
  // An extra member may not reuse a declared name (its schema would not hold).
  EXPECT_FALSE(Matches(open, R"({"a": 1, "a": "x"})"));
  EXPECT_FALSE(Matches(open, R"({"a": "x"})"));
  auto typed = Schema(R"({"type": "object", "additionalProperties": {"type": "integer"}})");
  EXPECT_TRUE(Matches(typed, R"({"x": 1, "y": 2})"));
  EXPECT_FALSE(Matches(typed, R"({"x": "1"})"));
  auto closed = Schema(R"({"type": "object", "additionalProperties": false})");
  EXPECT_TRUE(Matches(closed, "{}"));
  EXPECT_FALSE(Matches(closed, R"({"x": 1})"));
}

TEST(JsonSchema, Arrays) {
  auto g =
      Schema(R"({"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 3})");
  EXPECT_TRUE(Matches(g, "[1, 2]"));
  EXPECT_TRUE(Matches(g, "[1,2,3]"));
  EXPECT_FALSE(Matches(g, "[1]"));
  EXPECT_FALSE(Matches(g, "[1,2,3,4]"));
  EXPECT_FALSE(Matches(g, "[1,\"a\"]"));
  auto tuple = Schema(R"({"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}],
                          "items": false})");
  EXPECT_TRUE(Matches(tuple, "[\"a\", 1]"));
  EXPECT_TRUE(Matches(tuple, "[\"a\"]"));
  EXPECT_TRUE(Matches(tuple, "[]"));
  EXPECT_FALSE(Matches(tuple, "[1, 1]"));
  EXPECT_FALSE(Matches(tuple, "[\"a\", 1, 2]"));
  auto rest = Schema(R"({"type": "array", "prefixItems": [{"type": "string"}],
                         "items": {"type": "boolean"}, "minItems": 2})");
  EXPECT_TRUE(Matches(rest, "[\"a\", true, false]"));
  EXPECT_FALSE(Matches(rest, "[\"a\"]"));
  EXPECT_FALSE(Matches(rest, "[\"a\", 1]"));
  auto empty = Schema(R"({"type": "array", "maxItems": 0})");
  EXPECT_TRUE(Matches(empty, "[]"));
  EXPECT_FALSE(Matches(empty, "[1]"));
}

TEST(JsonSchema, EnumConst) {
  auto g = Schema(R"({"enum": ["red", 2, null, {"a": [1]}]})");
  EXPECT_TRUE(Matches(g, "\"red\""));
  EXPECT_TRUE(Matches(g, "2"));
  EXPECT_TRUE(Matches(g, "null"));
  EXPECT_TRUE(Matches(g, R"({"a":[1]})"));
  EXPECT_FALSE(Matches(g, "\"blue\""));
  auto typed = Schema(R"({"type": "string", "enum": ["a", 1]})");
  EXPECT_TRUE(Matches(typed, "\"a\""));
  EXPECT_FALSE(Matches(typed, "1"));
  auto c = Schema(R"({"const": "x\"y"})");
  EXPECT_TRUE(Matches(c, R"("x\"y")"));
  EXPECT_FALSE(Matches(c, R"("xy")"));
}

TEST(JsonSchema, AnyOfOneOfAllOf) {
  auto g = Schema(R"({"anyOf": [{"type": "integer"}, {"type": "string", "maxLength": 1}]})");
  EXPECT_TRUE(Matches(g, "5"));
  EXPECT_TRUE(Matches(g, "\"a\""));
  EXPECT_FALSE(Matches(g, "\"ab\""));
  auto one = Schema(R"({"oneOf": [{"type": "boolean"}, {"type": "null"}]})");
  EXPECT_TRUE(Matches(one, "null"));
  EXPECT_FALSE(Matches(one, "0"));
  auto all = Schema(R"({"allOf": [{"type": "boolean"}]})");
  EXPECT_TRUE(Matches(all, "true"));
  EXPECT_FALSE(Matches(all, "0"));
}

TEST(JsonSchema, RefsAndRecursion) {
  auto g = Schema(R"({"$ref": "#/$defs/node",
    "$defs": {"node": {"type": "object", "additionalProperties": false,
      "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/node"}},
                     "v": {"type": "integer"}}, "required": ["v"]}}})");
  EXPECT_TRUE(Matches(g, R"({"v": 1})"));
  EXPECT_TRUE(Matches(g, R"({"kids": [{"v": 2}, {"kids": [{"v": 4}], "v": 3}], "v": 1})"));
  EXPECT_FALSE(Matches(g, R"({"kids": [{}], "v": 1})"));
  auto old = Schema(R"({"definitions": {"a/b": {"type": "null"}},
                        "$ref": "#/definitions/a~1b"})");
  EXPECT_TRUE(Matches(old, "null"));
  auto self = Schema(R"({"type": "array", "items": {"$ref": "#"}, "maxItems": 2})");
  EXPECT_TRUE(Matches(self, "[[], [[]]]"));
  EXPECT_FALSE(Matches(self, "[[], [], []]"));
}

TEST(JsonSchema, StringLengths) {
  auto g = Schema(R"({"type": "string", "minLength": 2, "maxLength": 3})");
  EXPECT_TRUE(Matches(g, "\"ab\""));
  EXPECT_TRUE(Matches(g, "\"日本語\""));  // characters, not bytes
  EXPECT_TRUE(Matches(g, "\"a\\nb\""));   // an escape is one character
  EXPECT_FALSE(Matches(g, "\"a\""));
  EXPECT_FALSE(Matches(g, "\"abcd\""));
}

TEST(JsonSchema, IntegerBounds) {
  auto g = Schema(R"({"type": "integer", "minimum": -15, "maximum": 230})");
  for (int v = -40; v <= 300; ++v) {
    EXPECT_EQ(Matches(g, std::to_string(v)), v >= -15 && v <= 230) << v;
  }
  EXPECT_FALSE(Matches(g, "007"));
  auto ex = Schema(R"({"type": "integer", "exclusiveMinimum": 9, "exclusiveMaximum": 1000})");
  EXPECT_FALSE(Matches(ex, "9"));
  EXPECT_TRUE(Matches(ex, "10"));
  EXPECT_TRUE(Matches(ex, "999"));
  EXPECT_FALSE(Matches(ex, "1000"));
  auto lower = Schema(R"({"type": "integer", "minimum": 95})");
  EXPECT_FALSE(Matches(lower, "94"));
  EXPECT_TRUE(Matches(lower, "95"));
  EXPECT_TRUE(Matches(lower, "100"));
  EXPECT_TRUE(Matches(lower, "123456789"));
  EXPECT_FALSE(Matches(lower, "-100"));
  auto upper = Schema(R"({"type": "integer", "maximum": -7})");
  EXPECT_TRUE(Matches(upper, "-7"));
  EXPECT_TRUE(Matches(upper, "-123456"));
  EXPECT_FALSE(Matches(upper, "-6"));
  EXPECT_FALSE(Matches(upper, "0"));
  auto nonneg = Schema(R"({"type": "number", "minimum": 0})");
  EXPECT_TRUE(Matches(nonneg, "0.5"));
  EXPECT_FALSE(Matches(nonneg, "-0.5"));
}

TEST(JsonSchema, Pattern) {
  auto g = Schema(R"({"type": "string", "pattern": "^[A-Z]{2}-\\d{3}$"})");
  EXPECT_TRUE(Matches(g, "\"AB-123\""));
  EXPECT_FALSE(Matches(g, "\"AB-12\""));
  EXPECT_FALSE(Matches(g, "\"xAB-123\""));
  // Unanchored: the string contains a match.
  auto search = Schema(R"({"type": "string", "pattern": "a+b"})");
  EXPECT_TRUE(Matches(search, "\"xxaab yy\""));
  EXPECT_FALSE(Matches(search, "\"ba\""));
  // Characters JSON escapes are matched as their escapes.
  auto quote = Schema(R"({"type": "string", "pattern": "^\"[^\"]*\"$"})");
  EXPECT_TRUE(Matches(quote, R"("\"hi\"")"));
  EXPECT_FALSE(Matches(quote, R"("\"h\"i\"")"));
}

TEST(JsonSchema, Formats) {
  auto date = Schema(R"({"type": "string", "format": "date"})");
  EXPECT_TRUE(Matches(date, "\"2024-02-29\""));
  EXPECT_FALSE(Matches(date, "\"2024-13-01\""));
  auto time = Schema(R"({"type": "string", "format": "time"})");
  EXPECT_TRUE(Matches(time, "\"23:59:60.5+01:00\""));
  EXPECT_TRUE(Matches(time, "\"08:00:00Z\""));
  EXPECT_FALSE(Matches(time, "\"24:00:00Z\""));
  auto dt = Schema(R"({"type": "string", "format": "date-time"})");
  EXPECT_TRUE(Matches(dt, "\"2024-01-02T03:04:05Z\""));
  EXPECT_FALSE(Matches(dt, "\"2024-01-02 03:04:05Z\""));
  auto uuid = Schema(R"({"type": "string", "format": "uuid"})");
  EXPECT_TRUE(Matches(uuid, "\"123e4567-e89b-12d3-a456-426614174000\""));
  EXPECT_FALSE(Matches(uuid, "\"123e4567e89b12d3a456426614174000\""));
  auto email = Schema(R"({"type": "string", "format": "email"})");
  EXPECT_TRUE(Matches(email, "\"a.b+c@example.co.uk\""));
  EXPECT_FALSE(Matches(email, "\"ab@example\""));
  EXPECT_FALSE(Matches(email, "\"@example.com\""));
}

TEST(JsonSchema, UnsupportedKeywordsAreErrors) {
  EXPECT_EQ(Error(R"({"type": "string", "contentEncoding": "base64"})"),
            "json schema: unsupported keyword 'contentEncoding' (at #)");
  EXPECT_EQ(Error(R"({"properties": {"a": {"type": "array", "uniqueItems": true}}})"),
            "json schema: unsupported keyword 'uniqueItems' (at #/properties/a)");
  EXPECT_EQ(Error(R"({"type": "integer", "multipleOf": 3})"),
            "json schema: unsupported keyword 'multipleOf' (at #)");
  EXPECT_EQ(Error(R"({"type": "object", "patternProperties": {}})"),
            "json schema: unsupported keyword 'patternProperties' (at #)");
  EXPECT_EQ(Error(R"({"type": "string", "format": "ipv4"})"),
            "json schema: unsupported format 'ipv4' (supported: date, time, date-time, uuid, "
            "email) (at #)");
  EXPECT_NE(Error(R"({"type": "number", "maximum": 3})").find("'maximum' narrows only integers"),
            std::string::npos);
  EXPECT_NE(Error(R"({"allOf": [{"type": "string"}, {"maxLength": 2}]})").find("allOf"),
            std::string::npos);
  EXPECT_NE(Error(R"({"$ref": "#/$defs/missing"})").find("points at nothing"), std::string::npos);
  EXPECT_NE(Error(R"({"$ref": "http://x/y"})").find("only local references"), std::string::npos);
  EXPECT_NE(Error(R"({"type": "string", "pattern": "(a)\\1"})").find("backreferences"),
            std::string::npos);
  EXPECT_NE(Error(R"({"type": "thing"})").find("unknown type 'thing'"), std::string::npos);
  EXPECT_NE(Error(R"({"type": "object", "required": ["a"], "properties": {}})")
                .find("required property 'a'"),
            std::string::npos);
  EXPECT_EQ(Error("{\"type\": \n  [1,,"),
            "json schema: parse error at line 2, column 6: syntax error while parsing value - "
            "unexpected ','; expected '[', '{', or a literal");
  EXPECT_NE(Error("false").find("no value matches"), std::string::npos);
}

TEST(JsonSchema, RandomWalksValidate) {
  std::mt19937_64 rng(7);
  for (const char* text : testing::kTestSchemas) {
    auto g = Schema(text);
    testing::SchemaValidator validator(nlohmann::json::parse(text));
    int complete = 0;
    for (int walk = 0; walk < 300; ++walk) {
      grammar::Matcher m(g);
      std::string out;
      while (out.size() < 300) {
        if (m.IsComplete() && (!m.CanContinue() || rng() % 4 == 0)) break;
        std::vector<uint8_t> allowed;
        for (int b = 0; b < 256; ++b) {
          if (m.Step(m.state(), static_cast<uint8_t>(b)) != grammar::Matcher::kDead) {
            allowed.push_back(static_cast<uint8_t>(b));
          }
        }
        ASSERT_FALSE(allowed.empty()) << "dead end after " << out;
        // Closing brackets and quotes get extra weight so walks finish.
        uint8_t b = allowed[rng() % allowed.size()];
        for (uint8_t c : allowed) {
          if ((c == '"' || c == '}' || c == ']') && rng() % 3 == 0) b = c;
        }
        ASSERT_TRUE(m.AcceptByte(b));
        out.push_back(static_cast<char>(b));
      }
      if (!m.IsComplete()) continue;
      ++complete;
      nlohmann::json value = nlohmann::json::parse(out, nullptr, false);
      ASSERT_FALSE(value.is_discarded()) << text << "\n" << out;
      EXPECT_TRUE(validator.Valid(value)) << text << "\n" << out;
    }
    EXPECT_GT(complete, 50) << text;
  }
}

}  // namespace
}  // namespace pocket
