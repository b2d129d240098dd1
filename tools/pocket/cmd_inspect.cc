// `pocket inspect FILE [--json]`: what a .pocket file holds — header,
// sections, config, tokenizer, tensor table and size statistics. The JSON
// keys are stable (docs/format.md, "pocket inspect --json").
#include <cinttypes>
#include <cstdio>
#include <memory>
#include <string>

#include "convert/gguf_reader.h"
#include "format/model_config.h"
#include "format/reader.h"
#include "runtime/devices.h"
#include "tokenizer/tokenizer.h"
#include "tools/pocket/args.h"
#include "tools/pocket/commands.h"
#include "tools/pocket/inspect_gguf.h"
#include "util/json_util.h"

namespace pocket::cli {
namespace {

constexpr int kSpecialTokensShown = 8;

const char kInspectUsage[] =
    "usage: pocket inspect FILE [--json]\n"
    "       pocket inspect --devices\n"
    "\n"
    "Shows a .pocket file's header, sections, config, tokenizer, tensor table,\n"
    "parameter count and bits per weight; a GGUF file's metadata and tensors\n"
    "per type; or the compute devices this build can use (CPU kernel target,\n"
    "OpenCL platforms and devices).\n";

const FlagTable& InspectFlags() {
  static const FlagTable table{
      "options",
      {
          Switch("--json", "print one JSON object instead of text"),
          Switch("--devices", "list compute devices instead of reading a file"),
      }};
  return table;
}

// "303.2M": parameter counts the way model cards write them.
std::string HumanCount(uint64_t n) {
  if (n >= 1000000000) return StringPrintf("%.1fB", n / 1e9);
  if (n >= 1000000) return StringPrintf("%.1fM", n / 1e6);
  if (n >= 1000) return StringPrintf("%.1fK", n / 1e3);
  return std::to_string(n);
}

std::string HumanBytes(uint64_t n) {
  if (n >= 1000000000) return StringPrintf("%.2f GB", n / 1e9);
  if (n >= 1000000) return StringPrintf("%.1f MB", n / 1e6);
  if (n >= 1000) return StringPrintf("%.1f KB", n / 1e3);
  return StringPrintf("%llu bytes", static_cast<unsigned long long>(n));
}

const char* TokenizerKindName(TokenizerKind k) {
  switch (k) {
    case TokenizerKind::kByteLevelBpe:
      return "byte_level_bpe";
    case TokenizerKind::kSentencePiece:
      return "sentencepiece";
    case TokenizerKind::kSpmBpe:
      return "spm_bpe";
  }
  return "unknown";
}

Json TokenizerJson(const Tokenizer& t) {
  Json j = Json::object();
  j["kind"] = TokenizerKindName(t.kind());
  j["vocab_size"] = t.vocab_size();
  j["bos_id"] = t.bos_id();
  j["eos_id"] = t.eos_id();
  Json specials = Json::array();
  for (int32_t id = 0; id < t.vocab_size() && specials.size() < kSpecialTokensShown; ++id) {
    if (t.IsSpecial(id)) specials.push_back({{"id", id}, {"text", t.TokenText(id)}});
  }
  j["special_tokens"] = specials;
  return j;
}

// Everything inspect reports, as the --json object; the text form prints
// from the same object so both always agree.
Json Describe(const std::string& path, const PocketFile& f, std::string* errors) {
  Json out = Json::object();
  out["file"] = path;
  out["file_size"] = f.size();
  out["version"] = StringPrintf("%u.%u", f.major(), f.minor());
  Json sections = Json::array();
  for (const SectionEntry& e : f.sections()) {
    const bool known = e.kind >= 1 && e.kind <= 5;
    sections.push_back({{"kind", known ? SectionKindName(static_cast<SectionKind>(e.kind))
                                       : StringPrintf("unknown(%u)", e.kind)},
                        {"offset", e.offset},
                        {"size", e.size},
                        {"crc32c", e.crc32c}});
  }
  out["sections"] = sections;

  StatusOr<ModelConfig> config = ParseModelConfig(std::string(f.config_json()));
  if (config.ok()) {
    // The config exactly as the converter stores it (docs/convert.md).
    StatusOr<Json> stored = ParseJson(ModelConfigToJson(*config), "config");
    if (stored.ok()) out["config"] = *stored;
  } else {
    out["config_error"] = config.status().message();
    *errors += "config: " + config.status().message() + "\n";
  }
  StatusOr<std::unique_ptr<Tokenizer>> tok = Tokenizer::FromBlob(f.tokenizer_blob());
  if (tok.ok()) {
    out["tokenizer"] = TokenizerJson(**tok);
  } else {
    out["tokenizer_error"] = tok.status().message();
    *errors += "tokenizer: " + tok.status().message() + "\n";
  }

  Json tensors = Json::array();
  uint64_t params = 0, bytes = 0;
  for (const TensorInfo& t : f.tensors()) {
    tensors.push_back({{"name", t.name},
                       {"dtype", DTypeName(t.dtype)},
                       {"group", t.group},
                       {"layout", LayoutName(t.layout)},
                       {"shape", t.shape},
                       {"offset", t.offset},
                       {"bytes", t.nbytes}});
    params += t.elements();
    bytes += t.nbytes;
  }
  out["tensors"] = tensors;
  out["n_tensors"] = f.tensors().size();
  out["parameters"] = params;
  out["parameters_human"] = HumanCount(params);
  out["tensor_bytes"] = bytes;
  out["bits_per_weight"] = params == 0 ? 0.0 : 8.0 * static_cast<double>(bytes) / params;
  return out;
}

std::string Str(const Json& j) { return j.is_string() ? j.get<std::string>() : DumpJson(j); }

void PrintText(const Json& d) {
  std::printf("file       %s (%s bytes)\n", Str(d["file"]).c_str(), Str(d["file_size"]).c_str());
  std::printf("format     %s\n\nsections\n", Str(d["version"]).c_str());
  for (const Json& s : d["sections"]) {
    std::printf("  %-10s offset %12s  size %12s  crc32c 0x%08x\n", Str(s["kind"]).c_str(),
                Str(s["offset"]).c_str(), Str(s["size"]).c_str(), s["crc32c"].get<uint32_t>());
  }
  if (d.contains("config")) {
    const Json& c = d["config"];
    std::printf("\nconfig\n");
    std::printf("  architecture     %s\n", Str(c["architecture"]).c_str());
    std::printf("  layers           %s\n", Str(c["n_layers"]).c_str());
    std::printf("  hidden           %s\n", Str(c["hidden"]).c_str());
    std::printf("  heads            %s (kv heads %s, head dim %s)\n", Str(c["n_heads"]).c_str(),
                Str(c["n_kv_heads"]).c_str(), Str(c["head_dim"]).c_str());
    std::printf("  ffn              %s\n", Str(c["ffn"]).c_str());
    std::printf("  vocab            %s\n", Str(c["vocab"]).c_str());
    std::printf("  context          %s\n", Str(c["context"]).c_str());
    std::printf("  rope             theta %g, %s\n", c["rope_theta"].get<double>(),
                Str(c["rope_style"]).c_str());
    std::printf("  tied embeddings  %s\n", c["tied_embeddings"].get<bool>() ? "yes" : "no");
    std::printf("  quantization     %s\n", Str(c["quant"]).c_str());
    std::printf("  chat template    %s\n", Str(c["chat_template_kind"]).c_str());
    std::printf("  stop tokens      %s\n", Str(c["stop_token_ids"]).c_str());
    std::printf("  provenance       %s\n", Str(c["provenance"]).c_str());
  }
  if (d.contains("tokenizer")) {
    const Json& t = d["tokenizer"];
    std::printf("\ntokenizer\n");
    std::printf("  kind             %s\n", Str(t["kind"]).c_str());
    std::printf("  vocab size       %s\n", Str(t["vocab_size"]).c_str());
    std::printf("  bos / eos        %s / %s\n", Str(t["bos_id"]).c_str(), Str(t["eos_id"]).c_str());
    std::string specials;
    for (const Json& s : t["special_tokens"]) {
      specials += (specials.empty() ? "" : ", ") + Str(s["text"]) + " (" + Str(s["id"]) + ")";
    }
    std::printf("  special tokens   %s\n", specials.empty() ? "none" : specials.c_str());
  }
  std::printf("\ntensors (%s)\n", Str(d["n_tensors"]).c_str());
  std::printf("  %-40s %-5s %5s %-9s %-24s %12s\n", "name", "dtype", "group", "layout", "shape",
              "bytes");
  for (const Json& t : d["tensors"]) {
    std::printf("  %-40s %-5s %5s %-9s %-24s %12s\n", Str(t["name"]).c_str(),
                Str(t["dtype"]).c_str(), Str(t["group"]).c_str(), Str(t["layout"]).c_str(),
                Str(t["shape"]).c_str(), Str(t["bytes"]).c_str());
  }
  std::printf("\nparameters       %s (%s)\n", Str(d["parameters_human"]).c_str(),
              Str(d["parameters"]).c_str());
  std::printf("bits per weight  %.2f\n", d["bits_per_weight"].get<double>());
  std::printf("file size        %s\n", HumanBytes(d["file_size"].get<uint64_t>()).c_str());
}

}  // namespace

int CmdInspect(int argc, char** argv) {
  Args args({&InspectFlags()});
  if (!args.Parse(argc, argv)) {
    std::fprintf(stderr, "pocket inspect: %s\n\n%s", args.error().c_str(), kInspectUsage);
    return kExitUsage;
  }
  if (args.Has("-h")) {
    std::printf("%s%s", kInspectUsage, args.Help().c_str());
    return kExitOk;
  }
  if (args.Has("--devices")) {
    std::fputs(DescribeDevices().c_str(), stdout);
    return kExitOk;
  }
  if (args.positional().size() != 1) {
    std::fprintf(stderr, "pocket inspect: expected exactly one FILE\n\n%s", kInspectUsage);
    return kExitUsage;
  }
  const std::string& path = args.positional()[0];
  if (GgufFile::HasMagic(path)) return InspectGguf(path, args.Has("--json"));
  StatusOr<std::unique_ptr<PocketFile>> file = PocketFile::Open(path);
  if (!file.ok()) {
    std::fprintf(stderr, "pocket inspect: %s\n", file.status().ToString().c_str());
    return kExitError;
  }
  std::string errors;
  const Json d = Describe(path, **file, &errors);
  if (args.Has("--json")) {
    std::printf("%s\n", DumpJson(d).c_str());
  } else {
    PrintText(d);
  }
  if (!errors.empty()) {
    std::fprintf(stderr, "pocket inspect: %s", errors.c_str());
    return kExitError;
  }
  return kExitOk;
}

}  // namespace pocket::cli
