// Serialization of BpeData (layout in docs/tokenizers.md).
#include "tokenizer/blob_io.h"
#include "tokenizer/bpe_data.h"

namespace pocket::tok {

std::vector<std::string> RegexPatterns(const BpeData& d) {
  if (d.regex.empty()) return {};
  if (!(d.flags & kFlagRegexSequence)) return {d.regex};
  std::vector<std::string> out;
  size_t begin = 0;
  while (true) {
    const size_t end = d.regex.find('\0', begin);
    out.push_back(d.regex.substr(begin, end - begin));
    if (end == std::string::npos) return out;
    begin = end + 1;
  }
}

void SetRegexPatterns(const std::vector<std::string>& patterns, BpeData* d) {
  d->regex.clear();
  for (size_t i = 0; i < patterns.size(); ++i) {
    if (i > 0) d->regex.push_back('\0');
    d->regex += patterns[i];
  }
  d->flags &= ~uint32_t{kFlagRegexSequence};
  if (patterns.size() > 1) d->flags |= kFlagRegexSequence;
}

std::string SerializeBpe(const BpeData& d) {
  BlobWriter w;
  w.Header(d.kind);
  w.U32(d.flags);
  w.U8(d.prepend);
  w.U8(0);
  w.U8(0);
  w.U8(0);
  w.I32(d.bos);
  w.I32(d.eos);
  w.I32(d.unk);
  w.U32(static_cast<uint32_t>(d.attrs.size()));
  w.U32(static_cast<uint32_t>(d.pool.size()));
  for (uint32_t o : d.offsets) w.U32(o);
  for (uint8_t a : d.attrs) w.U8(a);
  w.Bytes(d.pool);
  w.U32(static_cast<uint32_t>(d.merges.size() / 3));
  for (int32_t m : d.merges) w.I32(m);
  w.U32(static_cast<uint32_t>(d.regex.size()));
  w.Bytes(d.regex);
  return w.Take();
}

Status ParseBpeBlob(std::string_view blob, BpeData* d) {
  BlobReader r(blob);
  uint8_t kind;
  POCKET_RETURN_IF_ERROR(ReadBlobHeader(&r, &kind));
  d->kind = static_cast<TokenizerKind>(kind);
  uint8_t pad[3];
  uint32_t n_tokens, pool_size, n_merges, regex_size;
  POCKET_RETURN_IF_ERROR(r.U32("flags", &d->flags));
  POCKET_RETURN_IF_ERROR(r.U8("prepend scheme", &d->prepend));
  for (uint8_t& p : pad) POCKET_RETURN_IF_ERROR(r.U8("padding", &p));
  if (pad[0] | pad[1] | pad[2]) {
    return Status(StatusCode::kCorruptFile, "tokenizer blob padding at offset 17 is not zero");
  }
  POCKET_RETURN_IF_ERROR(r.I32("bos id", &d->bos));
  POCKET_RETURN_IF_ERROR(r.I32("eos id", &d->eos));
  POCKET_RETURN_IF_ERROR(r.I32("unk id", &d->unk));
  POCKET_RETURN_IF_ERROR(r.U32("token count", &n_tokens));
  POCKET_RETURN_IF_ERROR(r.U32("string pool size", &pool_size));
  POCKET_RETURN_IF_ERROR(r.U32Array("token offsets", uint64_t{n_tokens} + 1, &d->offsets));
  std::string_view attrs, pool, regex;
  POCKET_RETURN_IF_ERROR(r.Bytes("token attributes", n_tokens, &attrs));
  d->attrs.assign(attrs.begin(), attrs.end());
  POCKET_RETURN_IF_ERROR(r.Bytes("string pool", pool_size, &pool));
  d->pool.assign(pool);
  POCKET_RETURN_IF_ERROR(r.U32("merge count", &n_merges));
  POCKET_RETURN_IF_ERROR(r.I32Array("merges", uint64_t{n_merges} * 3, &d->merges));
  POCKET_RETURN_IF_ERROR(r.U32("regex size", &regex_size));
  POCKET_RETURN_IF_ERROR(r.Bytes("regex", regex_size, &regex));
  d->regex.assign(regex);
  return r.ExpectEnd();
}

}  // namespace pocket::tok
