#include "convert/converter.h"

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "convert/gguf_import.h"
#include "convert/gguf_reader.h"
#include "convert/hf_import.h"
#include "convert/llama2c_import.h"
#include "format/pocket_file.h"
#include "format/writer.h"
#include "quant/quantize.h"
#include "quant/rows16.h"
#include "util/file_io.h"

namespace pocket {
namespace {

uint32_t GroupFor(DType t, const QuantOptions& q) {
  if (t == DType::kQ4) return q.group;
  if (t == DType::kQ8) return kQ8Group;
  return 0;
}

bool IsEmbedding(const std::string& name) {
  return name == "token_embd.weight" || name == "output.weight";
}

std::string ShapeString(const std::vector<uint64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

// The tensor list must match the graph's exactly (names and shapes).
Status CheckTensorSet(const SourceModel& model) {
  // ExpectedTensors lists every layer's tensors: a layer count the tensors
  // cannot back is refused before that list is built from it.
  const uint64_t held = LayersHeld(model.tensors);
  if (static_cast<uint64_t>(model.config.n_layers) > held) {
    return Errorf(StatusCode::kInvalidArgument,
                  "the config has n_layers = %d but the tensors hold %llu layers (blk.N); the "
                  "config does not describe these weights",
                  model.config.n_layers, static_cast<unsigned long long>(held));
  }
  const std::vector<TensorSpec> expected = ExpectedTensors(model.config);
  std::set<std::string> have;
  std::string unexpected;
  for (const SourceTensor& t : model.tensors) {
    if (!have.insert(t.name).second) {
      return Errorf(StatusCode::kInvalidArgument, "tensor '%s' appears twice", t.name.c_str());
    }
  }
  std::set<std::string> wanted;
  std::string missing;
  for (const TensorSpec& s : expected) {
    wanted.insert(s.name);
    if (!have.count(s.name)) missing += (missing.empty() ? "" : ", ") + s.name;
  }
  for (const SourceTensor& t : model.tensors) {
    if (!wanted.count(t.name)) unexpected += (unexpected.empty() ? "" : ", ") + t.name;
  }
  if (!missing.empty()) {
    return Errorf(StatusCode::kInvalidArgument, "required tensors are missing: %s",
                  missing.c_str());
  }
  if (!unexpected.empty()) {
    return Errorf(StatusCode::kInvalidArgument, "tensors not used by the %s graph: %s",
                  model.config.architecture.c_str(), unexpected.c_str());
  }
  for (const TensorSpec& s : expected) {
    for (const SourceTensor& t : model.tensors) {
      if (t.name == s.name && t.shape != s.shape) {
        return Errorf(StatusCode::kInvalidArgument,
                      "tensor '%s' has shape %s; the config implies %s", t.name.c_str(),
                      ShapeString(t.shape).c_str(), ShapeString(s.shape).c_str());
      }
    }
  }
  return Status::Ok();
}

uint64_t Elements(const std::vector<uint64_t>& shape) {
  uint64_t n = 1;
  for (uint64_t d : shape) n *= d;
  return n;
}

std::string StorageName(const TensorStorage& s) {
  std::string name = DTypeName(s.dtype);
  if (IsQuantized(s.dtype)) name += " g" + std::to_string(s.group);
  return name;
}

struct StoredTensor {
  TensorStorage storage;
  std::vector<uint8_t> bytes;  // planar (row-major) layout
};

// How far `stored` (planar bytes of `s`) is from the source's `values`.
RequantizedTensor MeasureRequantization(const SourceTensor& src, const std::vector<float>& values,
                                        const StoredTensor& stored) {
  const uint64_t cols = src.shape.back(), rows = values.size() / cols;
  const TensorStorage& s = stored.storage;
  std::vector<float> row(cols);
  double max_abs = 0.0, max_err = 0.0, sum_sq = 0.0, sum_sq_err = 0.0;
  for (uint64_t r = 0; r < rows; ++r) {
    DequantizeRow(stored.bytes.data(), s.dtype, TensorLayout::kRowMajor, rows, cols, s.group, r,
                  row.data());
    for (uint64_t c = 0; c < cols; ++c) {
      const double v = values[r * cols + c], err = row[c] - v;
      max_abs = std::max(max_abs, std::fabs(v));
      max_err = std::max(max_err, std::fabs(err));
      sum_sq += v * v;
      sum_sq_err += err * err;
    }
  }
  RequantizedTensor out;
  out.name = src.name;
  out.from = src.source_type;
  out.to = StorageName(s);
  out.max_rel_error = max_abs > 0.0 ? max_err / max_abs : 0.0;
  out.rms_rel_error = sum_sq > 0.0 ? std::sqrt(sum_sq_err / sum_sq) : 0.0;
  return out;
}

// One tensor's storage and planar bytes: the source's own bytes where it
// holds the matrix in the type to store (QuantOptions::keep_source_types,
// or the requested type is its type), else its f32 values quantized.
// Records per-type conversions and requantization errors in `stats`.
StatusOr<StoredTensor> StoreTensor(const SourceTensor& src, const QuantOptions& q,
                                   ConvertStats* stats) {
  const uint64_t cols = src.shape.back(), rows = Elements(src.shape) / cols;
  StoredTensor out;
  out.storage = ChooseStorage(src.name, src.shape, q);
  TensorStorage& s = out.storage;
  const bool native =
      src.shape.size() >= 2 && src.load_native &&
      (q.keep_source_types || (s.dtype == src.native_dtype && s.group == src.native_group));
  auto named = [&src](const Status& status) {
    return Status(status.code(), "tensor '" + src.name + "': " + status.message());
  };
  if (native) {
    s = TensorStorage{src.native_dtype, src.native_group, TensorLayout::kRowMajor, false};
    if (IsValidLayout(q.layout, s.dtype, rows)) s.layout = q.layout;
    auto bytes = src.load_native();
    if (!bytes.ok()) return named(bytes.status());
    out.bytes = std::move(bytes).value();
  } else {
    POCKET_ASSIGN_OR_RETURN(std::vector<float> values, src.load());
    if (values.size() != rows * cols) {
      return Errorf(StatusCode::kInternal, "tensor '%s' loaded %zu values, expected %llu",
                    src.name.c_str(), values.size(), static_cast<unsigned long long>(rows * cols));
    }
    auto bytes = QuantizeTensor(values.data(), rows, cols, s.dtype, s.group);
    if (!bytes.ok()) return named(bytes.status());
    out.bytes = std::move(bytes).value();
    if (!src.source_type.empty() && s.dtype != DType::kF32) {
      stats->requantized.push_back(MeasureRequantization(src, values, out));
    }
  }
  if (!src.source_type.empty()) {
    const char* how = native || s.dtype == DType::kF32 ? "exact" : "requantized";
    ++stats->conversions[src.source_type + " -> " + StorageName(s) + " (" + how + ")"];
  }
  return out;
}

}  // namespace

uint64_t LayersHeld(const std::vector<SourceTensor>& tensors) {
  constexpr char kPrefix[] = "blk.";
  constexpr size_t kPrefixLength = sizeof(kPrefix) - 1;
  std::set<uint64_t> layers;
  for (const SourceTensor& t : tensors) {
    if (t.name.compare(0, kPrefixLength, kPrefix) != 0) continue;
    // Up to 9 digits: the layer index fits an int32 like n_layers.
    uint64_t n = 0;
    size_t i = kPrefixLength;
    while (i < t.name.size() && i < kPrefixLength + 9 && t.name[i] >= '0' && t.name[i] <= '9') {
      n = n * 10 + static_cast<uint64_t>(t.name[i++] - '0');
    }
    if (i > kPrefixLength) layers.insert(n);
  }
  return layers.size();
}

Status ValidateQuantOptions(const QuantOptions& q) {
  if ((q.weights == DType::kQ4 || q.embeddings == DType::kQ4) &&
      !IsValidGroup(DType::kQ4, q.group)) {
    return Errorf(StatusCode::kInvalidArgument, "q4 group %u is not one of 32, 64, 128", q.group);
  }
  return Status::Ok();
}

StatusOr<QuantOptions> ParseQuantOptions(const std::string& quant, const std::string& embed_quant,
                                         int64_t group) {
  QuantOptions q;
  if (!quant.empty() && !ParseDType(quant, &q.weights)) {
    return Errorf(StatusCode::kInvalidArgument,
                  "quant='%s' is not a type; use q4, q8, f16, bf16 or f32", quant.c_str());
  }
  q.embeddings = q.weights;
  if (!embed_quant.empty() && !ParseDType(embed_quant, &q.embeddings)) {
    return Errorf(StatusCode::kInvalidArgument,
                  "embed_quant='%s' is not a type; use q4, q8, f16, bf16 or f32",
                  embed_quant.c_str());
  }
  if (group != 0) {
    if (!IsValidGroup(DType::kQ4, static_cast<uint32_t>(group)) || group > 128) {
      return Errorf(StatusCode::kInvalidArgument, "group=%lld must be 32, 64 or 128",
                    static_cast<long long>(group));
    }
    q.group = static_cast<uint32_t>(group);
  }
  POCKET_RETURN_IF_ERROR(ValidateQuantOptions(q));
  return q;
}

Status ParseLayoutOption(const std::string& layout, QuantOptions* q) {
  if (!layout.empty() && !ParseLayout(layout, &q->layout)) {
    return Errorf(StatusCode::kInvalidArgument,
                  "layout='%s' is not a layout; use rows16 (default) or row_major",
                  layout.c_str());
  }
  return Status::Ok();
}

std::string FormatConvertSummary(const ConvertStats& stats, double seconds) {
  std::string s =
      StringPrintf("%zu tensors, %.1fM parameters, %llu bytes (%.1f MB), %.1f s", stats.tensors,
                   stats.parameters / 1e6, static_cast<unsigned long long>(stats.file_bytes),
                   stats.file_bytes / 1e6, seconds);
  if (!stats.fallbacks.empty()) {
    s += StringPrintf(
        "; %zu tensors stored as f16 because the group does not divide their "
        "columns (first: %s)",
        stats.fallbacks.size(), stats.fallbacks[0].c_str());
  }
  for (const auto& [conversion, count] : stats.conversions) {
    s += StringPrintf("\n  %s: %zu tensors", conversion.c_str(), count);
  }
  for (const RequantizedTensor& r : stats.requantized) {
    s += StringPrintf("\n  %s: %s -> %s, max error %.3g, RMS error %.3g (relative)", r.name.c_str(),
                      r.from.c_str(), r.to.c_str(), r.max_rel_error, r.rms_rel_error);
  }
  return s;
}

std::string QuantSummary(const QuantOptions& q) {
  auto one = [&](DType t) {
    std::string s = DTypeName(t);
    if (IsQuantized(t)) s += " g" + std::to_string(GroupFor(t, q));
    return s;
  };
  const std::string types = one(q.weights) + ", embeddings " + one(q.embeddings) + ", norms f32";
  return q.keep_source_types ? "the source's types where .pocket has them, else " + types : types;
}

TensorStorage ChooseStorage(const std::string& name, const std::vector<uint64_t>& shape,
                            const QuantOptions& q) {
  TensorStorage s;
  if (shape.size() < 2) return s;  // norms and biases stay f32
  s.dtype = IsEmbedding(name) ? q.embeddings : q.weights;
  s.group = GroupFor(s.dtype, q);
  if (IsQuantized(s.dtype) && shape.back() % s.group != 0) {
    s = TensorStorage{DType::kF16, 0, TensorLayout::kRowMajor, true};
  }
  if (IsValidLayout(q.layout, s.dtype, Elements(shape) / shape.back())) s.layout = q.layout;
  return s;
}

std::vector<TensorSpec> ExpectedTensors(const ModelConfig& c) {
  const uint64_t d = c.hidden, f = c.ffn, hd = c.head_dim;
  const uint64_t q_rows = c.n_heads * hd, kv_rows = c.n_kv_heads * hd;
  std::vector<TensorSpec> out;
  out.push_back({"token_embd.weight", {static_cast<uint64_t>(c.vocab), d}});
  for (int32_t l = 0; l < c.n_layers; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    out.push_back({p + "attn_norm.weight", {d}});
    out.push_back({p + "attn_q.weight", {q_rows, d}});
    out.push_back({p + "attn_k.weight", {kv_rows, d}});
    out.push_back({p + "attn_v.weight", {kv_rows, d}});
    if (c.qkv_bias) {
      out.push_back({p + "attn_q.bias", {q_rows}});
      out.push_back({p + "attn_k.bias", {kv_rows}});
      out.push_back({p + "attn_v.bias", {kv_rows}});
    }
    if (c.qk_norm) {
      out.push_back({p + "attn_q_norm.weight", {hd}});
      out.push_back({p + "attn_k_norm.weight", {hd}});
    }
    out.push_back({p + "attn_output.weight", {d, q_rows}});
    out.push_back({p + "ffn_norm.weight", {d}});
    out.push_back({p + "ffn_gate.weight", {f, d}});
    out.push_back({p + "ffn_up.weight", {f, d}});
    out.push_back({p + "ffn_down.weight", {d, f}});
  }
  out.push_back({"output_norm.weight", {d}});
  if (!c.tied_embeddings) out.push_back({"output.weight", {static_cast<uint64_t>(c.vocab), d}});
  return out;
}

StatusOr<uint64_t> TensorDataBytes(const ModelConfig& config, const QuantOptions& q) {
  uint64_t total = 0;
  for (const TensorSpec& t : ExpectedTensors(config)) {
    const TensorStorage s = ChooseStorage(t.name, t.shape, q);
    uint64_t bytes = 0;
    if (!TensorByteSize(s.dtype, Elements(t.shape) / t.shape.back(), t.shape.back(), s.group,
                        &bytes)) {
      return Errorf(StatusCode::kInvalidArgument, "tensor '%s' is too large", t.name.c_str());
    }
    total += (bytes + kTensorAlignment - 1) / kTensorAlignment * kTensorAlignment;
  }
  return total;
}

uint64_t ParameterCount(const ModelConfig& config) {
  uint64_t n = 0;
  for (const TensorSpec& t : ExpectedTensors(config)) n += Elements(t.shape);
  return n;
}

StatusOr<ConvertStats> WritePocketModel(const SourceModel& model, const QuantOptions& q,
                                        const std::string& path, const ProgressFn& progress) {
  // Before the work, so a destination that PocketWriter::Finish would
  // refuse costs no conversion.
  POCKET_RETURN_IF_ERROR(CheckWriteDestination(path, "Pocket model (.pocket file)"));
  POCKET_RETURN_IF_ERROR(ValidateQuantOptions(q));
  POCKET_RETURN_IF_ERROR(ValidateModelConfig(model.config));
  POCKET_RETURN_IF_ERROR(CheckTensorSet(model));
  POCKET_ASSIGN_OR_RETURN(std::string graph, BuildDecoderGraph(model.config));

  ModelConfig config = model.config;
  config.quant_summary = QuantSummary(q);
  PocketWriter writer;
  writer.SetConfigJson(ModelConfigToJson(config));
  writer.SetGraphJson(std::move(graph));
  writer.SetTokenizerBlob(model.tokenizer_blob);

  ConvertStats stats;
  // File order follows the graph, whatever order the source listed.
  const std::vector<TensorSpec> order = ExpectedTensors(model.config);
  for (size_t i = 0; i < order.size(); ++i) {
    const SourceTensor* src = nullptr;
    for (const SourceTensor& t : model.tensors) {
      if (t.name == order[i].name) src = &t;
    }
    if (progress) progress(i, order.size(), src->name);
    POCKET_ASSIGN_OR_RETURN(StoredTensor stored, StoreTensor(*src, q, &stats));
    const uint64_t cols = src->shape.back(), rows = Elements(src->shape) / cols;
    const TensorStorage& s = stored.storage;
    if (s.layout == TensorLayout::kRows16) {
      stored.bytes = s.dtype == DType::kQ8 ? PackQ8Rows16(stored.bytes.data(), rows, cols)
                                           : PackQ4Rows16(stored.bytes.data(), rows, cols, s.group);
    }
    if (s.fell_back) stats.fallbacks.push_back(src->name);
    TensorInfo info;
    info.name = src->name;
    info.dtype = s.dtype;
    info.group = s.group;
    info.layout = s.layout;
    info.shape = src->shape;
    info.nbytes = stored.bytes.size();
    POCKET_RETURN_IF_ERROR(writer.AddTensor(std::move(info), std::move(stored.bytes)));
    stats.parameters += rows * cols;
    ++stats.tensors;
  }
  POCKET_RETURN_IF_ERROR(writer.Finish(path));
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    return Errorf(StatusCode::kIoError, "wrote '%s' but cannot stat it", path.c_str());
  }
  stats.file_bytes = static_cast<uint64_t>(st.st_size);
  return stats;
}

StatusOr<ConvertStats> ConvertModel(const std::string& src, const std::string& out_path,
                                    const ConvertOptions& options) {
  struct stat st;
  if (::stat(src.c_str(), &st) != 0) {
    return Errorf(StatusCode::kNotFound,
                  "'%s' does not exist; give a Hugging Face model directory, a GGUF file or a "
                  "llama2.c .bin",
                  src.c_str());
  }
  SourceModel model;
  QuantOptions quant = options.quant;
  if (S_ISDIR(st.st_mode)) {
    quant.keep_source_types = false;
    POCKET_ASSIGN_OR_RETURN(model, ImportHfDirectory(src));
  } else if (GgufFile::HasMagic(src)) {
    POCKET_ASSIGN_OR_RETURN(model, ImportGguf(src));
    // The tensors in types .pocket lacks (K-quants, Q5_x) lose least as q8.
    if (quant.keep_source_types) quant.weights = quant.embeddings = DType::kQ8;
  } else {
    quant.keep_source_types = false;
    POCKET_ASSIGN_OR_RETURN(model, ImportLlama2c(src, options.tokenizer_path));
  }
  return WritePocketModel(model, quant, out_path, options.progress);
}

}  // namespace pocket
