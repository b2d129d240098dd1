// The JSON Schema Test Suite (draft 2020-12; tests/data/json-schema-test-
// suite, provenance in its README.md): for every group whose schema
// compiles, each valid instance, written as compact JSON text, must be
// accepted by the compiled grammar and each invalid one rejected. Groups
// outside the supported subset must fail to compile (never silently
// narrow), except the instances of kKnownDifferences, each with the
// reason the grammar decides it otherwise (docs/structured-output.md lists
// both).
#include <dirent.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "grammar/json_schema.h"
#include "grammar_testing.h"

namespace pocket {
namespace {

const std::string kSuite = std::string(POCKET_TEST_DATA) + "/json-schema-test-suite/draft2020-12";

// Instances the grammar judges differently from the suite, by the start of
// "file: group description: test description", and why.
struct Difference {
  const char* prefix;
  const char* reason;
};
const Difference kKnownDifferences[] = {
    {"const.json: const with 0 does not match other zero-like types: float zero",
     "a number is written one way, as the schema writes it (0, not 0.0)"},
    {"const.json: const with 1 does not match true: float one", "a number is written one way"},
    {"const.json: const with -2.0 matches integer and float types: integer -2",
     "a number is written one way"},
    {"const.json: float and integers are equal up to 64-bit representation limits: float is valid",
     "a number is written one way"},
    {"enum.json: enum with 0 does not match false: float zero", "a number is written one way"},
    {"enum.json: enum with [0] does not match [false]: [0.0]", "a number is written one way"},
    {"enum.json: enum with 1 does not match true: float one", "a number is written one way"},
    {"enum.json: enum with [1] does not match [true]: [1.0]", "a number is written one way"},
    {"type.json: integer type matches integers: a float with zero fractional part",
     "integers are written without a fraction (5, not 5.0), so a parser reads an integer"},
    {"date-time.json: validation of date-time strings: an invalid date-time with leap second",
     "a leap second is allowed at any minute"},
    {"time.json: validation of time strings: invalid leap second",
     "a leap second is allowed at any minute"},
    {"time.json: validation of time strings: an invalid time string with invalid leap second",
     "a leap second is allowed at any minute"},
    {"date.json: validation of date strings: 2021 is not a leap year",
     "February has 29 days every year"},
    {"date.json: validation of date strings: century year 0100", "February has 29 days every year"},
    {"date.json: validation of date strings: century year 2100", "February has 29 days every year"},
    {"email.json: validation of e-mail addresses: a quoted string", "no quoted local parts"},
    {"email.json: validation of e-mail addresses: an IPv", "no address literals"},
    {"oneOf.json: oneOf with boolean schemas, all true: any value is invalid",
     "oneOf is compiled as anyOf: a value may match several branches"},
    {"oneOf.json: oneOf with boolean schemas, more than one true: any value is invalid",
     "oneOf is compiled as anyOf"},
    {"oneOf.json: oneOf complex types: both oneOf valid", "oneOf is compiled as anyOf"},
    {"oneOf.json: oneOf with empty schema: both valid", "oneOf is compiled as anyOf"},
    {"oneOf.json: oneOf with missing optional property: both oneOf valid",
     "oneOf is compiled as anyOf"},
};

const Difference* KnownDifference(const std::string& id) {
  for (const Difference& d : kKnownDifferences) {
    if (id.rfind(d.prefix, 0) == 0) return &d;
  }
  return nullptr;
}

std::vector<std::string> SuiteFiles() {
  std::vector<std::string> files;
  for (const std::string dir : {kSuite, kSuite + "/optional/format"}) {
    DIR* d = opendir(dir.c_str());
    EXPECT_NE(d, nullptr) << dir;
    if (d == nullptr) continue;
    while (dirent* e = readdir(d)) {
      const std::string name = e->d_name;
      if (name.size() > 5 && name.substr(name.size() - 5) == ".json")
        files.push_back(dir + "/" + name);
    }
    closedir(d);
  }
  std::sort(files.begin(), files.end());
  return files;
}

TEST(JsonSchemaSuite, CompiledGroupsDecideEveryInstance) {
  int groups = 0, compiled = 0, instances = 0;
  std::vector<std::string> out_of_subset;
  for (const std::string& path : SuiteFiles()) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    const std::string file = path.substr(path.find_last_of('/') + 1);
    const nlohmann::json suite = nlohmann::json::parse(text.str());
    for (const auto& group : suite) {
      ++groups;
      const std::string name = file + ": " + group["description"].get<std::string>();
      auto g = grammar::CompileJsonSchema(group["schema"].dump());
      if (!g.ok()) {
        EXPECT_EQ(g.status().code(), StatusCode::kInvalidArgument) << name;
        out_of_subset.push_back(name + " (" + g.status().message() + ")");
        continue;
      }
      ++compiled;
      for (const auto& t : group["tests"]) {
        const std::string id = name + ": " + t["description"].get<std::string>();
        const bool accepted = testing::Matches(*g, t["data"].dump());
        ++instances;
        if (KnownDifference(id) != nullptr) {
          EXPECT_NE(accepted, t["valid"].get<bool>()) << "now decided right: " << id;
          continue;
        }
        EXPECT_EQ(accepted, t["valid"].get<bool>()) << id << "\n  instance " << t["data"].dump();
      }
    }
  }
  std::printf("%d groups, %d compiled (%d instances); out of the subset:\n", groups, compiled,
              instances);
  for (const std::string& name : out_of_subset) std::printf("  %s\n", name.c_str());
  EXPECT_GT(compiled, groups / 2);
}

}  // namespace
}  // namespace pocket
