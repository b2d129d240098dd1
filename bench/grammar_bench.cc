// Token masks for a nested-object JSON schema over Qwen3's vocabulary
// (151,669 tokens) and the 65,536-token trim pocket-0.3b uses.
//
// GrammarMaskDecode replays a document the schema accepts, tokenized by the
// tokenizer, as a decode would: per token, the mask applied to a logits row
// and the token accepted. Each iteration starts a fresh TokenMasker (empty
// caches), so the time includes building the automaton's states and the
// masks of states met the first time. Counters: per-token median and p99
// over all iterations, and the mean, in the thread's CPU time (a shared
// machine's other processes preempt the thread for milliseconds, which
// would otherwise be the p99).
//
// GrammarMaskWalk times the trie walk alone (TokenTrie::Fill) at each
// state along the document, with the automaton warm: what a state whose
// mask is not cached costs.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <ctime>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "grammar/json_schema.h"
#include "grammar/token_mask.h"
#include "tokenizer/tokenizer.h"

namespace {

using pocket::grammar::TokenMasker;
using pocket::grammar::TokenTrie;

const char kSchema[] = R"({"type": "object", "properties": {
  "name": {"type": "string", "maxLength": 40},
  "age": {"type": "integer", "minimum": 0, "maximum": 150},
  "email": {"type": "string", "format": "email"},
  "address": {"type": "object", "properties": {
      "street": {"type": "string"}, "city": {"type": "string"},
      "zip": {"type": "string", "pattern": "^[0-9]{5}$"}},
    "required": ["street", "city"], "additionalProperties": false},
  "phones": {"type": "array", "maxItems": 4, "items": {"type": "object", "properties": {
      "kind": {"enum": ["home", "work", "mobile"]}, "number": {"type": "string"}},
    "required": ["kind", "number"], "additionalProperties": false}},
  "tags": {"type": "array", "items": {"type": "string"}},
  "active": {"type": "boolean"}},
  "required": ["name", "age", "address"], "additionalProperties": false})";

const char kDocument[] =
    R"({"active": true, "address": {"city": "Zürich", "street": "Bahnhofstrasse 1", "zip": "80)"
    R"(010"}, "age": 42, "email": "ada.l@example.org", "name": "Ada Lovelace", "phones": [{"kin)"
    R"(d": "work", "number": "+41 44 000 00 00"}, {"kind": "mobile", "number": "079 123 45 67"}])"
    R"(, "tags": ["math", "engines", "poetry", "日本語"]})";

double ThreadMicros() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e6 + static_cast<double>(t.tv_nsec) / 1e3;
}

std::string ReadData(const char* relative) {
  std::ifstream in(std::string(POCKET_TEST_DATA) + "/" + relative, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Setup {
  std::unique_ptr<pocket::Tokenizer> tokenizer;
  std::shared_ptr<const TokenTrie> trie;
  std::shared_ptr<const pocket::grammar::Grammar> grammar;
  std::vector<int32_t> ids;
  std::string error;
};

const Setup& GetSetup(int32_t vocab) {
  static Setup* setups[2] = {nullptr, nullptr};
  Setup*& s = setups[vocab == 65536 ? 1 : 0];
  if (s != nullptr) return *s;
  s = new Setup;
  auto full = pocket::Tokenizer::FromHfJson(ReadData("qwen3-tokenizer/tokenizer.json"),
                                            ReadData("qwen3-tokenizer/tokenizer_config.json"));
  if (!full.ok()) {
    s->error = full.status().ToString();
    return *s;
  }
  s->tokenizer = std::move(*full);
  if (vocab == 65536) {
    auto trimmed = s->tokenizer->Trimmed(vocab);
    if (!trimmed.ok()) {
      s->error = trimmed.status().ToString();
      return *s;
    }
    s->tokenizer = std::move(*trimmed);
  }
  std::vector<std::string> bytes;
  std::vector<bool> usable;
  for (int32_t id = 0; id < s->tokenizer->vocab_size(); ++id) {
    bytes.push_back(s->tokenizer->TokenBytes(id));
    usable.push_back(!s->tokenizer->IsSpecial(id));
  }
  s->trie = std::make_shared<TokenTrie>(bytes, usable);
  auto g = pocket::grammar::CompileJsonSchema(kSchema);
  if (!g.ok()) {
    s->error = g.status().ToString();
    return *s;
  }
  s->grammar = *g;
  auto ids = s->tokenizer->Encode(kDocument, false);
  if (!ids.ok()) {
    s->error = ids.status().ToString();
    return *s;
  }
  s->ids = *ids;
  return *s;
}

void GrammarMaskDecode(benchmark::State& state) {
  const Setup& s = GetSetup(static_cast<int32_t>(state.range(0)));
  if (!s.error.empty()) return state.SkipWithError(s.error.c_str());
  const int32_t vocab = s.tokenizer->vocab_size();
  std::vector<float> logits(static_cast<size_t>(vocab), 0.0f);
  std::vector<double> times;
  for (auto _ : state) {
    TokenMasker masker(s.grammar, s.trie, {s.tokenizer->eos_id()});
    for (int32_t id : s.ids) {
      const double t0 = ThreadMicros();
      masker.Apply(logits.data(), vocab);
      const bool ok = masker.Accept(id).ok();
      times.push_back(ThreadMicros() - t0);
      if (!ok) return state.SkipWithError("the document's token was masked");
    }
    benchmark::DoNotOptimize(logits.data());
    state.counters["states"] = masker.matcher().num_states();
  }
  std::sort(times.begin(), times.end());
  double total = 0;
  for (double t : times) total += t;
  state.counters["tokens"] = static_cast<double>(s.ids.size());
  state.counters["median_us"] = times[times.size() / 2];
  state.counters["p99_us"] = times[times.size() * 99 / 100];
  state.counters["mean_us"] = total / static_cast<double>(times.size());
}
BENCHMARK(GrammarMaskDecode)
    ->ArgNames({"vocab"})
    ->Arg(151669)
    ->Arg(65536)
    ->Unit(benchmark::kMillisecond);

void GrammarMaskWalk(benchmark::State& state) {
  const Setup& s = GetSetup(static_cast<int32_t>(state.range(0)));
  if (!s.error.empty()) return state.SkipWithError(s.error.c_str());
  TokenMasker masker(s.grammar, s.trie, {s.tokenizer->eos_id()});
  std::vector<int32_t> states;
  for (int32_t id : s.ids) {
    states.push_back(masker.matcher().state());
    if (!masker.Accept(id).ok()) return state.SkipWithError("the document's token was masked");
  }
  std::vector<uint64_t> mask;
  for (auto _ : state) {
    for (int32_t st : states) s.trie->Fill(&masker.matcher(), st, &mask);
    benchmark::DoNotOptimize(mask.data());
  }
  state.counters["per_mask"] = benchmark::Counter(
      static_cast<double>(states.size()),
      benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  state.counters["trie_nodes"] = static_cast<double>(s.trie->num_nodes());
}
BENCHMARK(GrammarMaskWalk)
    ->ArgNames({"vocab"})
    ->Arg(151669)
    ->Arg(65536)
    ->Unit(benchmark::kMillisecond);

}  // namespace

// Applying a cached mask to a logits row, at the start of the document
// (only `{` and tokens starting with it allowed) and inside a string
// (nearly everything allowed): the floor under every masked token.
void GrammarMaskApply(benchmark::State& state) {
  const Setup& s = GetSetup(static_cast<int32_t>(state.range(0)));
  if (!s.error.empty()) return state.SkipWithError(s.error.c_str());
  TokenMasker masker(s.grammar, s.trie, {s.tokenizer->eos_id()});
  if (state.range(1) == 1 &&
      !masker.matcher().AcceptBytes(R"({"active": true, "address": {"city": "Z)")) {
    return state.SkipWithError("the prefix was rejected");
  }
  const int32_t vocab = s.tokenizer->vocab_size();
  std::vector<float> logits(static_cast<size_t>(vocab), 0.0f);
  masker.Mask();
  for (auto _ : state) {
    masker.Apply(logits.data(), vocab);
    benchmark::DoNotOptimize(logits.data());
  }
}
BENCHMARK(GrammarMaskApply)
    ->ArgNames({"vocab", "in_string"})
    ->Args({151669, 0})
    ->Args({151669, 1})
    ->Args({65536, 0})
    ->Args({65536, 1})
    ->Unit(benchmark::kMicrosecond);
