// libFuzzer target for GGUF import: the input is a GGUF file. It is parsed
// (header, metadata, tensor infos), imported as a model (config, tokenizer,
// tensor list), and every tensor is dequantized and, where it has one, read
// in its .pocket dtype; an imported tokenizer encodes a short text. Any
// input must end in a Status, never a crash, hang or sanitizer report.
// Seeds: fuzz/seeds/gguf (written by convert_tests' GgufFuzzSeeds).
#include <cstdint>
#include <memory>

#include "convert/gguf_import.h"
#include "convert/gguf_reader.h"
#include "tokenizer/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto parsed = pocket::GgufFile::FromMemory(data, size);
  if (!parsed.ok()) return 0;
  std::shared_ptr<const pocket::GgufFile> file(std::move(parsed).value());
  for (const pocket::GgufTensor& t : file->tensors()) {
    (void)pocket::DequantizeGgufTensor(*file, t);
  }
  auto model = pocket::ImportGgufFile(file, "fuzz");
  if (!model.ok()) return 0;
  for (const pocket::SourceTensor& t : model->tensors) {
    if (t.load_native) (void)t.load_native();
  }
  auto tok = pocket::Tokenizer::FromBlob(model->tokenizer_blob);
  if (tok.ok()) (void)(*tok)->Encode("Hello <s> wörld ab", /*parse_special=*/true);
  return 0;
}
