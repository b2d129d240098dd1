#include "format/model_config.h"

#include <cfloat>
#include <cmath>
#include <cstdint>

#include "util/json_util.h"

namespace pocket {
namespace {

constexpr const char* kWhere = "model config";

const char* RopeStyleName(RopeStyle s) {
  return s == RopeStyle::kInterleaved ? "interleaved" : "neox";
}

// Reads a required int member that must fit int32.
Status GetInt32(const Json& obj, const char* key, int32_t* out, const char* where) {
  int64_t v = 0;
  POCKET_RETURN_IF_ERROR(GetInt(obj, key, &v, where));
  if (v < INT32_MIN || v > INT32_MAX) {
    return Errorf(StatusCode::kInvalidArgument, "%s: '%s' = %lld does not fit in 32 bits", where,
                  key, static_cast<long long>(v));
  }
  *out = static_cast<int32_t>(v);
  return Status::Ok();
}

Status GetOptInt32(const Json& obj, const char* key, int32_t* out, const char* where) {
  if (!FindMember(obj, key) || FindMember(obj, key)->is_null()) return Status::Ok();
  return GetInt32(obj, key, out, where);
}

Status GetOptFloat(const Json& obj, const char* key, float* out, const char* where) {
  double v = *out;
  POCKET_RETURN_IF_ERROR(GetOptDouble(obj, key, &v, where));
  if (!(std::fabs(v) <= FLT_MAX)) {
    return Errorf(StatusCode::kInvalidArgument, "%s: '%s' = %g is not a finite 32-bit float", where,
                  key, v);
  }
  *out = static_cast<float>(v);
  return Status::Ok();
}

Status ParseGeneration(const Json& obj, GenerationDefaults* g) {
  const char* where = "model config 'generation'";
  if (!obj.is_object()) {
    return Errorf(StatusCode::kInvalidArgument, "%s must be an object", where);
  }
  POCKET_RETURN_IF_ERROR(GetOptFloat(obj, "temperature", &g->temperature, where));
  POCKET_RETURN_IF_ERROR(GetOptInt32(obj, "top_k", &g->top_k, where));
  POCKET_RETURN_IF_ERROR(GetOptFloat(obj, "top_p", &g->top_p, where));
  POCKET_RETURN_IF_ERROR(GetOptFloat(obj, "min_p", &g->min_p, where));
  POCKET_RETURN_IF_ERROR(GetOptFloat(obj, "repeat_penalty", &g->repeat_penalty, where));
  return GetOptInt32(obj, "max_new_tokens", &g->max_new_tokens, where);
}

Status ParseStopTokens(const Json& obj, std::vector<int32_t>* out) {
  if (!FindMember(obj, "stop_token_ids")) return Status::Ok();
  std::vector<int64_t> ids;
  POCKET_RETURN_IF_ERROR(GetIntArray(obj, "stop_token_ids", &ids, kWhere));
  out->clear();
  for (int64_t id : ids) {
    if (id < 0 || id > INT32_MAX) {
      return Errorf(StatusCode::kInvalidArgument,
                    "model config: 'stop_token_ids' holds %lld, not a token id",
                    static_cast<long long>(id));
    }
    out->push_back(static_cast<int32_t>(id));
  }
  return Status::Ok();
}

Json GraphNode(const char* op, std::vector<std::string> in, const char* out) {
  Json node;
  node["op"] = op;
  node["in"] = std::move(in);
  node["out"] = out;
  return node;
}

Json LinearNode(const std::string& input, const std::string& tensor, const char* out, bool bias) {
  std::vector<std::string> in = {input, "blk.{L}." + tensor + ".weight"};
  if (bias) in.push_back("blk.{L}." + tensor + ".bias");
  return GraphNode("linear", std::move(in), out);
}

Json HeadNormNode(const ModelConfig& c, const char* value) {
  Json node = GraphNode("head_rms_norm",
                        {value, std::string("blk.{L}.attn_") + value + "_norm.weight"}, value);
  node["eps"] = c.rms_eps;
  node["head_dim"] = c.head_dim;
  return node;
}

Json RopeNode(const ModelConfig& c, const char* value) {
  Json node = GraphNode("rope", {value}, value);
  node["head_dim"] = c.head_dim;
  node["theta"] = c.rope_theta;
  node["style"] = RopeStyleName(c.rope_style);
  return node;
}

Json RmsNormNode(const ModelConfig& c, const std::string& weight) {
  Json node = GraphNode("rms_norm", {"x", weight}, "h");
  node["eps"] = c.rms_eps;
  return node;
}

}  // namespace

StatusOr<ModelConfig> ParseModelConfig(const std::string& json) {
  POCKET_ASSIGN_OR_RETURN(Json j, ParseJson(json, "config section"));
  if (!j.is_object()) {
    return Errorf(StatusCode::kInvalidArgument, "model config must be a JSON object");
  }
  ModelConfig c;
  POCKET_RETURN_IF_ERROR(GetString(j, "architecture", &c.architecture, kWhere));
  struct IntField {
    const char* key;
    int32_t* field;
  };
  for (const IntField& f : {IntField{"n_layers", &c.n_layers}, IntField{"hidden", &c.hidden},
                            IntField{"n_heads", &c.n_heads}, IntField{"n_kv_heads", &c.n_kv_heads},
                            IntField{"head_dim", &c.head_dim}, IntField{"ffn", &c.ffn},
                            IntField{"vocab", &c.vocab}, IntField{"context", &c.context}}) {
    POCKET_RETURN_IF_ERROR(GetInt32(j, f.key, f.field, kWhere));
  }
  POCKET_RETURN_IF_ERROR(GetDouble(j, "rope_theta", &c.rope_theta, kWhere));
  std::string style;
  POCKET_RETURN_IF_ERROR(GetString(j, "rope_style", &style, kWhere));
  if (style == "neox") {
    c.rope_style = RopeStyle::kNeox;
  } else if (style == "interleaved") {
    c.rope_style = RopeStyle::kInterleaved;
  } else {
    return Errorf(StatusCode::kInvalidArgument,
                  "model config: 'rope_style' is '%s'; expected \"neox\" or \"interleaved\"",
                  style.c_str());
  }
  POCKET_RETURN_IF_ERROR(GetDouble(j, "rms_eps", &c.rms_eps, kWhere));
  POCKET_RETURN_IF_ERROR(GetBool(j, "tied_embeddings", &c.tied_embeddings, kWhere));
  POCKET_RETURN_IF_ERROR(GetBool(j, "qk_norm", &c.qk_norm, kWhere));
  POCKET_RETURN_IF_ERROR(GetBool(j, "qkv_bias", &c.qkv_bias, kWhere));

  POCKET_RETURN_IF_ERROR(GetOptInt32(j, "bos_id", &c.bos_id, kWhere));
  POCKET_RETURN_IF_ERROR(GetOptInt32(j, "eos_id", &c.eos_id, kWhere));
  POCKET_RETURN_IF_ERROR(GetOptBool(j, "add_bos", &c.add_bos, kWhere));
  POCKET_RETURN_IF_ERROR(ParseStopTokens(j, &c.stop_token_ids));
  if (const Json* g = FindMember(j, "generation"); g && !g->is_null()) {
    POCKET_RETURN_IF_ERROR(ParseGeneration(*g, &c.generation));
  }
  POCKET_RETURN_IF_ERROR(GetOptString(j, "chat_template", &c.chat_template, kWhere));
  POCKET_RETURN_IF_ERROR(GetOptString(j, "chat_template_kind", &c.chat_template_kind, kWhere));
  POCKET_RETURN_IF_ERROR(GetOptString(j, "quant", &c.quant_summary, kWhere));
  if (const Json* p = FindMember(j, "provenance"); p && !p->is_null()) {
    if (!p->is_object()) {
      return Errorf(StatusCode::kInvalidArgument, "model config: 'provenance' must be an object");
    }
    c.provenance_json = DumpJson(*p);
  }
  POCKET_RETURN_IF_ERROR(GetOptString(j, "license", &c.license, kWhere));
  return c;
}

std::string ModelConfigToJson(const ModelConfig& c) {
  Json j;
  j["architecture"] = c.architecture;
  j["n_layers"] = c.n_layers;
  j["hidden"] = c.hidden;
  j["n_heads"] = c.n_heads;
  j["n_kv_heads"] = c.n_kv_heads;
  j["head_dim"] = c.head_dim;
  j["ffn"] = c.ffn;
  j["vocab"] = c.vocab;
  j["context"] = c.context;
  j["rope_theta"] = c.rope_theta;
  j["rope_style"] = RopeStyleName(c.rope_style);
  j["rms_eps"] = c.rms_eps;
  j["tied_embeddings"] = c.tied_embeddings;
  j["qk_norm"] = c.qk_norm;
  j["qkv_bias"] = c.qkv_bias;
  j["bos_id"] = c.bos_id;
  j["eos_id"] = c.eos_id;
  j["add_bos"] = c.add_bos;
  j["stop_token_ids"] = c.stop_token_ids;
  const GenerationDefaults& g = c.generation;
  j["generation"] = {{"temperature", g.temperature},
                     {"top_k", g.top_k},
                     {"top_p", g.top_p},
                     {"min_p", g.min_p},
                     {"repeat_penalty", g.repeat_penalty},
                     {"max_new_tokens", g.max_new_tokens}};
  j["chat_template"] = c.chat_template;
  j["chat_template_kind"] = c.chat_template_kind;
  j["quant"] = c.quant_summary;
  // Provenance is kept verbatim; text that is not a JSON object is dropped
  // (ValidateModelConfig reports it before a file is written).
  if (!c.provenance_json.empty()) {
    auto p = ParseJson(c.provenance_json, "provenance");
    if (p.ok() && p->is_object()) j["provenance"] = *p;
  }
  j["license"] = c.license;
  return DumpJson(j, 2);
}

Status ValidateModelConfig(const ModelConfig& c) {
  if (c.architecture != "qwen3" && c.architecture != "qwen2" && c.architecture != "llama") {
    return Errorf(StatusCode::kUnsupported,
                  "model config: architecture '%s' is not supported (qwen3, qwen2, llama)",
                  c.architecture.c_str());
  }
  struct Positive {
    const char* key;
    int32_t value;
  };
  for (const Positive& p : {Positive{"n_layers", c.n_layers}, Positive{"hidden", c.hidden},
                            Positive{"n_heads", c.n_heads}, Positive{"n_kv_heads", c.n_kv_heads},
                            Positive{"head_dim", c.head_dim}, Positive{"ffn", c.ffn},
                            Positive{"vocab", c.vocab}, Positive{"context", c.context}}) {
    if (p.value <= 0) {
      return Errorf(StatusCode::kInvalidArgument, "model config: '%s' = %d must be positive", p.key,
                    p.value);
    }
  }
  if (c.n_heads % c.n_kv_heads != 0) {
    return Errorf(StatusCode::kInvalidArgument,
                  "model config: 'n_kv_heads' = %d does not divide 'n_heads' = %d", c.n_kv_heads,
                  c.n_heads);
  }
  if (c.head_dim % 2 != 0) {
    return Errorf(StatusCode::kInvalidArgument,
                  "model config: 'head_dim' = %d must be even for rotary embeddings", c.head_dim);
  }
  if (const char* why = RopeThetaError(c.rope_theta)) {
    return Errorf(StatusCode::kInvalidArgument, "model config: 'rope_theta' = %g %s", c.rope_theta,
                  why);
  }
  if (const char* why = RmsEpsError(c.rms_eps)) {
    return Errorf(StatusCode::kInvalidArgument, "model config: 'rms_eps' = %g %s", c.rms_eps, why);
  }
  POCKET_RETURN_IF_ERROR(ValidateGenerationDefaults(c.generation, "model config 'generation'"));
  for (int32_t id : {c.bos_id, c.eos_id}) {
    if (id < -1 || id >= c.vocab) {
      return Errorf(StatusCode::kInvalidArgument,
                    "model config: bos/eos id %d is outside the vocabulary of %d", id, c.vocab);
    }
  }
  for (int32_t id : c.stop_token_ids) {
    if (id < 0 || id >= c.vocab) {
      return Errorf(StatusCode::kInvalidArgument,
                    "model config: 'stop_token_ids' holds %d, outside the vocabulary of %d", id,
                    c.vocab);
    }
  }
  if (c.add_bos && c.bos_id < 0) {
    return Errorf(StatusCode::kInvalidArgument,
                  "model config: 'add_bos' is set but 'bos_id' is -1");
  }
  if (!c.provenance_json.empty()) {
    auto p = ParseJson(c.provenance_json, "model config 'provenance'");
    if (!p.ok()) return p.status();
    if (!p->is_object()) {
      return Errorf(StatusCode::kInvalidArgument, "model config: 'provenance' must be an object");
    }
  }
  return Status::Ok();
}

Status ValidateGenerationDefaults(const GenerationDefaults& g, const char* where) {
  const auto bad = [where](const char* key, double value, const char* rule) {
    return Errorf(StatusCode::kInvalidArgument, "%s: '%s' = %g %s", where, key, value, rule);
  };
  if (!(g.temperature >= 0.0f) || !std::isfinite(g.temperature)) {
    return bad("temperature", g.temperature, "must be finite and >= 0 (0 = greedy)");
  }
  if (g.top_k < 0) return bad("top_k", g.top_k, "must be >= 0 (0 = off)");
  if (!(g.top_p > 0.0f && g.top_p <= 1.0f)) {
    return bad("top_p", g.top_p, "must be in (0, 1] (1 = off)");
  }
  if (!(g.min_p >= 0.0f && g.min_p <= 1.0f)) {
    return bad("min_p", g.min_p, "must be in [0, 1] (0 = off)");
  }
  if (!(g.repeat_penalty > 0.0f) || !std::isfinite(g.repeat_penalty)) {
    return bad("repeat_penalty", g.repeat_penalty, "must be finite and > 0 (1 = off)");
  }
  if (g.max_new_tokens < 0 || g.max_new_tokens > (1 << 30)) {
    return bad("max_new_tokens", g.max_new_tokens, "must be in [0, 2^30]");
  }
  return Status::Ok();
}

const char* RmsEpsError(double eps) {
  // Below 1 the cast is defined; an eps that rounds to 0 as f32 divides by 0.
  if (!(eps > 0.0 && eps < 1.0) || static_cast<float>(eps) == 0.0f) {
    return "must be in (0, 1) and non-zero as an f32 (typically 1e-5 or 1e-6)";
  }
  return nullptr;
}

const char* RopeThetaError(double theta) {
  if (!(theta > 1.0 && theta <= FLT_MAX)) {
    return "must be above 1 and finite as an f32 (typically 10000 or 1000000)";
  }
  return nullptr;
}

StatusOr<std::string> BuildDecoderGraph(const ModelConfig& c) {
  POCKET_RETURN_IF_ERROR(ValidateModelConfig(c));
  const bool bias = c.qkv_bias;
  Json layer = Json::array();
  layer.push_back(RmsNormNode(c, "blk.{L}.attn_norm.weight"));
  layer.push_back(LinearNode("h", "attn_q", "q", bias));
  layer.push_back(LinearNode("h", "attn_k", "k", bias));
  layer.push_back(LinearNode("h", "attn_v", "v", bias));
  if (c.qk_norm) {
    layer.push_back(HeadNormNode(c, "q"));
    layer.push_back(HeadNormNode(c, "k"));
  }
  layer.push_back(RopeNode(c, "q"));
  layer.push_back(RopeNode(c, "k"));
  Json attention = GraphNode("attention", {"q", "k", "v"}, "a");
  attention["layer"] = "{L}";
  attention["n_heads"] = c.n_heads;
  attention["n_kv_heads"] = c.n_kv_heads;
  attention["head_dim"] = c.head_dim;
  layer.push_back(std::move(attention));
  layer.push_back(LinearNode("a", "attn_output", "o", false));
  layer.push_back(GraphNode("add", {"x", "o"}, "x"));
  layer.push_back(RmsNormNode(c, "blk.{L}.ffn_norm.weight"));
  layer.push_back(LinearNode("h", "ffn_gate", "g", false));
  layer.push_back(LinearNode("h", "ffn_up", "u", false));
  layer.push_back(GraphNode("swiglu", {"g", "u"}, "g"));
  layer.push_back(LinearNode("g", "ffn_down", "d", false));
  layer.push_back(GraphNode("add", {"x", "d"}, "x"));

  Json nodes = Json::array();
  nodes.push_back(GraphNode("embed", {"tokens", "token_embd.weight"}, "x"));
  Json repeat;
  repeat["repeat"] = c.n_layers;
  repeat["var"] = "L";
  repeat["nodes"] = std::move(layer);
  nodes.push_back(std::move(repeat));
  nodes.push_back(RmsNormNode(c, "output_norm.weight"));
  nodes.push_back(GraphNode(
      "linear", {"h", c.tied_embeddings ? "token_embd.weight" : "output.weight"}, "logits"));
  Json graph;
  graph["version"] = 1;
  graph["nodes"] = std::move(nodes);
  return DumpJson(graph);
}

}  // namespace pocket
