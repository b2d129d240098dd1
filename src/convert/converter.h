// The converter's public API, shared by `pocket convert`, `pocket synth` and
// tests: importers turn a source (Hugging Face directory, llama2.c
// checkpoint, synthetic preset) into a SourceModel — config, tokenizer and
// lazily loaded f32 tensors under their .pocket names — and WritePocketModel
// checks it against the graph's tensor list, quantizes and writes the file.
// The library never prints; progress goes to the caller's callback.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "format/dtype.h"
#include "format/model_config.h"
#include "util/status.h"

namespace pocket {

constexpr const char* kConverterVersion = "pocket 0.1.0";

// Storage types. 2-D weight matrices use `weights`; token_embd / output use
// `embeddings`; norms and biases are always f32. `group` is the q4 group
// (q8 always uses 32). A matrix whose columns the group does not divide
// falls back to f16 (ConvertStats::fallbacks lists it).
struct QuantOptions {
  DType weights = DType::kQ4;
  DType embeddings = DType::kQ4;
  uint32_t group = 64;
  // Layout of the q4 and q8 matrices where format/dtype.h's IsValidLayout
  // allows it (rows16: rows % 16 == 0); the others stay row-major. rows16 is
  // what the CPU int8 kernels read.
  TensorLayout layout = TensorLayout::kRows16;
  // Store each tensor in the type the source holds it in where that is a
  // .pocket dtype (SourceTensor::native_dtype: GGUF's F32, F16, BF16, Q8_0,
  // Q4_0, Q4_1), bit for bit; `weights` and `embeddings` apply to the rest
  // (ConvertModel makes those q8 for a GGUF). `pocket convert` sets it when
  // no type is named; ConvertModel ignores it for other sources.
  bool keep_source_types = false;
};
Status ValidateQuantOptions(const QuantOptions& q);
// From the CLI flags: `quant` and `embed_quant` are dtype names ("" for
// the default: q4, and embeddings like the weights), `group` 0 for the
// default 64. Errors name the flag.
StatusOr<QuantOptions> ParseQuantOptions(const std::string& quant, const std::string& embed_quant,
                                         int64_t group);
// The --layout flag: "rows16" or "row_major" ("" keeps the default).
Status ParseLayoutOption(const std::string& layout, QuantOptions* q);
// e.g. "q4 g64, embeddings q8 g32" (stored as the config's `quant`).
std::string QuantSummary(const QuantOptions& q);

// Storage type and group chosen for one tensor of the given shape.
struct TensorStorage {
  DType dtype = DType::kF32;
  uint32_t group = 0;
  TensorLayout layout = TensorLayout::kRowMajor;
  bool fell_back = false;  // the requested type did not fit the shape
};
TensorStorage ChooseStorage(const std::string& name, const std::vector<uint64_t>& shape,
                            const QuantOptions& q);

struct TensorSpec {
  std::string name;
  std::vector<uint64_t> shape;
};
// Every tensor the decoder graph of `config` reads, in file order
// (docs/graph.md): token_embd, the layers, output_norm, output if untied.
std::vector<TensorSpec> ExpectedTensors(const ModelConfig& config);

// Bytes the tensor data section takes for `config` under `q` (each tensor
// padded to kTensorAlignment), and its parameter count.
StatusOr<uint64_t> TensorDataBytes(const ModelConfig& config, const QuantOptions& q);
uint64_t ParameterCount(const ModelConfig& config);

// One source tensor; `load` yields its row-major f32 values when the writer
// gets to it, so at most one source tensor is expanded at a time.
struct SourceTensor {
  std::string name;  // .pocket (GGUF-style) name
  std::vector<uint64_t> shape;
  std::function<StatusOr<std::vector<float>>()> load;
  // The source's name for the tensor's type ("Q4_1", "BF16"); "" where the
  // source has one type for everything (the summary then lists no types).
  std::string source_type;
  // Set where the source holds the tensor exactly as a .pocket dtype:
  // `load_native` yields its bytes in that dtype's planar layout
  // (format/dtype.h), whose dequantized values equal `load`'s bit for bit.
  // Matrices are stored from these bytes under keep_source_types, or when
  // the requested type and group are these.
  DType native_dtype = DType::kF32;
  uint32_t native_group = 0;
  std::function<StatusOr<std::vector<uint8_t>>()> load_native;
};

struct SourceModel {
  ModelConfig config;
  std::string tokenizer_blob;  // Tokenizer::ToBlob()
  std::vector<SourceTensor> tensors;
};

// How many layers `tensors` hold: the number of distinct N among their
// blk.N. names. The config's n_layers is checked against it before anything
// is sized from the config, so what is sized stays proportional to the
// tensors given.
uint64_t LayersHeld(const std::vector<SourceTensor>& tensors);

// Called once per tensor before it is converted (index counts from 0).
using ProgressFn = std::function<void(size_t index, size_t total, const std::string& name)>;

// A tensor stored in another type than the source's quantized one, and
// what that cost: the largest and the RMS difference between the stored and
// the source's (dequantized) values, relative to the largest magnitude and
// to the RMS of the source's values.
struct RequantizedTensor {
  std::string name;
  std::string from, to;  // "Q6_K", "q8 g32"
  double max_rel_error = 0.0;
  double rms_rel_error = 0.0;
};

struct ConvertStats {
  size_t tensors = 0;
  uint64_t parameters = 0;
  uint64_t file_bytes = 0;
  std::vector<std::string> fallbacks;  // tensors stored as f16 instead
  // Tensors per "SOURCE_TYPE -> stored type" (sources with per-tensor types).
  std::map<std::string, size_t> conversions;
  std::vector<RequantizedTensor> requantized;
};

// Validates the config, checks the tensors against ExpectedTensors (missing,
// unexpected and mis-shaped tensors are errors naming them), quantizes and
// writes `path` (atomically: nothing is left behind on failure).
StatusOr<ConvertStats> WritePocketModel(const SourceModel& model, const QuantOptions& q,
                                        const std::string& path, const ProgressFn& progress);

// "311 tensors, 302.9M parameters, 170.6 MB, 12.3 s" (+ the f16 fallbacks),
// then a line per source type conversion and per requantized tensor.
std::string FormatConvertSummary(const ConvertStats& stats, double seconds);

struct ConvertOptions {
  QuantOptions quant;
  std::string tokenizer_path;  // llama2.c: the sentencepiece .model (required)
  ProgressFn progress;
};

// `src` a directory: a Hugging Face model; a file starting with "GGUF": a
// GGUF model; another file: a llama2.c checkpoint.
StatusOr<ConvertStats> ConvertModel(const std::string& src, const std::string& out_path,
                                    const ConvertOptions& options);

}  // namespace pocket
