#include "convert/synth.h"

#include <memory>

#include "convert/source_files.h"
#include "tokenizer/tokenizer.h"
#include "util/json_util.h"

namespace pocket {
namespace {

constexpr double kWeightStddev = 0.02;

uint64_t SplitMix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

ModelConfig Qwen3Shape(int32_t layers, int32_t hidden, int32_t heads, int32_t kv_heads,
                       int32_t head_dim, int32_t ffn, int32_t vocab, int32_t context) {
  ModelConfig c;
  c.architecture = "qwen3";
  c.n_layers = layers;
  c.hidden = hidden;
  c.n_heads = heads;
  c.n_kv_heads = kv_heads;
  c.head_dim = head_dim;
  c.ffn = ffn;
  c.vocab = vocab;
  c.context = context;
  c.rope_theta = 1e6;
  c.rope_style = RopeStyle::kNeox;
  c.rms_eps = 1e-6;
  c.tied_embeddings = true;
  c.qk_norm = true;
  // Qwen3's generation_config.json defaults.
  c.generation.temperature = 0.6f;
  c.generation.top_k = 20;
  c.generation.top_p = 0.95f;
  return c;
}

bool IsNorm(const std::string& name) { return name.find("norm.weight") != std::string::npos; }

std::string DirName(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? std::string(".") : path.substr(0, slash);
}

// Provenance names files by base name so the bytes do not depend on where
// the tokenizer happens to live.
std::string BaseName(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// Qwen3 presets: the tokenizer.json trimmed to the preset's vocabulary, with
// the chat template of the tokenizer_config.json beside it when present.
Status AttachQwen3Tokenizer(const std::string& path, ModelConfig* c, std::string* blob,
                            ProvenanceBuilder* prov) {
  POCKET_ASSIGN_OR_RETURN(std::string json,
                          ReadRegularFile(path, "tokenizer.json", kMaxTextFileBytes));
  prov->AddBytes(BaseName(path), json.data(), json.size());
  std::string tc_text;
  const std::string tc_path = DirName(path) + "/tokenizer_config.json";
  if (PathExists(tc_path)) {
    POCKET_ASSIGN_OR_RETURN(tc_text,
                            ReadRegularFile(tc_path, "tokenizer_config.json", kMaxTextFileBytes));
    prov->AddBytes(BaseName(tc_path), tc_text.data(), tc_text.size());
    auto tc = ParseJson(tc_text, tc_path.c_str());
    if (!tc.ok()) return tc.status();
    if (tc->is_object()) {
      POCKET_RETURN_IF_ERROR(
          GetOptString(*tc, "chat_template", &c->chat_template, "tokenizer_config.json"));
    }
  }
  auto full = Tokenizer::FromHfJson(json, tc_text);
  if (!full.ok()) return Status(full.status().code(), path + ": " + full.status().message());
  auto tok = (*full)->Trimmed(c->vocab);
  if (!tok.ok()) return Status(tok.status().code(), path + ": " + tok.status().message());
  if ((*tok)->vocab_size() > c->vocab) {
    return Errorf(StatusCode::kInternal, "trimmed tokenizer has %d tokens, more than %d",
                  (*tok)->vocab_size(), c->vocab);
  }
  c->chat_template_kind = "qwen3";
  c->add_bos = false;
  c->bos_id = (*tok)->TokenId("<|endoftext|>");
  c->eos_id = (*tok)->TokenId("<|im_end|>");
  for (int32_t id : {c->eos_id, c->bos_id}) {
    if (id >= 0) c->stop_token_ids.push_back(id);
  }
  *blob = (*tok)->ToBlob();
  return Status::Ok();
}

Status AttachSentencePiece(const std::string& path, ModelConfig* c, std::string* blob,
                           ProvenanceBuilder* prov) {
  POCKET_ASSIGN_OR_RETURN(std::string proto,
                          ReadRegularFile(path, "SentencePiece .model file", kMaxTextFileBytes));
  prov->AddBytes(BaseName(path), proto.data(), proto.size());
  auto tok = Tokenizer::FromSentencePiece(proto);
  if (!tok.ok()) return Status(tok.status().code(), path + ": " + tok.status().message());
  if ((*tok)->vocab_size() > c->vocab) {
    return Errorf(StatusCode::kInvalidArgument,
                  "tokenizer '%s' has %d tokens; the preset's vocabulary is %d", path.c_str(),
                  (*tok)->vocab_size(), c->vocab);
  }
  c->bos_id = 1;
  c->eos_id = 2;
  c->add_bos = true;
  c->stop_token_ids = {2};
  c->chat_template_kind = "none";
  *blob = (*tok)->ToBlob();
  return Status::Ok();
}

}  // namespace

float SynthValue(uint64_t seed, uint64_t stream, uint64_t i, double stddev) {
  const uint64_t r = SplitMix64(SplitMix64(seed ^ SplitMix64(stream)) + i);
  // Four 16-bit uniforms u_k = (x_k + 0.5) / 65536; their sum minus 2 has
  // variance 1/3. The integer D = 65536 * (sum - 2) is exact, so only the
  // final multiply rounds.
  const int64_t sum = static_cast<int64_t>(r & 0xFFFF) + static_cast<int64_t>((r >> 16) & 0xFFFF) +
                      static_cast<int64_t>((r >> 32) & 0xFFFF) + static_cast<int64_t>(r >> 48);
  const int64_t d = sum + 2 - 131072;
  constexpr double kSqrt3Over65536 = 1.7320508075688772 / 65536.0;
  return static_cast<float>(static_cast<double>(d) * (kSqrt3Over65536 * stddev));
}

const std::vector<std::string>& SynthPresets() {
  static const std::vector<std::string> kPresets = {"pocket-0.3b", "tiny-qwen3", "tiny-llama"};
  return kPresets;
}

bool SynthPresetUsesSentencePiece(const std::string& preset) { return preset == "tiny-llama"; }

StatusOr<ModelConfig> SynthPresetConfig(const std::string& preset) {
  ModelConfig c;
  if (preset == "pocket-0.3b") {
    c = Qwen3Shape(28, 896, 14, 2, 64, 2560, 65536, 40960);
  } else if (preset == "tiny-qwen3") {
    c = Qwen3Shape(2, 64, 4, 2, 16, 128, 1024, 2048);
  } else if (preset == "tiny-llama") {
    c.architecture = "llama";
    c.n_layers = 2;
    c.hidden = 64;
    c.n_heads = 4;
    c.n_kv_heads = 2;
    c.head_dim = 16;
    c.ffn = 172;
    c.vocab = 512;
    c.context = 512;
    c.rope_theta = 10000.0;
    c.rope_style = RopeStyle::kNeox;
    c.rms_eps = 1e-5;
    c.tied_embeddings = true;
  } else {
    std::string names;
    for (const std::string& p : SynthPresets()) names += (names.empty() ? "" : ", ") + p;
    return Errorf(StatusCode::kInvalidArgument, "unknown synth preset '%s'; presets: %s",
                  preset.c_str(), names.c_str());
  }
  c.license = "synthetic weights (no license restrictions)";
  return c;
}

StatusOr<SourceModel> SynthesizeModel(const SynthOptions& options) {
  SourceModel model;
  POCKET_ASSIGN_OR_RETURN(model.config, SynthPresetConfig(options.preset));
  if (options.tokenizer_path.empty()) {
    return Errorf(StatusCode::kInvalidArgument, "synth preset '%s' needs a tokenizer path",
                  options.preset.c_str());
  }
  ProvenanceBuilder prov("synth:" + options.preset + " seed " + std::to_string(options.seed));
  if (SynthPresetUsesSentencePiece(options.preset)) {
    POCKET_RETURN_IF_ERROR(
        AttachSentencePiece(options.tokenizer_path, &model.config, &model.tokenizer_blob, &prov));
  } else {
    POCKET_RETURN_IF_ERROR(
        AttachQwen3Tokenizer(options.tokenizer_path, &model.config, &model.tokenizer_blob, &prov));
  }
  model.config.provenance_json = prov.ToJson();
  const std::vector<TensorSpec> specs = ExpectedTensors(model.config);
  const uint64_t seed = options.seed;
  for (size_t index = 0; index < specs.size(); ++index) {
    const TensorSpec& spec = specs[index];
    uint64_t n = 1;
    for (uint64_t d : spec.shape) n *= d;
    const bool norm = IsNorm(spec.name);
    model.tensors.push_back(
        {spec.name, spec.shape, [seed, index, n, norm]() -> StatusOr<std::vector<float>> {
           std::vector<float> v(n);
           for (uint64_t i = 0; i < n; ++i) {
             v[i] = SynthValue(seed, index, i, kWeightStddev) + (norm ? 1.0f : 0.0f);
           }
           return v;
         }});
  }
  return model;
}

}  // namespace pocket
