// GGUF models (llama.cpp's format) of the llama, qwen2 and qwen3
// architectures: the config from `<arch>.*` metadata, the tokenizer and
// chat template from `tokenizer.*`, and the tensors, which already carry
// .pocket's names. F32, F16, BF16, Q8_0, Q4_0 and Q4_1 tensors also offer
// their bytes in the matching .pocket dtype (SourceTensor::load_native), so
// they convert bit for bit; Q5_0, Q5_1 and Q2_K to Q6_K are dequantized
// to f32 and requantized; every other type is refused by name
// (docs/convert.md).
#pragma once

#include <memory>
#include <string>

#include "convert/converter.h"
#include "convert/gguf_reader.h"

namespace pocket {

StatusOr<SourceModel> ImportGguf(const std::string& path);
// The same from a parsed file; `source` names it in the provenance.
StatusOr<SourceModel> ImportGgufFile(std::shared_ptr<const GgufFile> file,
                                     const std::string& source);

// Converts the GGUF at `path` into a new temporary .pocket file in $TMPDIR
// (else /tmp), each tensor in its own type where .pocket has it and the
// others as q8 (ConvertModel's default for GGUF), and returns its path. For
// loading a GGUF directly: the caller loads the file and removes it (a
// loaded model maps its file, which stays readable once unlinked).
StatusOr<std::string> ConvertGgufToTemporaryFile(const std::string& path);

// Row-major f32 values of a tensor, as ggml dequantizes them; Unsupported
// naming the type for the types Pocket does not read.
StatusOr<std::vector<float>> DequantizeGgufTensor(const GgufFile& file, const GgufTensor& t);

}  // namespace pocket
