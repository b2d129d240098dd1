// Hugging Face model directories (Qwen3ForCausalLM, Qwen2ForCausalLM,
// LlamaForCausalLM): config.json, safetensors weights, tokenizer.json or
// tokenizer.model, tokenizer_config.json, generation_config.json.
#pragma once

#include <string>

#include "convert/converter.h"

namespace pocket {

// The .pocket name of a Hugging Face tensor (docs/graph.md's table);
// "" when the name is not one Pocket knows.
std::string MapHfTensorName(const std::string& hf_name);

StatusOr<SourceModel> ImportHfDirectory(const std::string& dir);

}  // namespace pocket
