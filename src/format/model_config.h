// The `config` section: architecture hyper-parameters, generation defaults,
// chat template, quantization summary and provenance. Stored as JSON with
// exactly these key names (docs/format.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "util/status.h"

namespace pocket {

enum class RopeStyle : uint8_t {
  kNeox = 0,         // rotate halves: (x[i], x[i + d/2]) — HF rotate_half
  kInterleaved = 1,  // rotate pairs: (x[2i], x[2i+1]) — GPT-J / llama2.c
};

struct GenerationDefaults {
  float temperature = 0.7f;
  int32_t top_k = 40;
  float top_p = 0.95f;
  float min_p = 0.0f;
  float repeat_penalty = 1.0f;
  int32_t max_new_tokens = 256;
};

struct ModelConfig {
  std::string architecture;  // "qwen3" | "qwen2" | "llama"
  int32_t n_layers = 0;
  int32_t hidden = 0;
  int32_t n_heads = 0;
  int32_t n_kv_heads = 0;
  int32_t head_dim = 0;
  int32_t ffn = 0;
  int32_t vocab = 0;
  int32_t context = 0;
  double rope_theta = 10000.0;
  RopeStyle rope_style = RopeStyle::kNeox;
  double rms_eps = 1e-6;
  bool tied_embeddings = false;
  bool qk_norm = false;   // Qwen3 per-head RMSNorm on q and k
  bool qkv_bias = false;  // Qwen2 biases on q, k, v

  // Tokens: add_bos prepends bos_id to prompts; generation stops on any of
  // stop_token_ids (llama2.c stories stop when the model predicts BOS).
  int32_t bos_id = -1;
  int32_t eos_id = -1;
  bool add_bos = false;
  std::vector<int32_t> stop_token_ids;

  GenerationDefaults generation;
  std::string chat_template;       // the source template text (Jinja or ours)
  std::string chat_template_kind;  // "chatml" | "qwen3" | "llama2" | "llama3" | "none" | ...

  std::string quant_summary;       // e.g. "q4 g64, embeddings q4 g64"
  std::string provenance_json;     // JSON object, stored verbatim
  std::string license;
};

StatusOr<ModelConfig> ParseModelConfig(const std::string& json);
std::string ModelConfigToJson(const ModelConfig& config);

// Checks internal consistency (positive sizes, hidden = heads * head_dim is
// NOT required, kv heads divide heads, ...). Error names the field.
Status ValidateModelConfig(const ModelConfig& config);

// The decoder graph (docs/graph.md) for config.architecture, as JSON text.
StatusOr<std::string> BuildDecoderGraph(const ModelConfig& config);

}  // namespace pocket
