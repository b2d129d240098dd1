// Synthetic models: the exact shapes of a preset with deterministic random
// weights, for benchmarks and tests without downloading a checkpoint. The
// generator uses integer arithmetic and one IEEE multiply per value, so the
// same seed gives the same bytes on every platform.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "convert/converter.h"

namespace pocket {

// "pocket-0.3b", "tiny-qwen3", "tiny-llama".
const std::vector<std::string>& SynthPresets();

// The preset's config (without tokenizer-derived ids); an error lists the
// presets when `preset` is unknown.
StatusOr<ModelConfig> SynthPresetConfig(const std::string& preset);

// Whether the preset takes a sentencepiece .model (tiny-llama) rather than
// a Hugging Face tokenizer.json (the Qwen3 presets).
bool SynthPresetUsesSentencePiece(const std::string& preset);

struct SynthOptions {
  std::string preset;
  uint64_t seed = 0;
  // Qwen3 presets: Qwen3's tokenizer.json (its tokenizer_config.json next to
  // it supplies the chat template); tiny-llama: a sentencepiece .model.
  std::string tokenizer_path;
};

StatusOr<SourceModel> SynthesizeModel(const SynthOptions& options);

// Value i of the stream for (seed, stream): approximately N(0, 1) (a sum
// of four uniforms, so bounded by +-2*sqrt(3)), times `stddev`.
float SynthValue(uint64_t seed, uint64_t stream, uint64_t i, double stddev);

}  // namespace pocket
