// `pocket perplexity`: perplexity of a text file, scored in independent
// windows of --ctx tokens (each window starts a fresh cache; the first
// token of a window is context only and is not scored).
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "tools/pocket/commands.h"
#include "tools/pocket/model_flags.h"
#include "tools/pocket/option_flags.h"
#include "util/file_io.h"
#include "util/json_util.h"

namespace pocket::cli {

namespace {

const char kPerplexityUsage[] =
    "usage: pocket perplexity -m FILE -f TEXT_FILE [--ctx N] [--json] [options]\n";

const FlagTable& PerplexityFlags() {
  static const FlagTable table{
      "options",
      {
          Text("-f|--file", "FILE", "UTF-8 text to score (required)"),
          Int("--ctx", "N", "", 2, std::numeric_limits<int32_t>::max(),
              "window length in tokens (default: min(context, 512))"),
          Switch("--json", "print {\"perplexity\", \"nll\", \"tokens\", \"windows\"}"),
      }};
  return table;
}

// -log softmax(row)[target], in double for a stable sum over many tokens.
double NegLogProb(const float* row, size_t vocab, int32_t target) {
  double max = row[0];
  for (size_t i = 1; i < vocab; ++i) max = std::max(max, static_cast<double>(row[i]));
  double sum = 0;
  for (size_t i = 0; i < vocab; ++i) sum += std::exp(static_cast<double>(row[i]) - max);
  return max + std::log(sum) - static_cast<double>(row[target]);
}

}  // namespace

int CmdPerplexity(int argc, char** argv) {
  Args args({&PerplexityFlags(), &ModelFlags()});
  if (!args.Parse(argc, argv)) {
    std::fprintf(stderr, "error: %s\n\n%s", args.error().c_str(), kPerplexityUsage);
    return kExitUsage;
  }
  if (args.Has("-h")) {
    std::printf("%s%s", kPerplexityUsage, args.Help().c_str());
    return kExitOk;
  }
  if (!args.Has("-f")) {
    std::fprintf(stderr, "error: -f TEXT_FILE is required\n");
    return kExitUsage;
  }
  int64_t ctx = args.Int("--ctx");
  StatusOr<std::string> input = ReadRegularFile(args.Get("-f"), "text file", kMaxTextFileBytes);
  if (!input.ok()) {
    std::fprintf(stderr, "error: %s\n", InFlagTerms(input.status()).c_str());
    return kExitError;
  }

  LoadedModel loaded;
  int rc = LoadModelFromArgs(args, std::nullopt, &loaded);
  if (rc != kExitOk) return rc;
  const Model& model = *loaded.model;
  const ModelConfig& config = model.config();
  if (ctx == 0) ctx = std::min<int64_t>(config.context, 512);
  if (ctx > config.context) {
    std::fprintf(stderr, "error: --ctx %lld exceeds the model's context of %d tokens\n",
                 static_cast<long long>(ctx), config.context);
    return kExitUsage;
  }
  auto encoded = model.tokenizer().Encode(*input, true);
  if (!encoded.ok()) {
    std::fprintf(stderr, "error: %s: %s\n", args.Get("-f").c_str(),
                 InFlagTerms(encoded.status()).c_str());
    return kExitError;
  }
  const bool bos = config.add_bos && config.bos_id >= 0;
  // With BOS each window is BOS + (ctx - 1) text tokens.
  const size_t text_per_window = static_cast<size_t>(ctx) - (bos ? 1 : 0);
  const std::vector<int32_t>& text = *encoded;
  if (text.size() < (bos ? 1u : 2u)) {
    std::fprintf(stderr, "error: the text has too few tokens to score\n");
    return kExitError;
  }

  Session session(&model, loaded.session);
  const size_t vocab = static_cast<size_t>(config.vocab);
  double nll = 0;
  size_t scored = 0, windows = 0;
  std::vector<float> logits;
  for (size_t start = 0; start < text.size(); start += text_per_window) {
    const size_t end = std::min(text.size(), start + text_per_window);
    std::vector<int32_t> window(text.begin() + start, text.begin() + end);
    if (bos) window.insert(window.begin(), config.bos_id);
    if (window.size() < 2) break;
    session.Reset();
    Status s = session.Eval(window, LogitsMode::kAll, &logits);
    if (!s.ok()) {
      std::fprintf(stderr, "error: %s\n", InFlagTerms(s).c_str());
      return kExitError;
    }
    for (size_t p = 0; p + 1 < window.size(); ++p) {
      nll += NegLogProb(logits.data() + p * vocab, vocab, window[p + 1]);
      ++scored;
    }
    ++windows;
  }
  const double mean = nll / static_cast<double>(scored);
  const double ppl = std::exp(mean);
  if (args.Has("--json")) {
    Json out = Json::object();
    out["perplexity"] = ppl;
    out["nll"] = mean;
    out["tokens"] = scored;
    out["windows"] = windows;
    std::printf("%s\n", DumpJson(out).c_str());
  } else {
    std::printf("perplexity %.4f (mean NLL %.6f over %zu tokens in %zu windows of <= %lld)\n", ppl,
                mean, scored, windows, static_cast<long long>(ctx));
  }
  return kExitOk;
}

}  // namespace pocket::cli
