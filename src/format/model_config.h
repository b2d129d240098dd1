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
// NOT required, kv heads divide heads, ...) and the ranges of rope_theta,
// rms_eps and the generation defaults. Error names the field.
Status ValidateModelConfig(const ModelConfig& config);

// The generation defaults in the ranges the sampler takes (temperature >= 0,
// top_k >= 0, top_p in (0, 1], min_p in [0, 1], repeat_penalty > 0,
// 0 <= max_new_tokens <= 2^30); `where` names the file or section in the
// error, the field by its key.
Status ValidateGenerationDefaults(const GenerationDefaults& g, const char* where);

// Why an RMSNorm epsilon or a RoPE base cannot be used as the kernels take
// it (f32), or nullptr when it can: eps must be in (0, 1), theta above 1,
// both finite. The config and the graph's rms_norm / rope nodes share them.
const char* RmsEpsError(double eps);
const char* RopeThetaError(double theta);

// The decoder graph (docs/graph.md) for config.architecture, as JSON text.
StatusOr<std::string> BuildDecoderGraph(const ModelConfig& config);

}  // namespace pocket
