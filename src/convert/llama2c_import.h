// llama2.c legacy checkpoints: a header of 7 int32 (dim, hidden_dim,
// n_layers, n_heads, n_kv_heads, vocab_size — negative when an unshared
// classifier follows —, seq_len), then fp32 tensors in run.c's order. The
// tokenizer comes separately as a sentencepiece .model file.
#pragma once

#include <cstdint>
#include <string>

#include "convert/converter.h"

namespace pocket {

struct Llama2cHeader {
  int32_t dim = 0, hidden_dim = 0, n_layers = 0, n_heads = 0, n_kv_heads = 0, vocab_size = 0,
          seq_len = 0;
};

// Validates the header and returns the file size it implies (bytes).
StatusOr<uint64_t> Llama2cFileSize(const Llama2cHeader& h);

StatusOr<SourceModel> ImportLlama2c(const std::string& path, const std::string& tokenizer_path);

}  // namespace pocket
