// Loading a model's tokenizer section: a 64K-token trimmed Qwen3 BPE from
// its blob, as every model load does (a few ms; a loader that parsed JSON
// or went quadratic would show here).
#include <benchmark/benchmark.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "tokenizer/tokenizer.h"

namespace {

std::string ReadData(const char* relative) {
  std::ifstream in(std::string(POCKET_TEST_DATA) + "/" + relative, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void TokenizerFromBlob(benchmark::State& state) {
  auto full = pocket::Tokenizer::FromHfJson(ReadData("qwen3-tokenizer/tokenizer.json"),
                                            ReadData("qwen3-tokenizer/tokenizer_config.json"));
  if (!full.ok()) return state.SkipWithError(full.status().ToString().c_str());
  auto trimmed = (*full)->Trimmed(static_cast<int32_t>(state.range(0)));
  if (!trimmed.ok()) return state.SkipWithError(trimmed.status().ToString().c_str());
  const std::string blob = (*trimmed)->ToBlob();
  for (auto _ : state) {
    auto t = pocket::Tokenizer::FromBlob(blob);
    if (!t.ok()) return state.SkipWithError(t.status().ToString().c_str());
    benchmark::DoNotOptimize(t->get());
  }
  state.counters["blob_bytes"] = static_cast<double>(blob.size());
}
BENCHMARK(TokenizerFromBlob)->ArgNames({"vocab"})->Arg(65536)->Unit(benchmark::kMillisecond);

}  // namespace
