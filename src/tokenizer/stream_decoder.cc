// StreamDecoder: token-by-token decoding that only ever hands out whole
// UTF-8 characters (a character split over byte tokens comes out once, when
// its last byte arrives).
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace pocket {

std::string StreamDecoder::Push(int32_t id) {
  std::string bytes = tok_->TokenBytes(id);
  if (first_ && !bytes.empty()) {
    // Decode() drops the dummy-prefix space of the first text token; match it.
    if (tok_->StripsLeadingSpace() && bytes[0] == ' ') bytes.erase(0, 1);
    first_ = false;
  }
  pending_ += bytes;
  std::string out;
  tok::DrainUtf8(&pending_, /*final=*/false, &out);
  return out;
}

std::string StreamDecoder::Flush() {
  std::string out;
  tok::DrainUtf8(&pending_, /*final=*/true, &out);
  return out;
}

void StreamDecoder::Reset() {
  pending_.clear();
  first_ = true;
}

}  // namespace pocket
