#include "convert/gguf_pretokenizers.h"

#include "tokenizer/bpe_data.h"
#include "tokenizer/regex_split.h"

namespace pocket {
namespace {

// Where a model's Hugging Face tokenizer.json is known, its own pattern and
// normalizer (Qwen2's NFC, Tekken's cased-letter classes), which llama.cpp
// approximates; otherwise llama.cpp's own lists. tok::kGpt2SplitPattern ends
// in `|\s+`, which llama.cpp's GPT-2 list omits but its hand-written GPT-2
// splitter does.
constexpr char kQwen2Pattern[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
constexpr char kLlama3Pattern[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
constexpr char kTekkenPattern[] =
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+|"
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*|"
    "\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

struct Family {
  const char* patterns[5];  // unused slots nullptr
  uint32_t flags;
  bool add_bos;
};
// llama.cpp's "default": runs of punctuation and $+<=>^~| first, then
// GPT-2's split, then runs of digits, then each ASCII digit run cut into
// threes from the left.
constexpr Family kDefault = {
    {"[\\p{P}$+<=>^~|]+", tok::kGpt2SplitPattern, "\\p{N}+", "[0-9][0-9][0-9]"}, 0, false};
// Falcon: the same with ` among the symbols and without the \p{N}+ step.
constexpr Family kFalcon = {
    {"[\\p{P}$+<=>^~|`]+", tok::kGpt2SplitPattern, "[0-9][0-9][0-9]"}, 0, false};
constexpr Family kGpt2 = {{tok::kGpt2SplitPattern}, 0, false};
// StarCoder, SmolLM and others: every digit alone, then GPT-2's split.
constexpr Family kDigits = {{"\\p{N}", tok::kGpt2SplitPattern}, 0, false};
constexpr Family kQwen2 = {{kQwen2Pattern}, tok::kFlagNfc, false};
// Qwen2's split for models whose tokenizer.json is not known here: as
// llama.cpp runs them, without normalization.
constexpr Family kQwen2Split = {{kQwen2Pattern}, 0, false};
constexpr Family kLlama3 = {{kLlama3Pattern}, tok::kFlagIgnoreMerges, true};
// Smaug's tokenizer.json is Llama 3's; llama.cpp adds no BOS by default.
constexpr Family kSmaug = {{kLlama3Pattern}, tok::kFlagIgnoreMerges, false};
// DeepSeek Coder: newlines alone, optional space + letters, optional space
// + punctuation, CJK runs, every digit alone (its tokenizer.json's Splits
// and Digits, as llama.cpp lists them).
constexpr Family kDeepseekCoder = {
    {"[\\r\\n]", "\\s?\\p{L}+", "\\s?\\p{P}+",
     "[\\x{4E00}-\\x{9FA5}\\x{0800}-\\x{4E00}\\x{AC00}-\\x{D7FF}]+", "\\p{N}"},
    0,
    false};
constexpr Family kTekken = {{kTekkenPattern}, tok::kFlagIgnoreMerges, true};

struct Name {
  const char* name;
  const Family* family;
};
constexpr Name kNames[] = {
    {"default", &kDefault},
    {"gpt2", &kGpt2},
    {"gpt-2", &kGpt2},
    {"phi-2", &kGpt2},
    {"mpt", &kGpt2},
    {"olmo", &kGpt2},
    {"jais", &kGpt2},
    {"gigachat", &kGpt2},
    {"exaone4", &kGpt2},
    {"a.x-4.0", &kGpt2},
    {"mellum", &kGpt2},
    {"trillion", &kGpt2},
    {"granite-docling", &kGpt2},
    {"falcon", &kFalcon},
    {"starcoder", &kDigits},
    {"refact", &kDigits},
    {"command-r", &kDigits},
    {"smollm", &kDigits},
    {"codeshell", &kDigits},
    {"exaone", &kDigits},
    {"minerva-7b", &kDigits},
    {"qwen2", &kQwen2},
    {"deepseek-r1-qwen", &kQwen2},
    {"stablelm2", &kQwen2Split},
    {"megrez", &kQwen2Split},
    {"llama3", &kLlama3},
    {"llama-v3", &kLlama3},
    {"llama-bpe", &kLlama3},
    {"falcon3", &kLlama3},
    {"falcon-h1", &kLlama3},
    {"pixtral", &kLlama3},
    {"midm-2.0", &kLlama3},
    {"lfm2", &kLlama3},
    {"smaug-bpe", &kSmaug},
    {"tekken", &kTekken},
    {"deepseek-coder", &kDeepseekCoder},
};

}  // namespace

StatusOr<GgufPreTokenizer> FindGgufPreTokenizer(const std::string& name) {
  const std::string key = name.empty() ? "default" : name;
  for (const Name& n : kNames) {
    if (key != n.name) continue;
    GgufPreTokenizer p;
    for (const char* pattern : n.family->patterns) {
      if (pattern != nullptr) p.patterns.emplace_back(pattern);
    }
    p.flags = n.family->flags;
    p.add_bos = n.family->add_bos;
    return p;
  }
  std::string known;
  for (const Name& n : kNames) known += std::string(known.empty() ? "" : ", ") + n.name;
  return Errorf(StatusCode::kUnsupported,
                "GGUF tokenizer.ggml.pre '%s' is not a pre-tokenizer Pocket implements "
                "(supported: %s)",
                name.c_str(), known.c_str());
}

}  // namespace pocket
