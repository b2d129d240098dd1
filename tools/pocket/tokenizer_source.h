// The tokenizer source flags shared by `pocket tokenize` and
// `pocket detokenize`: a .pocket model (-m), a Hugging Face tokenizer.json
// (--tokenizer-json, with tokenizer_config.json read from the same folder
// when present) or a SentencePiece .model (--spm-model).
#pragma once

#include <memory>

#include "tokenizer/tokenizer.h"
#include "tools/pocket/args.h"

namespace pocket::cli {

const FlagTable& TokenizerSourceFlags();  // -m, --tokenizer-json, --spm-model

// Loads the tokenizer the flags name. On failure prints "pocket <cmd>: ..."
// to stderr and returns the exit code (usage error when not exactly one
// source is given, runtime error when it does not load); kExitOk otherwise.
int LoadTokenizerFromArgs(const Args& args, const char* cmd, std::unique_ptr<Tokenizer>* out);

}  // namespace pocket::cli
