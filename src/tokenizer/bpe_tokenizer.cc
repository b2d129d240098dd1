#include "tokenizer/bpe_tokenizer.h"

#include <algorithm>

#include "tokenizer/bpe_merge.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/utf8.h"

namespace pocket::tok {
namespace {

constexpr std::string_view kMetaspace = "\xE2\x96\x81";  // U+2581 "▁"
constexpr size_t kMaxCachedWordBytes = 64;
constexpr size_t kMaxCacheEntries = 1 << 15;

// "<0xNN>" -> NN, else -1.
int ParseByteToken(std::string_view t) {
  if (t.size() != 6 || t.compare(0, 3, "<0x") != 0 || t[5] != '>') return -1;
  auto hex = [](char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  const int hi = hex(t[3]), lo = hex(t[4]);
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

void ReplaceAll(std::string_view s, std::string_view from, std::string_view to, std::string* out) {
  size_t i = 0;
  while (true) {
    const size_t j = s.find(from, i);
    if (j == std::string_view::npos) break;
    out->append(s, i, j - i);
    out->append(to);
    i = j + from.size();
  }
  out->append(s, i, std::string_view::npos);
}

}  // namespace

StatusOr<std::unique_ptr<TokenizerImpl>> BpeTokenizer::Create(BpeData data) {
  std::unique_ptr<BpeTokenizer> t(new BpeTokenizer(std::move(data)));
  POCKET_RETURN_IF_ERROR(t->Validate());
  POCKET_RETURN_IF_ERROR(t->BuildIndexes());
  return std::unique_ptr<TokenizerImpl>(std::move(t));
}

Status BpeTokenizer::Validate() const {
  const BpeData& d = d_;
  if (d.kind != TokenizerKind::kByteLevelBpe && d.kind != TokenizerKind::kSpmBpe) {
    return Status(StatusCode::kInternal, "BPE tokenizer built with a non-BPE kind");
  }
  if ((d.flags & ~uint32_t{kFlagAll}) != 0) {
    return Errorf(StatusCode::kCorruptFile, "tokenizer flags 0x%x have unknown bits", d.flags);
  }
  if (d.prepend > kPrependAlways) {
    return Errorf(StatusCode::kCorruptFile, "tokenizer prepend scheme %u is unknown", d.prepend);
  }
  const int64_t n = static_cast<int64_t>(d.attrs.size());
  if (n == 0 || n >= INT32_MAX) {
    return Errorf(StatusCode::kCorruptFile, "tokenizer has %lld tokens", static_cast<long long>(n));
  }
  if (d.offsets.size() != d.attrs.size() + 1 || d.offsets[0] != 0 ||
      d.offsets.back() != d.pool.size()) {
    return Status(StatusCode::kCorruptFile,
                  "tokenizer token offsets do not start at 0 and end at the string pool size");
  }
  for (int64_t i = 0; i < n; ++i) {
    if (d.offsets[i + 1] < d.offsets[i]) {
      return Errorf(StatusCode::kCorruptFile, "tokenizer token %lld has a negative length",
                    static_cast<long long>(i));
    }
    if (d.attrs[i] & ~kAttrAllBits) {
      return Errorf(StatusCode::kCorruptFile,
                    "tokenizer token %lld has unknown attribute bits 0x%x",
                    static_cast<long long>(i), d.attrs[i]);
    }
  }
  for (int32_t id : {d.bos, d.eos, d.unk}) {
    if (id < -1 || id >= n) {
      return Errorf(StatusCode::kCorruptFile, "tokenizer bos/eos/unk id %d is outside [-1, %lld)",
                    id, static_cast<long long>(n));
    }
  }
  if (d.merges.size() % 3 != 0) {
    return Status(StatusCode::kCorruptFile,
                  "tokenizer merges are not (left, right, result) triples");
  }
  for (size_t r = 0; r < d.merges.size() / 3; ++r) {
    const int32_t a = d.merges[3 * r], b = d.merges[3 * r + 1], c = d.merges[3 * r + 2];
    if (!InRange(a) || !InRange(b) || !InRange(c)) {
      return Errorf(StatusCode::kCorruptFile, "tokenizer merge %zu has an id out of range", r);
    }
    const std::string_view ta = d.token(a), tb = d.token(b), tc = d.token(c);
    if (ta.empty() || tb.empty() || tc.size() != ta.size() + tb.size() ||
        tc.compare(0, ta.size(), ta) != 0 || tc.compare(ta.size(), tb.size(), tb) != 0) {
      return Errorf(StatusCode::kCorruptFile,
                    "tokenizer merge %zu: token %d is not token %d followed by token %d", r, c, a,
                    b);
    }
  }
  if (d.kind == TokenizerKind::kSpmBpe && !d.regex.empty()) {
    return Status(StatusCode::kCorruptFile, "SentencePiece-style BPE has no pre-tokenizer regex");
  }
  if (d.flags & kFlagRegexSequence) {
    const std::vector<std::string> patterns = RegexPatterns(d);
    if (patterns.size() < 2 || std::find(patterns.begin(), patterns.end(), "") != patterns.end()) {
      return Status(StatusCode::kCorruptFile,
                    "tokenizer regex sequence has fewer than two patterns or an empty one");
    }
  }
  return Status::Ok();
}

Status BpeTokenizer::BuildIndexes() {
  const int32_t n = d_.size();
  by_text_.Build(d_.pool, d_.offsets);
  merges_.Build(d_.merges);
  std::vector<AddedToken> added;
  for (int32_t i = 0; i < n; ++i) {
    if (d_.attrs[i] & kAttrAdded) added.push_back(AddedToken{d_.token(i), i, d_.attrs[i]});
  }
  added_.Build(std::move(added));
  byte_token_.fill(-1);
  if (d_.kind == TokenizerKind::kByteLevelBpe) {
    for (int b = 0; b < 256; ++b) {
      const char c = static_cast<char>(b);
      byte_token_[b] = by_text_.Find(std::string_view(&c, 1));
      if (byte_token_[b] < 0) {
        return Errorf(StatusCode::kCorruptFile,
                      "byte-level tokenizer has no token for byte 0x%02X: every byte needs one", b);
      }
    }
  } else {
    token_byte_.assign(n, -1);
    for (int32_t i = 0; i < n; ++i) {
      const int b = ParseByteToken(d_.token(i));
      if (b < 0 || (d_.attrs[i] & kAttrAdded)) continue;
      token_byte_[i] = static_cast<int16_t>(b);
      if (byte_token_[b] < 0) byte_token_[b] = i;
    }
  }
  if (!d_.regex.empty()) {
    POCKET_ASSIGN_OR_RETURN(splitter_, RegexSplitter::Create(RegexPatterns(d_)));
  }
  return Status::Ok();
}

bool BpeTokenizer::IsSpecial(int32_t id) const {
  return InRange(id) && (d_.attrs[id] & kAttrSpecial);
}

StatusOr<std::vector<int32_t>> BpeTokenizer::Encode(std::string_view text,
                                                    bool parse_special) const {
  POCKET_RETURN_IF_ERROR(CheckUtf8(text));
  std::vector<int32_t> ids;
  std::vector<Segment> segments;
  added_.Split(text, parse_special, &segments);
  for (const Segment& s : segments) {
    if (s.id >= 0) {
      ids.push_back(s.id);
    } else {
      POCKET_RETURN_IF_ERROR(EncodeText(text.substr(s.begin, s.end - s.begin), s.begin == 0, &ids));
    }
  }
  return ids;
}

Status BpeTokenizer::EncodeText(std::string_view text, bool at_start,
                                std::vector<int32_t>* ids) const {
  std::string normalized;
  if (d_.flags & kFlagNfc) {
    POCKET_ASSIGN_OR_RETURN(normalized, NfcNormalize(text));
    text = normalized;
  }
  std::string prepared;
  if (d_.kind == TokenizerKind::kByteLevelBpe) {
    if ((d_.flags & kFlagAddPrefixSpace) && !text.empty() && text[0] != ' ') {
      prepared = " ";
      prepared.append(text);
      text = prepared;
    }
    if (!splitter_) {
      EncodeWord(text, ids);
      return Status::Ok();
    }
    std::vector<std::string_view> words;
    POCKET_RETURN_IF_ERROR(splitter_->Split(text, &words));
    for (std::string_view w : words) EncodeWord(w, ids);
    return Status::Ok();
  }
  // SentencePiece-style: spaces become "▁" and a "▁" goes in front.
  if (text.empty()) return Status::Ok();
  ReplaceAll(text, " ", kMetaspace, &prepared);
  const bool want_prefix =
      d_.prepend == kPrependAlways || (d_.prepend == kPrependFirst && at_start);
  const bool has_prefix = prepared.compare(0, kMetaspace.size(), kMetaspace) == 0;
  if (want_prefix && !(has_prefix && (d_.flags & kFlagPrependIfMissing))) {
    prepared.insert(0, kMetaspace);
  }
  std::string_view s = prepared;
  if (!(d_.flags & kFlagMetaspaceSplit)) {
    EncodeWord(s, ids);
    return Status::Ok();
  }
  size_t begin = 0;
  while (begin < s.size()) {
    size_t end = s.find(kMetaspace, begin + 1);
    if (end == std::string_view::npos) end = s.size();
    EncodeWord(s.substr(begin, end - begin), ids);
    begin = end;
  }
  return Status::Ok();
}

void BpeTokenizer::EncodeWord(std::string_view word, std::vector<int32_t>* ids) const {
  if (word.empty()) return;
  if (d_.flags & kFlagIgnoreMerges) {
    const int32_t id = by_text_.Find(word);
    if (id >= 0 && !(d_.attrs[id] & kAttrAdded)) {
      ids->push_back(id);
      return;
    }
  }
  const bool cacheable = word.size() <= kMaxCachedWordBytes;
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cache_mu_);
    auto it = cache_.find(std::string(word));
    if (it != cache_.end()) {
      ids->insert(ids->end(), it->second.begin(), it->second.end());
      return;
    }
  }
  std::vector<int32_t> symbols;
  InitialSymbols(word, &symbols);
  BpeMerge(merges_, &symbols);
  ids->insert(ids->end(), symbols.begin(), symbols.end());
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cache_mu_);
    if (cache_.size() >= kMaxCacheEntries) cache_.clear();
    cache_.emplace(std::string(word), std::move(symbols));
  }
}

void BpeTokenizer::InitialSymbols(std::string_view word, std::vector<int32_t>* symbols) const {
  if (d_.kind == TokenizerKind::kByteLevelBpe) {
    symbols->reserve(word.size());
    for (unsigned char b : word) symbols->push_back(byte_token_[b]);
    return;
  }
  // One symbol per character; a character outside the vocabulary becomes its
  // UTF-8 bytes as <0xNN> tokens (byte fallback) or the unknown token.
  bool last_unk = false;
  size_t i = 0;
  while (i < word.size()) {
    bool truncated;
    const size_t len = std::max(1, Utf8SequenceAt(word, i, &truncated));
    const std::string_view ch = word.substr(i, len);
    i += len;
    const int32_t id = by_text_.Find(ch);
    if (id >= 0 && !(d_.attrs[id] & kAttrAdded)) {
      symbols->push_back(id);
      last_unk = false;
      continue;
    }
    bool all_bytes = (d_.flags & kFlagByteFallback) != 0;
    for (unsigned char b : ch) all_bytes = all_bytes && byte_token_[b] >= 0;
    if (all_bytes) {
      for (unsigned char b : ch) symbols->push_back(byte_token_[b]);
      last_unk = false;
    } else if (d_.unk >= 0 && !(last_unk && (d_.flags & kFlagFuseUnk))) {
      symbols->push_back(d_.unk);
      last_unk = true;
    }
  }
}

std::string BpeTokenizer::TokenBytes(int32_t id) const {
  if (!InRange(id)) return std::string();
  const std::string_view t = d_.token(id);
  if (d_.kind == TokenizerKind::kByteLevelBpe || (d_.attrs[id] & kAttrAdded)) {
    return std::string(t);
  }
  if (token_byte_[id] >= 0) return std::string(1, static_cast<char>(token_byte_[id]));
  std::string out;
  ReplaceAll(t, kMetaspace, " ", &out);
  return out;
}

std::string BpeTokenizer::Decode(const std::vector<int32_t>& ids) const {
  std::string out;
  for (int32_t id : ids) out += TokenBytes(id);
  if (StripsLeadingSpace() && !out.empty() && out[0] == ' ') out.erase(0, 1);
  return out;
}

std::string BpeTokenizer::TokenText(int32_t id) const {
  if (!InRange(id)) return std::string();
  if (d_.kind == TokenizerKind::kByteLevelBpe && !(d_.attrs[id] & kAttrAdded)) {
    return ToByteLevel(d_.token(id));
  }
  return std::string(d_.token(id));
}

int32_t BpeTokenizer::TokenId(std::string_view text) const {
  if (d_.kind == TokenizerKind::kByteLevelBpe) {
    std::string bytes;
    if (FromByteLevel(text, &bytes)) {
      const int32_t id = by_text_.Find(bytes);
      if (id >= 0 && !(d_.attrs[id] & kAttrAdded)) return id;
    }
    const int32_t id = by_text_.Find(text);
    return id >= 0 && (d_.attrs[id] & kAttrAdded) ? id : -1;
  }
  return by_text_.Find(text);
}

}  // namespace pocket::tok
