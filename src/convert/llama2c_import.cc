#include "convert/llama2c_import.h"

#include <cstring>
#include <memory>

#include "convert/source_files.h"
#include "tokenizer/tokenizer.h"
#include "util/mapped_file.h"

namespace pocket {
namespace {

constexpr uint64_t kHeaderBytes = 7 * sizeof(int32_t);

// The tensors of a checkpoint in file order, as (pocket name or "" for the
// skipped freq_cis tables, shape); layer-stacked tensors are split per layer.
struct Chunk {
  std::string name;
  std::vector<uint64_t> shape;
};

std::vector<Chunk> FileLayout(const Llama2cHeader& h) {
  const uint64_t dim = h.dim, hidden = h.hidden_dim, L = h.n_layers;
  const uint64_t vocab = h.vocab_size < 0 ? -static_cast<int64_t>(h.vocab_size) : h.vocab_size;
  const uint64_t head_size = dim / h.n_heads, kv_dim = head_size * h.n_kv_heads;
  std::vector<Chunk> out;
  out.push_back({"token_embd.weight", {vocab, dim}});
  auto per_layer = [&](const char* name, std::vector<uint64_t> shape) {
    for (uint64_t l = 0; l < L; ++l) {
      out.push_back({"blk." + std::to_string(l) + "." + name, shape});
    }
  };
  per_layer("attn_norm.weight", {dim});
  per_layer("attn_q.weight", {dim, dim});
  per_layer("attn_k.weight", {kv_dim, dim});
  per_layer("attn_v.weight", {kv_dim, dim});
  per_layer("attn_output.weight", {dim, dim});
  per_layer("ffn_norm.weight", {dim});
  per_layer("ffn_gate.weight", {hidden, dim});  // w1
  per_layer("ffn_down.weight", {dim, hidden});  // w2
  per_layer("ffn_up.weight", {hidden, dim});    // w3
  out.push_back({"output_norm.weight", {dim}});
  out.push_back({"", {static_cast<uint64_t>(h.seq_len), head_size / 2}});  // freq_cis_real
  out.push_back({"", {static_cast<uint64_t>(h.seq_len), head_size / 2}});  // freq_cis_imag
  if (h.vocab_size < 0) out.push_back({"output.weight", {vocab, dim}});
  return out;
}

uint64_t Elements(const std::vector<uint64_t>& shape) {
  uint64_t n = 1;
  for (uint64_t d : shape) n *= d;
  return n;
}

}  // namespace

StatusOr<uint64_t> Llama2cFileSize(const Llama2cHeader& h) {
  struct Field {
    const char* name;
    int32_t value;
  };
  for (const Field& f : {Field{"dim", h.dim}, Field{"hidden_dim", h.hidden_dim},
                         Field{"n_layers", h.n_layers}, Field{"n_heads", h.n_heads},
                         Field{"n_kv_heads", h.n_kv_heads}, Field{"seq_len", h.seq_len}}) {
    // Generous caps keep every size product far from overflow.
    if (f.value <= 0 || f.value > (1 << 20)) {
      return Errorf(StatusCode::kCorruptFile, "llama2.c header: %s = %d is not a plausible size",
                    f.name, f.value);
    }
  }
  if (h.vocab_size == 0 || h.vocab_size < -(1 << 24) || h.vocab_size > (1 << 24)) {
    return Errorf(StatusCode::kCorruptFile, "llama2.c header: vocab_size = %d is not plausible",
                  h.vocab_size);
  }
  if (h.dim % h.n_heads != 0 || h.n_heads % h.n_kv_heads != 0 || (h.dim / h.n_heads) % 2 != 0) {
    return Errorf(StatusCode::kCorruptFile,
                  "llama2.c header: dim %d, n_heads %d, n_kv_heads %d do not divide evenly", h.dim,
                  h.n_heads, h.n_kv_heads);
  }
  uint64_t floats = 0;
  for (const Chunk& c : FileLayout(h)) floats += Elements(c.shape);
  return kHeaderBytes + floats * sizeof(float);
}

StatusOr<SourceModel> ImportLlama2c(const std::string& path, const std::string& tokenizer_path) {
  if (tokenizer_path.empty()) {
    return Errorf(StatusCode::kInvalidArgument,
                  "'%s' is a llama2.c checkpoint, which carries no tokenizer; pass "
                  "tokenizer_path, its sentencepiece .model file",
                  path.c_str());
  }
  POCKET_ASSIGN_OR_RETURN(std::unique_ptr<MappedFile> mapped,
                          MappedFile::Open(path, "llama2.c checkpoint (.bin file)"));
  std::shared_ptr<MappedFile> file(std::move(mapped));
  if (file->size() < kHeaderBytes) {
    return Errorf(StatusCode::kCorruptFile,
                  "'%s': %zu bytes is too short for a llama2.c header (28 bytes)", path.c_str(),
                  file->size());
  }
  Llama2cHeader h;
  std::memcpy(&h, file->data(), kHeaderBytes);
  auto expected = Llama2cFileSize(h);
  if (!expected.ok())
    return Status(expected.status().code(), "'" + path + "': " + expected.status().message());
  if (*expected != file->size()) {
    return Errorf(StatusCode::kCorruptFile,
                  "'%s' has %zu bytes but its llama2.c header (dim %d, hidden %d, %d layers, "
                  "%d/%d heads, vocab %d, seq_len %d) implies %llu",
                  path.c_str(), file->size(), h.dim, h.hidden_dim, h.n_layers, h.n_heads,
                  h.n_kv_heads, h.vocab_size, h.seq_len,
                  static_cast<unsigned long long>(*expected));
  }

  POCKET_ASSIGN_OR_RETURN(std::string proto,
                          ReadRegularFile(tokenizer_path, "SentencePiece .model file (tokenizer_path)",
                                          kMaxTextFileBytes));
  auto tok = Tokenizer::FromSentencePiece(proto);
  if (!tok.ok()) {
    return Status(tok.status().code(), tokenizer_path + ": " + tok.status().message());
  }
  const int32_t vocab = h.vocab_size < 0 ? -h.vocab_size : h.vocab_size;
  if ((*tok)->vocab_size() > vocab) {
    return Errorf(StatusCode::kInvalidArgument,
                  "tokenizer '%s' has %d tokens but the checkpoint's vocab_size is %d",
                  tokenizer_path.c_str(), (*tok)->vocab_size(), vocab);
  }

  SourceModel model;
  ModelConfig& c = model.config;
  c.architecture = "llama";
  c.n_layers = h.n_layers;
  c.hidden = h.dim;
  c.n_heads = h.n_heads;
  c.n_kv_heads = h.n_kv_heads;
  c.head_dim = h.dim / h.n_heads;
  c.ffn = h.hidden_dim;
  c.vocab = vocab;
  c.context = h.seq_len;
  c.rope_theta = 10000.0;
  c.rope_style = RopeStyle::kInterleaved;  // run.c rotates pairs (2i, 2i+1)
  c.rms_eps = 1e-5;
  c.tied_embeddings = h.vocab_size > 0;
  c.bos_id = 1;
  c.eos_id = 2;
  c.add_bos = true;
  c.stop_token_ids = {1};  // run.c ends a story when the model predicts BOS
  c.chat_template_kind = "none";
  c.license = "unknown";
  ProvenanceBuilder prov(path);
  prov.AddBytes(path, file->data(), file->size());
  prov.AddBytes(tokenizer_path, proto.data(), proto.size());
  c.provenance_json = prov.ToJson();
  model.tokenizer_blob = (*tok)->ToBlob();

  uint64_t offset = kHeaderBytes;
  for (const Chunk& chunk : FileLayout(h)) {
    const uint64_t n = Elements(chunk.shape);
    if (!chunk.name.empty()) {
      const uint8_t* p = file->data() + offset;
      model.tensors.push_back(
          {chunk.name, chunk.shape, [file, p, n]() -> StatusOr<std::vector<float>> {
             std::vector<float> v(n);
             std::memcpy(v.data(), p, n * sizeof(float));
             return v;
           }});
    }
    offset += n * sizeof(float);
  }
  return model;
}

}  // namespace pocket
