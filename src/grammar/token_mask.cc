#include "grammar/token_mask.h"

#include <algorithm>
#include <limits>
#include <utility>

namespace pocket {
namespace grammar {

namespace {
constexpr uint32_t kMinTextShortcutTokens = 16;
}  // namespace

TokenTrie::TokenTrie(const std::vector<std::string>& token_bytes, const std::vector<bool>& usable)
    : vocab_(static_cast<int32_t>(token_bytes.size())) {
  offsets_.push_back(0);
  for (const std::string& t : token_bytes) {
    pool_ += t;
    offsets_.push_back(static_cast<uint32_t>(pool_.size()));
  }
  std::vector<int32_t> order;
  for (int32_t id = 0; id < vocab_; ++id) {
    // A node's depth is 16 bits: no real token comes near 65,535 bytes.
    const bool fits = !token_bytes[id].empty() && token_bytes[id].size() <= 0xFFFF;
    if (fits && (id >= static_cast<int32_t>(usable.size()) || usable[id])) {
      order.push_back(id);
    }
  }
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return token_bytes[a] != token_bytes[b] ? token_bytes[a] < token_bytes[b] : a < b;
  });
  // In sorted order a token shares with the previous one exactly the path
  // of their common prefix: close the nodes below it, open the rest.
  std::vector<uint32_t> path;  // node index per depth - 1
  const std::string* prev = nullptr;
  for (int32_t id : order) {
    const std::string& t = token_bytes[id];
    size_t common = 0;
    if (prev != nullptr) {
      const size_t n = std::min(prev->size(), t.size());
      while (common < n && (*prev)[common] == t[common]) ++common;
    }
    while (path.size() > common) {
      skip_[path.back()] = static_cast<uint32_t>(bytes_.size());
      path.pop_back();
    }
    for (size_t d = common; d < t.size(); ++d) {
      path.push_back(static_cast<uint32_t>(bytes_.size()));
      bytes_.push_back(static_cast<uint8_t>(t[d]));
      depth_.push_back(static_cast<uint16_t>(d + 1));
      skip_.push_back(0);
      id_begin_.push_back(static_cast<uint32_t>(ids_.size()));
    }
    // Tokens arrive in node order, so each node's ids are contiguous.
    ids_.push_back(id);
    max_depth_ = std::max(max_depth_, t.size());
    prev = &t;
  }
  while (!path.empty()) {
    skip_[path.back()] = static_cast<uint32_t>(bytes_.size());
    path.pop_back();
  }
  id_begin_.push_back(static_cast<uint32_t>(ids_.size()));
  // A subtree is plain when no byte in its preorder range is not: prefix
  // counts of the other bytes answer that per node.
  std::vector<uint32_t> others(bytes_.size() + 1, 0);
  for (size_t i = 0; i < bytes_.size(); ++i) {
    others[i + 1] = others[i] + !Matcher::IsPlain(bytes_[i]);
  }
  plain_.resize(bytes_.size());
  height_.resize(bytes_.size());
  for (size_t i = 0; i < bytes_.size(); ++i) {
    plain_[i] = others[skip_[i]] == others[i];
    int height = 1;
    for (size_t j = i + 1; j < skip_[i] && height < 255; ++j) {
      height = std::max(height, depth_[j] - depth_[i] + 1);
    }
    height_[i] = static_cast<uint8_t>(std::min(height, 255));
  }
  ClassifySubtrees();
  all_.assign((static_cast<size_t>(vocab_) + 63) / 64, 0);
  for (int32_t id : ids_) all_[id >> 6] |= uint64_t{1} << (id & 63);
}

namespace {

// A UTF-8 decoder over the bytes of a path: continuation bytes still
// expected, the range of the next one, characters begun, and whether the
// bytes so far are well formed and text (Matcher::TextRun).
struct Utf8Path {
  uint8_t follow = 0, lo = 0x80, hi = 0xBF;
  int chars = 0;
  int multibyte_chars = 0;  // where the last multi-byte character began
  bool valid = true, text = true;

  Utf8Path Then(uint8_t b) const {
    Utf8Path p = *this;
    if (!p.valid) return p;
    if (p.follow > 0) {
      p.valid = b >= p.lo && b <= p.hi;
      --p.follow;
      p.lo = 0x80;
      p.hi = 0xBF;
    } else {
      ++p.chars;
      if (b < 0x80) {
        p.text = p.text && Matcher::IsPlain(b);
        return p;
      }
      p.multibyte_chars = p.chars;
      if (b >= 0xC2 && b <= 0xDF) {
        p.follow = 1;
      } else if (b >= 0xE0 && b <= 0xEF) {
        p.follow = 2;
        p.lo = b == 0xE0 ? 0xA0 : 0x80;
        p.hi = b == 0xED ? 0x9F : 0xBF;
      } else if (b >= 0xF0 && b <= 0xF4) {
        p.follow = 3;
        p.lo = b == 0xF0 ? 0x90 : 0x80;
        p.hi = b == 0xF4 ? 0x8F : 0xBF;
      } else {
        p.valid = false;
      }
    }
    p.text = p.text && p.valid;
    return p;
  }
};

}  // namespace

void TokenTrie::ClassifySubtrees() {
  const size_t n = bytes_.size();
  text_chars_.resize(n);
  multibyte_chars_.resize(n);
  classes_.assign(n, 0);
  std::vector<Utf8Path> path(max_depth_ + 1);
  for (size_t i = 0; i < n; ++i) {
    bool text = true, valid = true;
    int chars = 0, multibyte_chars = 0;
    uint16_t classes = 0;
    for (size_t j = i; j < skip_[i]; ++j) {
      const size_t r = depth_[j] - depth_[i];
      path[r + 1] = (r == 0 ? Utf8Path() : path[r]).Then(bytes_[j]);
      text = text && path[r + 1].text;
      valid = valid && path[r + 1].valid;
      chars = std::max(chars, path[r + 1].chars);
      multibyte_chars = std::max(multibyte_chars, path[r + 1].multibyte_chars);
      classes |= Matcher::ByteClass(bytes_[j]);
    }
    text_chars_[i] = text ? static_cast<uint8_t>(std::min(chars, 255)) : 0;
    multibyte_chars_[i] = static_cast<uint8_t>(std::min(multibyte_chars, 255));
    classes_[i] = classes | (valid ? 0 : Matcher::kBrokenUtf8);
  }
}

void TokenTrie::Fill(Matcher* matcher, int32_t state, std::vector<uint64_t>* mask) const {
  // Where text may come next (inside a string) most tokens pass: the mask
  // then starts from every token and the walk clears the rejected ones, so
  // its cost follows the smaller side.
  const bool clearing = matcher->TakesAnyText(state, 1, 1);
  if (clearing) {
    *mask = all_;
  } else {
    mask->assign(all_.size(), 0);
  }
  uint64_t* bits = mask->data();
  const auto mark = [&](uint32_t from, uint32_t to, bool allowed) {
    if (allowed == clearing) return;
    for (uint32_t k = from; k < to; ++k) {
      const int32_t id = ids_[k];
      bits[id >> 6] ^= uint64_t{1} << (id & 63);
    }
  };
  std::vector<int32_t> states(max_depth_ + 1);
  states[0] = state;
  const size_t n = bytes_.size();
  for (size_t i = 0; i < n;) {
    const uint16_t d = depth_[i];
    const int32_t parent = states[d - 1];
    const int32_t s = matcher->Step(parent, bytes_[i]);
    if (s == Matcher::kDead) {
      mark(id_begin_[i], id_begin_[skip_[i]], false);
      i = skip_[i];
      continue;
    }
    // Testing for text costs more than walking a few tokens, and the states
    // inside a token are many: only larger subtrees try it. A state that
    // loops on the node's byte is rarer and its classes cheap to test.
    const bool large = id_begin_[skip_[i]] - id_begin_[i] >= kMinTextShortcutTokens;
    if ((plain_[i] && matcher->TakesAnyPlain(parent, height_[i])) ||
        (large && text_chars_[i] != 0 &&
         matcher->TakesAnyText(parent, text_chars_[i], multibyte_chars_[i])) ||
        (s == parent && skip_[i] > i + 1 && (classes_[i] & ~matcher->LoopClasses(parent)) == 0)) {
      mark(id_begin_[i], id_begin_[skip_[i]], true);
      i = skip_[i];
      continue;
    }
    states[d] = s;
    mark(id_begin_[i], id_begin_[i + 1], true);
    ++i;
  }
}

TokenMasker::TokenMasker(std::shared_ptr<const Grammar> grammar,
                         std::shared_ptr<const TokenTrie> trie, std::vector<int32_t> end_ids)
    : matcher_(std::move(grammar)), trie_(std::move(trie)), end_ids_(std::move(end_ids)) {}

bool TokenMasker::IsEnd(int32_t id) const {
  return std::find(end_ids_.begin(), end_ids_.end(), id) != end_ids_.end();
}

const std::vector<uint64_t>& TokenMasker::Mask() {
  const int32_t state = matcher_.state();
  auto it = masks_.find(state);
  if (it != masks_.end()) return it->second;
  std::vector<uint64_t> mask;
  trie_->Fill(&matcher_, state, &mask);
  for (int32_t id : end_ids_) {
    if (id < 0 || id >= trie_->vocab_size()) continue;
    const uint64_t bit = uint64_t{1} << (id & 63);
    if (matcher_.Accepting(state)) {
      mask[id >> 6] |= bit;
    } else {
      mask[id >> 6] &= ~bit;
    }
  }
  return masks_.emplace(state, std::move(mask)).first->second;
}

void TokenMasker::Apply(float* logits, int32_t vocab) {
  const std::vector<uint64_t>& mask = Mask();
  const float neg_inf = -std::numeric_limits<float>::infinity();
  const int32_t n = std::min(vocab, trie_->vocab_size());
  for (int32_t w = 0; w * 64 < n; ++w) {
    const uint64_t bits = mask[w];
    if (bits == ~uint64_t{0}) continue;
    const int32_t end = std::min(n, (w + 1) * 64);
    if (bits == 0) {
      // Most words outside a string forbid every token: one vector fill.
      std::fill(logits + w * 64, logits + end, neg_inf);
      continue;
    }
    // A mixed word costs the smaller of its two sides: mostly allowed (as
    // inside a JSON string), write the forbidden ones; mostly forbidden,
    // keep the allowed ones, fill the word, and put them back.
    float* row = logits + w * 64;
    const int32_t len = end - w * 64;
    const uint64_t valid = len == 64 ? ~uint64_t{0} : (uint64_t{1} << len) - 1;
    if (__builtin_popcountll(bits) >= 32) {
      for (uint64_t off = ~bits & valid; off != 0; off &= off - 1) {
        row[__builtin_ctzll(off)] = neg_inf;
      }
      continue;
    }
    float kept[64];
    int n = 0;
    for (uint64_t on = bits; on != 0; on &= on - 1) kept[n++] = row[__builtin_ctzll(on)];
    std::fill(row, row + len, neg_inf);
    n = 0;
    for (uint64_t on = bits; on != 0; on &= on - 1) row[__builtin_ctzll(on)] = kept[n++];
  }
  // Ids past the trie's vocabulary (a model whose embedding has padding
  // rows) have no bytes: never allowed.
  for (int32_t id = n; id < vocab; ++id) logits[id] = neg_inf;
}

Status TokenMasker::Accept(int32_t id) {
  if (IsEnd(id)) {
    if (matcher_.IsComplete()) return Status::Ok();
    return Errorf(StatusCode::kInvalidArgument,
                  "grammar: end-of-sequence token %d before the grammar is complete", id);
  }
  const std::vector<uint64_t>& mask = Mask();
  if (id < 0 || id >= trie_->vocab_size() || !((mask[id >> 6] >> (id & 63)) & 1) ||
      !matcher_.AcceptBytes(trie_->token(id))) {
    return Errorf(StatusCode::kInvalidArgument, "grammar: token %d is not allowed here", id);
  }
  return Status::Ok();
}

}  // namespace grammar
}  // namespace pocket
