// The small real model the model-level fuzzers run against: the bundled
// stories260K llama2.c checkpoint converted at f32 from $POCKET_TEST_DATA
// (tests/data) once per process, into a temporary file.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "convert/converter.h"

namespace pocket::fuzz {

// A path under $TMPDIR (or /tmp) unique to this process.
inline std::string TempPath(const std::string& name) {
  const char* tmp = std::getenv("TMPDIR");
  return std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/pocket_fuzz_" +
         std::to_string(::getpid()) + "_" + name;
}

// The converted model's path; exits (the fuzzer cannot run) when the test
// data is missing.
inline const std::string& StoriesModelPath() {
  static const std::string path = [] {
    const char* data = std::getenv("POCKET_TEST_DATA");
    if (data == nullptr) {
      std::fprintf(stderr, "set POCKET_TEST_DATA to the repository's tests/data\n");
      std::exit(1);
    }
    const std::string dir = std::string(data) + "/stories260K/";
    const std::string out = TempPath("stories260K-f32.pocket");
    ConvertOptions options;
    options.tokenizer_path = dir + "tok512.model";
    options.quant = *ParseQuantOptions("f32", "", 0);
    auto stats = ConvertModel(dir + "stories260K.bin", out, options);
    if (!stats.ok()) {
      std::fprintf(stderr, "cannot convert the stories260K seed model: %s\n",
                   stats.status().ToString().c_str());
      std::exit(1);
    }
    std::atexit([] { std::remove(StoriesModelPath().c_str()); });
    return out;
  }();
  return path;
}

}  // namespace pocket::fuzz
