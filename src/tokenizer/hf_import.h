// Reads a Hugging Face tokenizer.json (+ tokenizer_config.json) into
// BpeData: byte-level BPE or SentencePiece-style BPE.
#pragma once

#include <string_view>

#include "tokenizer/bpe_data.h"
#include "util/status.h"

namespace pocket::tok {

Status ImportHfJson(std::string_view tokenizer_json, std::string_view config_json, BpeData* out);

}  // namespace pocket::tok
