#include "convert/hf_import.h"

#include <algorithm>
#include <limits>
#include <map>
#include <memory>

#include "convert/safetensors.h"
#include "convert/source_files.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"
#include "util/json_util.h"

namespace pocket {
namespace {

struct ArchInfo {
  const char* hf_name;
  const char* architecture;
  bool qk_norm;
  bool qkv_bias;
};
constexpr ArchInfo kArchitectures[] = {
    {"Qwen3ForCausalLM", "qwen3", true, false},
    {"Qwen2ForCausalLM", "qwen2", false, true},
    {"LlamaForCausalLM", "llama", false, false},
};

// Per-layer suffixes: HF "model.layers.N.<hf>" -> "blk.N.<pocket>".
constexpr std::pair<const char*, const char*> kLayerNames[] = {
    {"input_layernorm.weight", "attn_norm.weight"},
    {"self_attn.q_proj.weight", "attn_q.weight"},
    {"self_attn.k_proj.weight", "attn_k.weight"},
    {"self_attn.v_proj.weight", "attn_v.weight"},
    {"self_attn.q_proj.bias", "attn_q.bias"},
    {"self_attn.k_proj.bias", "attn_k.bias"},
    {"self_attn.v_proj.bias", "attn_v.bias"},
    {"self_attn.q_norm.weight", "attn_q_norm.weight"},
    {"self_attn.k_norm.weight", "attn_k_norm.weight"},
    {"self_attn.o_proj.weight", "attn_output.weight"},
    {"post_attention_layernorm.weight", "ffn_norm.weight"},
    {"mlp.gate_proj.weight", "ffn_gate.weight"},
    {"mlp.up_proj.weight", "ffn_up.weight"},
    {"mlp.down_proj.weight", "ffn_down.weight"},
};

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

Status ReadConfigInt(const Json& cfg, const char* key, int32_t* out, bool required) {
  int64_t v = *out;
  POCKET_RETURN_IF_ERROR(required ? GetInt(cfg, key, &v, "config.json")
                                  : GetOptInt(cfg, key, &v, "config.json"));
  if (v < INT32_MIN || v > INT32_MAX) {
    return Errorf(StatusCode::kInvalidArgument, "config.json: '%s' = %lld is out of range", key,
                  static_cast<long long>(v));
  }
  *out = static_cast<int32_t>(v);
  return Status::Ok();
}

// A token id field that may be an int or a list of ints (eos_token_id).
Status ReadIdList(const Json& obj, const char* key, const char* where, std::vector<int32_t>* out) {
  const Json* v = FindMember(obj, key);
  if (!v || v->is_null()) return Status::Ok();
  std::vector<int64_t> ids;
  if (v->is_number_integer()) {
    ids.push_back(v->get<int64_t>());
  } else {
    POCKET_RETURN_IF_ERROR(GetIntArray(obj, key, &ids, where));
  }
  for (int64_t id : ids) {
    if (id < 0 || id > INT32_MAX) {
      return Errorf(StatusCode::kInvalidArgument, "%s: '%s' holds %lld, not a token id", where, key,
                    static_cast<long long>(id));
    }
    out->push_back(static_cast<int32_t>(id));
  }
  return Status::Ok();
}

Status ParseArchitecture(const Json& cfg, ModelConfig* c) {
  const Json* archs = FindMember(cfg, "architectures");
  std::string name;
  if (archs && archs->is_array() && !archs->empty() && (*archs)[0].is_string()) {
    name = (*archs)[0].get<std::string>();
  }
  for (const ArchInfo& a : kArchitectures) {
    if (name == a.hf_name) {
      c->architecture = a.architecture;
      c->qk_norm = a.qk_norm;
      c->qkv_bias = a.qkv_bias;
      return Status::Ok();
    }
  }
  std::string supported;
  for (const ArchInfo& a : kArchitectures)
    supported += std::string(supported.empty() ? "" : ", ") + a.hf_name;
  return Errorf(StatusCode::kUnsupported,
                "config.json: architecture '%s' is not supported; supported: %s",
                name.empty() ? "(none given)" : name.c_str(), supported.c_str());
}

Status Unsupported(const char* key, const Json& value, const char* why) {
  return Errorf(StatusCode::kUnsupported, "config.json: '%s' = %s is not supported: %s", key,
                DumpJson(value).c_str(), why);
}

// The config.json keys that change what the model computes, beyond the
// sizes ParseHfConfig reads: any value Pocket's decoder graph does not
// implement is refused by name rather than converted into a different model.
Status RefuseUnimplemented(const Json& cfg, const ModelConfig& c) {
  const auto given = [&cfg](const char* key) {
    const Json* v = FindMember(cfg, key);
    return v != nullptr && !v->is_null() ? v : nullptr;
  };
  if (const Json* act = given("hidden_act")) {
    if (!act->is_string() || (*act != "silu" && *act != "swish")) {
      return Unsupported("hidden_act", *act, "the feed-forward is SwiGLU (silu)");
    }
  }
  if (const Json* rs = given("rope_scaling")) {
    const Json* type = rs->is_object() ? FindMember(*rs, "rope_type") : nullptr;
    if (type == nullptr && rs->is_object()) type = FindMember(*rs, "type");
    if (type == nullptr || *type != "default") {
      return Unsupported("rope_scaling", *rs, "only plain RoPE is implemented");
    }
  }
  if (const Json* f = given("partial_rotary_factor")) {
    if (!f->is_number() || f->get<double>() != 1.0) {
      return Unsupported("partial_rotary_factor", *f, "RoPE rotates the whole head");
    }
  }
  // Qwen2 always has q/k/v biases (its attention_bias is not read by
  // transformers); Llama and Qwen3 add biases to all four projections.
  if (const Json* bias = given("attention_bias"); bias && !c.qkv_bias && *bias != false) {
    return Unsupported("attention_bias", *bias, "this architecture's graph has no biases");
  }
  if (const Json* bias = given("mlp_bias"); bias && *bias != false) {
    return Unsupported("mlp_bias", *bias, "the feed-forward has no biases");
  }
  // transformers slides the window over layers max_window_layers and up.
  if (const Json* slide = given("use_sliding_window"); slide && *slide != false) {
    const Json* window = given("sliding_window");
    const Json* full = given("max_window_layers");
    if (window != nullptr &&
        !(full != nullptr && full->is_number_integer() && full->get<int64_t>() >= c.n_layers)) {
      return Unsupported("use_sliding_window", *slide,
                         "attention is over every cached position (no sliding window)");
    }
  }
  if (const Json* types = given("layer_types")) {
    if (!types->is_array()) return Unsupported("layer_types", *types, "expected a list");
    for (const Json& t : *types) {
      if (t != "full_attention") {
        return Unsupported("layer_types", t, "every layer has full attention");
      }
    }
  }
  if (const Json* q = given("quantization_config")) {
    return Unsupported("quantization_config", *q,
                       "convert the unquantized checkpoint (quant=q4 or quant=q8 quantizes it)");
  }
  return Status::Ok();
}

Status ParseHfConfig(const Json& cfg, ModelConfig* c) {
  if (!cfg.is_object()) {
    return Errorf(StatusCode::kInvalidArgument, "config.json is not a JSON object");
  }
  POCKET_RETURN_IF_ERROR(ParseArchitecture(cfg, c));
  POCKET_RETURN_IF_ERROR(ReadConfigInt(cfg, "hidden_size", &c->hidden, true));
  POCKET_RETURN_IF_ERROR(ReadConfigInt(cfg, "num_hidden_layers", &c->n_layers, true));
  POCKET_RETURN_IF_ERROR(ReadConfigInt(cfg, "num_attention_heads", &c->n_heads, true));
  c->n_kv_heads = c->n_heads;
  POCKET_RETURN_IF_ERROR(ReadConfigInt(cfg, "num_key_value_heads", &c->n_kv_heads, false));
  if (c->n_heads <= 0) {
    return Errorf(StatusCode::kInvalidArgument,
                  "config.json: num_attention_heads must be positive");
  }
  c->head_dim = c->hidden / c->n_heads;
  POCKET_RETURN_IF_ERROR(ReadConfigInt(cfg, "head_dim", &c->head_dim, false));
  POCKET_RETURN_IF_ERROR(ReadConfigInt(cfg, "intermediate_size", &c->ffn, true));
  POCKET_RETURN_IF_ERROR(ReadConfigInt(cfg, "vocab_size", &c->vocab, true));
  POCKET_RETURN_IF_ERROR(ReadConfigInt(cfg, "max_position_embeddings", &c->context, true));
  c->rope_theta = 10000.0;
  POCKET_RETURN_IF_ERROR(GetOptDouble(cfg, "rope_theta", &c->rope_theta, "config.json"));
  c->rms_eps = 1e-6;
  POCKET_RETURN_IF_ERROR(GetOptDouble(cfg, "rms_norm_eps", &c->rms_eps, "config.json"));
  c->tied_embeddings = false;
  POCKET_RETURN_IF_ERROR(
      GetOptBool(cfg, "tie_word_embeddings", &c->tied_embeddings, "config.json"));
  c->rope_style = RopeStyle::kNeox;  // HF rotate_half
  POCKET_RETURN_IF_ERROR(ReadConfigInt(cfg, "bos_token_id", &c->bos_id, false));
  std::vector<int32_t> eos;
  POCKET_RETURN_IF_ERROR(ReadIdList(cfg, "eos_token_id", "config.json", &eos));
  if (!eos.empty()) c->eos_id = eos[0];
  c->stop_token_ids = eos;
  std::string license;
  POCKET_RETURN_IF_ERROR(GetOptString(cfg, "license", &license, "config.json"));
  if (!license.empty()) c->license = license;
  return RefuseUnimplemented(cfg, *c);
}

// The id of a special token given as a string or an {"content": ...} object.
int32_t SpecialTokenId(const Json& obj, const char* key, const Tokenizer& tok) {
  const Json* v = FindMember(obj, key);
  if (!v) return -1;
  if (v->is_string()) return tok.TokenId(v->get<std::string>());
  if (v->is_object()) {
    const Json* content = FindMember(*v, "content");
    if (content && content->is_string()) return tok.TokenId(content->get<std::string>());
  }
  return -1;
}

// chat_template may be a string or a list of {"name", "template"}.
std::string ChatTemplateText(const Json& tc) {
  const Json* t = FindMember(tc, "chat_template");
  if (!t) return std::string();
  if (t->is_string()) return t->get<std::string>();
  if (t->is_array()) {
    for (const Json& e : *t) {
      const Json* name = e.is_object() ? FindMember(e, "name") : nullptr;
      const Json* text = e.is_object() ? FindMember(e, "template") : nullptr;
      if (name && text && name->is_string() && text->is_string() &&
          name->get<std::string>() == "default") {
        return text->get<std::string>();
      }
    }
  }
  return std::string();
}

Status ApplyTokenizerConfig(const Json& tc, const Tokenizer& tok, ModelConfig* c) {
  const char* where = "tokenizer_config.json";
  if (!tc.is_object()) return Errorf(StatusCode::kInvalidArgument, "%s is not an object", where);
  c->chat_template = ChatTemplateText(tc);
  POCKET_RETURN_IF_ERROR(GetOptBool(tc, "add_bos_token", &c->add_bos, where));
  if (c->bos_id < 0) c->bos_id = SpecialTokenId(tc, "bos_token", tok);
  if (c->eos_id < 0) c->eos_id = SpecialTokenId(tc, "eos_token", tok);
  return Status::Ok();
}

Status ApplyGenerationConfig(const Json& gc, ModelConfig* c) {
  const char* where = "generation_config.json";
  if (!gc.is_object()) return Errorf(StatusCode::kInvalidArgument, "%s is not an object", where);
  // Read wide, narrowed into range (the casts are undefined outside it), and
  // ValidateGenerationDefaults names the key of a value the sampler refuses.
  double temperature = c->generation.temperature, top_p = c->generation.top_p;
  int64_t top_k = c->generation.top_k;
  POCKET_RETURN_IF_ERROR(GetOptDouble(gc, "temperature", &temperature, where));
  POCKET_RETURN_IF_ERROR(GetOptDouble(gc, "top_p", &top_p, where));
  POCKET_RETURN_IF_ERROR(GetOptInt(gc, "top_k", &top_k, where));
  const double f32_max = std::numeric_limits<float>::max();
  c->generation.temperature = static_cast<float>(std::clamp(temperature, -f32_max, f32_max));
  c->generation.top_p = static_cast<float>(std::clamp(top_p, -f32_max, f32_max));
  c->generation.top_k = static_cast<int32_t>(std::clamp<int64_t>(top_k, INT32_MIN, INT32_MAX));
  POCKET_RETURN_IF_ERROR(ValidateGenerationDefaults(c->generation, where));
  return ReadIdList(gc, "eos_token_id", where, &c->stop_token_ids);
}

// Loads the tokenizer; records the files read in `prov`.
StatusOr<std::unique_ptr<Tokenizer>> LoadTokenizer(const std::string& dir,
                                                   const std::string& tokenizer_config,
                                                   ProvenanceBuilder* prov) {
  const std::string json_path = dir + "/tokenizer.json";
  const std::string spm_path = dir + "/tokenizer.model";
  if (PathExists(json_path)) {
    POCKET_ASSIGN_OR_RETURN(std::string text,
                            ReadRegularFile(json_path, "tokenizer.json", kMaxTextFileBytes));
    prov->AddBytes("tokenizer.json", text.data(), text.size());
    auto tok = Tokenizer::FromHfJson(text, tokenizer_config);
    if (!tok.ok()) return Status(tok.status().code(), json_path + ": " + tok.status().message());
    return std::move(tok).value();
  }
  if (PathExists(spm_path)) {
    POCKET_ASSIGN_OR_RETURN(
        std::string proto,
        ReadRegularFile(spm_path, "SentencePiece tokenizer.model", kMaxTextFileBytes));
    prov->AddBytes("tokenizer.model", proto.data(), proto.size());
    auto tok = Tokenizer::FromSentencePiece(proto);
    if (!tok.ok()) return Status(tok.status().code(), spm_path + ": " + tok.status().message());
    return std::move(tok).value();
  }
  return Errorf(StatusCode::kNotFound, "'%s' has neither tokenizer.json nor tokenizer.model",
                dir.c_str());
}

// Reads an optional JSON file; a null Json when absent.
StatusOr<Json> ReadOptionalJson(const std::string& dir, const char* name, std::string* text,
                                ProvenanceBuilder* prov) {
  const std::string path = dir + "/" + name;
  if (!PathExists(path)) return Json();
  POCKET_ASSIGN_OR_RETURN(*text, ReadRegularFile(path, "JSON file", kMaxTextFileBytes));
  prov->AddBytes(name, text->data(), text->size());
  return ParseJson(*text, path.c_str());
}

// The first non-empty line of a LICENSE file, e.g. "Apache License".
StatusOr<std::string> ReadLicense(const std::string& dir, ProvenanceBuilder* prov) {
  for (const char* name : {"LICENSE", "LICENSE.txt", "LICENSE.md"}) {
    const std::string path = dir + "/" + name;
    if (!PathExists(path)) continue;
    POCKET_ASSIGN_OR_RETURN(std::string text,
                            ReadRegularFile(path, "license file", kMaxTextFileBytes));
    prov->AddBytes(name, text.data(), text.size());
    size_t start = 0;
    while (start < text.size()) {
      size_t end = text.find('\n', start);
      if (end == std::string::npos) end = text.size();
      std::string line = text.substr(start, end - start);
      line.erase(0, line.find_first_not_of(" \t\r"));
      line.erase(line.find_last_not_of(" \t\r") + 1);
      if (!line.empty()) return line;
      start = end + 1;
    }
  }
  return std::string();
}

// `untied` is config.json's explicit "tie_word_embeddings": false.
Status MapTensors(std::shared_ptr<SafetensorsCheckpoint> ckpt, bool untied, ModelConfig* c,
                  std::vector<SourceTensor>* out) {
  std::string unknown;
  bool has_lm_head = false;
  for (const std::string& hf : ckpt->Names()) {
    if (EndsWith(hf, ".rotary_emb.inv_freq")) continue;  // derived from rope_theta
    const std::string name = MapHfTensorName(hf);
    if (name.empty()) {
      unknown += (unknown.empty() ? "" : ", ") + hf;
      continue;
    }
    if (name == "output.weight") has_lm_head = true;
  }
  if (!unknown.empty()) {
    return Errorf(StatusCode::kUnsupported, "unexpected tensors in the checkpoint: %s",
                  unknown.c_str());
  }
  // No lm_head means the output reuses the embeddings, unless config.json
  // says otherwise (transformers would then start from a random lm_head);
  // with tie_word_embeddings a stored lm_head is a duplicate and is dropped.
  if (!has_lm_head && untied) {
    return Status(StatusCode::kInvalidArgument,
                  "config.json says \"tie_word_embeddings\": false but the checkpoint has no "
                  "lm_head.weight");
  }
  if (!has_lm_head) c->tied_embeddings = true;
  for (const std::string& hf : ckpt->Names()) {
    const std::string name = MapHfTensorName(hf);
    if (name.empty() || (name == "output.weight" && c->tied_embeddings)) continue;
    const SafetensorsFile* file = nullptr;
    const SafetensorsTensor* t = ckpt->Find(hf, &file);
    out->push_back({name, t->shape, [ckpt, file, t]() { return file->ReadF32(*t); }});
  }
  return Status::Ok();
}

}  // namespace

std::string MapHfTensorName(const std::string& hf) {
  if (hf == "model.embed_tokens.weight") return "token_embd.weight";
  if (hf == "model.norm.weight") return "output_norm.weight";
  if (hf == "lm_head.weight") return "output.weight";
  const std::string prefix = "model.layers.";
  if (hf.compare(0, prefix.size(), prefix) != 0) return std::string();
  size_t pos = prefix.size();
  // A layer index of at most 6 digits, without leading zeros.
  int layer = 0;
  size_t digits = 0;
  while (pos + digits < hf.size() && hf[pos + digits] >= '0' && hf[pos + digits] <= '9') {
    layer = layer * 10 + (hf[pos + digits] - '0');
    ++digits;
  }
  if (digits == 0 || digits > 6 || (digits > 1 && hf[pos] == '0') || pos + digits >= hf.size() ||
      hf[pos + digits] != '.') {
    return std::string();
  }
  const std::string suffix = hf.substr(pos + digits + 1);
  for (const auto& [from, to] : kLayerNames) {
    if (suffix == from) return "blk." + std::to_string(layer) + "." + to;
  }
  return std::string();
}

StatusOr<SourceModel> ImportHfDirectory(const std::string& dir) {
  ProvenanceBuilder prov(dir);
  SourceModel model;
  ModelConfig& c = model.config;

  const std::string config_path = dir + "/config.json";
  if (!PathExists(config_path)) {
    return Errorf(StatusCode::kNotFound,
                  "'%s' has no config.json; is it a Hugging Face model directory?", dir.c_str());
  }
  std::string text;
  POCKET_ASSIGN_OR_RETURN(Json cfg, ReadOptionalJson(dir, "config.json", &text, &prov));
  POCKET_RETURN_IF_ERROR(ParseHfConfig(cfg, &c));

  std::string tc_text, gc_text;
  POCKET_ASSIGN_OR_RETURN(Json tc, ReadOptionalJson(dir, "tokenizer_config.json", &tc_text, &prov));
  POCKET_ASSIGN_OR_RETURN(Json gc,
                          ReadOptionalJson(dir, "generation_config.json", &gc_text, &prov));
  POCKET_ASSIGN_OR_RETURN(std::unique_ptr<Tokenizer> tok, LoadTokenizer(dir, tc_text, &prov));
  if (tok->vocab_size() > c.vocab) {
    return Errorf(StatusCode::kInvalidArgument,
                  "the tokenizer has %d tokens but config.json's vocab_size is %d",
                  tok->vocab_size(), c.vocab);
  }
  c.add_bos = tok->kind() == TokenizerKind::kSentencePiece;
  if (!tc.is_null()) POCKET_RETURN_IF_ERROR(ApplyTokenizerConfig(tc, *tok, &c));
  if (!gc.is_null()) POCKET_RETURN_IF_ERROR(ApplyGenerationConfig(gc, &c));
  if (c.bos_id < 0) c.bos_id = tok->bos_id();
  if (c.eos_id < 0) c.eos_id = tok->eos_id();
  if (c.eos_id >= 0) c.stop_token_ids.insert(c.stop_token_ids.begin(), c.eos_id);
  std::sort(c.stop_token_ids.begin(), c.stop_token_ids.end());
  c.stop_token_ids.erase(std::unique(c.stop_token_ids.begin(), c.stop_token_ids.end()),
                         c.stop_token_ids.end());
  c.chat_template_kind = c.chat_template.empty() ? "none" : DetectChatTemplateKind(c.chat_template);
  if (c.license.empty()) {
    POCKET_ASSIGN_OR_RETURN(c.license, ReadLicense(dir, &prov));
  }
  if (c.license.empty()) c.license = "unknown";
  model.tokenizer_blob = tok->ToBlob();

  POCKET_ASSIGN_OR_RETURN(std::unique_ptr<SafetensorsCheckpoint> ckpt,
                          SafetensorsCheckpoint::Open(dir));
  for (const std::string& extra : ckpt->extra_files()) {
    POCKET_RETURN_IF_ERROR(prov.AddFile(extra.substr(dir.size() + 1), extra));
  }
  for (const auto& file : ckpt->files()) {
    prov.AddBytes(file->path().substr(dir.size() + 1), file->data(), file->size());
  }
  const Json* tie = FindMember(cfg, "tie_word_embeddings");
  POCKET_RETURN_IF_ERROR(MapTensors(std::shared_ptr<SafetensorsCheckpoint>(std::move(ckpt)),
                                    tie != nullptr && *tie == false, &c, &model.tensors));
  // Everything sized from the config's layer count comes after this.
  const uint64_t held = LayersHeld(model.tensors);
  if (static_cast<uint64_t>(c.n_layers) > held) {
    return Errorf(StatusCode::kInvalidArgument,
                  "config.json: num_hidden_layers = %d but the checkpoint holds tensors of %llu "
                  "layers (model.layers.N); the config does not describe these weights",
                  c.n_layers, static_cast<unsigned long long>(held));
  }
  c.provenance_json = prov.ToJson();
  return model;
}

}  // namespace pocket
