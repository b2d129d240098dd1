// The small real model the model-level fuzzers run against: the bundled
// stories260K llama2.c checkpoint converted at f32 from $POCKET_TEST_DATA
// (tests/data) into a temporary file, once per process.
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "convert/converter.h"

namespace pocket::fuzz {

// A path under $TMPDIR, else /dev/shm, else /tmp, unique to this process.
// Session::Save flushes its file to disk, which costs nothing on tmpfs; the
// state fuzzer saves twice per input.
inline std::string TempPath(const std::string& name) {
  const char* tmp = std::getenv("TMPDIR");
  std::string dir = "/tmp";
  struct stat st;
  if (tmp != nullptr && *tmp != '\0') {
    dir = tmp;
  } else if (::stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode)) {
    dir = "/dev/shm";
  }
  return dir + "/pocket_fuzz_" + std::to_string(::getpid()) + "_" + name;
}

// Converts the model to a new file and returns its path; the caller removes
// it once opened (libFuzzer ends without running atexit handlers). Exits
// (the fuzzer cannot run) when the test data is missing.
inline std::string ConvertStoriesModel() {
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
  return out;
}

}  // namespace pocket::fuzz
