// Trimming a byte-level BPE vocabulary (e.g. Qwen3's 151,669 ids down to
// pocket-0.3b's 65,536): keep the byte tokens and the lowest regular ids,
// then renumber the added tokens to follow them.
#include "tokenizer/bpe_tokenizer.h"

namespace pocket::tok {

StatusOr<std::unique_ptr<TokenizerImpl>> BpeTokenizer::Trimmed(int32_t vocab_size) const {
  if (d_.kind != TokenizerKind::kByteLevelBpe) {
    return Status(StatusCode::kUnsupported, "only byte-level BPE tokenizers can be trimmed");
  }
  const int32_t n = d_.size();
  int32_t n_added = 0;
  for (int32_t i = 0; i < n; ++i) n_added += (d_.attrs[i] & kAttrAdded) ? 1 : 0;
  if (vocab_size > n || vocab_size < n_added + 256) {
    return Errorf(StatusCode::kInvalidArgument,
                  "cannot trim a %d-token vocabulary to %d: the size must be at most %d and at "
                  "least the %d added tokens plus 256 byte tokens",
                  n, vocab_size, n, n_added);
  }
  std::vector<bool> is_byte(n, false);
  for (int32_t id : byte_token_) is_byte[id] = true;
  // Regular ids kept in order: all byte tokens, then the lowest others.
  int32_t budget = vocab_size - n_added - 256;
  std::vector<int32_t> new_id(n, -1);
  BpeData t;
  t.kind = d_.kind;
  t.flags = d_.flags;
  t.prepend = d_.prepend;
  t.regex = d_.regex;
  for (int32_t i = 0; i < n; ++i) {
    if (d_.attrs[i] & kAttrAdded) continue;
    if (!is_byte[i]) {
      if (budget == 0) continue;
      --budget;
    }
    new_id[i] = t.size();
    t.AddToken(d_.token(i), d_.attrs[i]);
  }
  for (int32_t i = 0; i < n; ++i) {
    if (!(d_.attrs[i] & kAttrAdded)) continue;
    new_id[i] = t.size();
    t.AddToken(d_.token(i), d_.attrs[i]);
  }
  auto remap = [&](int32_t id) { return id < 0 ? -1 : new_id[id]; };
  t.bos = remap(d_.bos);
  t.eos = remap(d_.eos);
  t.unk = remap(d_.unk);
  for (size_t r = 0; r < d_.merges.size(); r += 3) {
    const int32_t a = new_id[d_.merges[r]], b = new_id[d_.merges[r + 1]],
                  c = new_id[d_.merges[r + 2]];
    if (a < 0 || b < 0 || c < 0) continue;
    t.merges.insert(t.merges.end(), {a, b, c});
  }
  return Create(std::move(t));
}

}  // namespace pocket::tok
