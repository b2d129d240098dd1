// libFuzzer target for the tokenizers. The first input byte picks a mode:
//   0: the rest is text for Qwen3's byte-level BPE and Mistral's
//      SentencePiece-style BPE; valid UTF-8 must round-trip
//      (byte-level: decode(encode(x)) == x with each stretch between the
//      added tokens NFC-normalized on its own, as Hugging Face's
//      tokenizers split those out before normalizing, so ">" and a
//      combining mark across a token's edge stay apart; SPM-BPE without
//      special tokens: decode(encode(x)) == x unless x contains a literal
//      "▁");
//   1: the rest is a tokenizer blob for FromBlob;
//   2: the same behind a valid header, so mutations reach the body parsers.
// The reference tokenizers are read once from $POCKET_TEST_DATA (default
// ./tests/data, i.e. run from the repository root).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace {

std::string ReadAsset(const char* relative) {
  const char* dir = std::getenv("POCKET_TEST_DATA");
  const std::string path = std::string(dir ? dir : "tests/data") + "/" + relative;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "tokenizer_fuzz: cannot read %s (set POCKET_TEST_DATA)\n", path.c_str());
    std::abort();
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::unique_ptr<pocket::Tokenizer> LoadOrDie(
    pocket::StatusOr<std::unique_ptr<pocket::Tokenizer>> t) {
  if (!t.ok()) {
    std::fprintf(stderr, "tokenizer_fuzz: %s\n", t.status().ToString().c_str());
    std::abort();
  }
  return std::move(t).value();
}

// Qwen3's tokenizer.json, read once for the tokenizer and its added tokens.
const std::string& Qwen3Json() {
  static const auto* json = new std::string(ReadAsset("qwen3-tokenizer/tokenizer.json"));
  return *json;
}

const pocket::Tokenizer& ByteLevel() {
  static auto* t = LoadOrDie(pocket::Tokenizer::FromHfJson(
                                 Qwen3Json(), ReadAsset("qwen3-tokenizer/tokenizer_config.json")))
                       .release();
  return *t;
}

// The ids of byte-level's added tokens that are matched before
// normalization ("normalized": false in tokenizer.json), special or not
// (Qwen3's <think>, <tool_call> ...), read from the file itself.
const std::set<int32_t>& ByteLevelUnnormalizedAdded() {
  static const auto* ids = [] {
    auto* set = new std::set<int32_t>;
    const auto json = nlohmann::json::parse(Qwen3Json());
    for (const auto& added : json.at("added_tokens")) {
      if (!added.value("normalized", true)) set->insert(added.at("id").get<int32_t>());
    }
    return set;
  }();
  return *ids;
}

const pocket::Tokenizer& SpmBpe() {
  static auto* t =
      LoadOrDie(pocket::Tokenizer::FromHfJson(ReadAsset("mistral-tokenizer/tokenizer.json"), ""))
          .release();
  return *t;
}

void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "tokenizer_fuzz: %s\n", what);
    std::abort();
  }
}

// NFC of text or abort.
std::string Nfc(std::string_view text) {
  auto nfc = pocket::tok::NfcNormalize(text);
  Check(nfc.ok(), "NFC of valid UTF-8 failed");
  return *nfc;
}

// What byte-level decode(encode(text)) must give: the unnormalized added
// tokens the encoder found, in order, as they are in the text, and every
// stretch between them NFC'd.
std::string ExpectedRoundTrip(const pocket::Tokenizer& t, std::string_view text,
                              const std::vector<int32_t>& ids) {
  std::string out;
  size_t at = 0;
  for (int32_t id : ids) {
    if (ByteLevelUnnormalizedAdded().count(id) == 0) continue;
    const std::string added = t.TokenText(id);
    const size_t found = text.find(added, at);
    Check(found != std::string_view::npos,
          "byte-level Encode found an added token not in the text");
    out += Nfc(text.substr(at, found - at)) + added;
    at = found + added.size();
  }
  return out + Nfc(text.substr(at));
}

void FuzzText(std::string_view text) {
  const bool valid = pocket::FindInvalidUtf8(text) < 0;
  auto ids = ByteLevel().Encode(text);
  Check(ids.ok() == valid, "byte-level Encode must fail exactly on invalid UTF-8");
  if (valid) {
    const std::string decoded = ByteLevel().Decode(*ids);
    Check(decoded == ExpectedRoundTrip(ByteLevel(), text, *ids),
          "byte-level round trip != text with the stretches between added tokens NFC'd");
    Check(Nfc(decoded) == Nfc(text), "byte-level round trip changed the text's NFC");
  }
  auto spm = SpmBpe().Encode(text, /*parse_special=*/false);
  Check(spm.ok() == valid, "SPM-BPE Encode must fail exactly on invalid UTF-8");
  // A literal "▁" in the text decodes as a space: the one documented loss.
  if (valid && text.find("\xE2\x96\x81") == std::string_view::npos) {
    Check(SpmBpe().Decode(*spm) == text, "SPM-BPE round trip != text");
  }
}

void FuzzBlob(std::string_view blob) {
  auto t = pocket::Tokenizer::FromBlob(blob);
  if (!t.ok()) return;
  auto ids = (*t)->Encode("Hello world, 你好 <|im_start|> 123\n");
  if (ids.ok()) (*t)->Decode(*ids);
  (*t)->ToBlob();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 3) {
    case 0:
      FuzzText(rest);
      break;
    case 1:
      FuzzBlob(rest);
      break;
    default: {
      // "PKTK", version 1, then the kind byte and the body from the input.
      std::string blob("PKTK\x01\x00\x00\x00", 8);
      blob.append(rest);
      FuzzBlob(blob);
      break;
    }
  }
  return 0;
}
