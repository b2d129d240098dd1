// `pocket logits`: teacher-forced logits of a token sequence, written as a
// float32 [n_tokens, vocab] NumPy .npy (format version 1.0) file.
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "tools/pocket/commands.h"
#include "tools/pocket/model_flags.h"
#include "tools/pocket/option_flags.h"
#include "util/file_io.h"

namespace pocket::cli {

namespace {

const char kLogitsUsage[] =
    "usage: pocket logits -m FILE (--tokens 1,2,3 | --text TEXT) --out FILE.npy [options]\n\n"
    "Runs the sequence through the model (teacher forcing) and writes the logits of\n"
    "every position as float32 [n_tokens, vocab] in NumPy .npy format; row p predicts\n"
    "token p+1. The KV cache defaults to f32 here, for exact comparisons.\n";

const FlagTable& LogitsFlags() {
  static const FlagTable table{
      "options",
      {
          Text("--tokens", "IDS", "comma-separated token ids, used as given"),
          Text("--text", "TEXT", "text to tokenize (BOS is added when the model wants it)"),
          Text("-o|--out", "FILE", "output .npy file (required)"),
      }};
  return table;
}

bool ParseIds(const std::string& text, std::vector<int32_t>* ids) {
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    const std::string item = text.substr(start, comma - start);
    errno = 0;
    char* end = nullptr;
    const long v = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || errno != 0 || *end != '\0' || v < INT32_MIN || v > INT32_MAX) return false;
    ids->push_back(static_cast<int32_t>(v));
    start = comma + 1;
  }
  return true;
}

// NumPy format 1.0: magic, version, little-endian u16 header length, a
// Python dict literal padded with spaces to a 64-byte boundary, then data.
Status WriteNpy(const std::string& path, const std::vector<float>& data, size_t rows, size_t cols) {
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" +
                       std::to_string(rows) + ", " + std::to_string(cols) + "), }";
  const size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header.push_back('\n');
  const uint16_t len = static_cast<uint16_t>(header.size());
  const char magic[8] = {'\x93', 'N', 'U', 'M', 'P', 'Y', 1, 0};
  const unsigned char len_le[2] = {static_cast<unsigned char>(len & 0xff),
                                   static_cast<unsigned char>(len >> 8)};
  AtomicFileWriter out;
  POCKET_RETURN_IF_ERROR(out.Open(path, "NumPy .npy file"));
  out.Write(magic, sizeof(magic));
  out.Write(len_le, sizeof(len_le));
  out.Write(header.data(), header.size());
  out.Write(data.data(), data.size() * sizeof(float));
  return out.Commit();
}

}  // namespace

int CmdLogits(int argc, char** argv) {
  Args args({&LogitsFlags(), &ModelFlags()});
  if (!args.Parse(argc, argv)) {
    std::fprintf(stderr, "error: %s\n\n%s", args.error().c_str(), kLogitsUsage);
    return kExitUsage;
  }
  if (args.Has("-h")) {
    std::printf("%s%s", kLogitsUsage, args.Help().c_str());
    return kExitOk;
  }
  if (args.Has("--tokens") == args.Has("--text")) {
    std::fprintf(stderr, "error: give exactly one of --tokens and --text\n");
    return kExitUsage;
  }
  if (!args.Has("-o")) {
    std::fprintf(stderr, "error: --out FILE.npy is required\n");
    return kExitUsage;
  }
  std::vector<int32_t> ids;
  if (args.Has("--tokens") && !ParseIds(args.Get("--tokens"), &ids)) {
    std::fprintf(stderr, "error: --tokens needs comma-separated integers, got '%s'\n",
                 args.Get("--tokens").c_str());
    return kExitUsage;
  }
  LoadedModel loaded;
  int rc = LoadModelFromArgs(args, KvType::kF32, &loaded);
  if (rc != kExitOk) return rc;
  const Model& model = *loaded.model;
  if (args.Has("--text")) {
    auto encoded = model.tokenizer().Encode(args.Get("--text"), true);
    if (!encoded.ok()) {
      std::fprintf(stderr, "error: %s\n", InFlagTerms(encoded.status()).c_str());
      return kExitError;
    }
    if (model.config().add_bos && model.config().bos_id >= 0) ids.push_back(model.config().bos_id);
    ids.insert(ids.end(), encoded->begin(), encoded->end());
  }
  Session session(&model, loaded.session);
  std::vector<float> logits;
  Status s = session.Eval(ids, LogitsMode::kAll, &logits);
  if (!s.ok()) {
    std::fprintf(stderr, "error: %s\n", InFlagTerms(s).c_str());
    return kExitError;
  }
  s = WriteNpy(args.Get("-o"), logits, ids.size(), static_cast<size_t>(model.config().vocab));
  if (!s.ok()) {
    std::fprintf(stderr, "error: %s\n", InFlagTerms(s).c_str());
    return kExitError;
  }
  return kExitOk;
}

}  // namespace pocket::cli
