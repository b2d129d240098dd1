// SentencePiece .model tokenizers, run by libsentencepiece (which does the
// normalization, the unigram/BPE search and the decoding); Pocket keeps the
// serialized model proto as the blob.
#pragma once

#include <memory>
#include <string_view>

#include "tokenizer/tokenizer_impl.h"

namespace pocket::tok {

// Unsupported when built without POCKET_WITH_SENTENCEPIECE.
StatusOr<std::unique_ptr<TokenizerImpl>> LoadSentencePiece(std::string_view model_proto);

// The blob body after the common header: u64 size + proto bytes.
StatusOr<std::unique_ptr<TokenizerImpl>> SentencePieceFromBlob(std::string_view blob);

}  // namespace pocket::tok
