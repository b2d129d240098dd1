// The BPE merge loop: repeatedly merges the adjacent pair of lowest rank
// (leftmost on ties), exactly like Hugging Face tokenizers' BPE model.
#pragma once

#include <cstdint>
#include <vector>

#include "tokenizer/flat_hash.h"

namespace pocket::tok {

// Rewrites *symbols (token ids) in place. O(n log n) in the word length, so
// a long unsplit text (SentencePiece-style BPE has no pre-tokenizer) stays
// fast.
void BpeMerge(const MergeTable& merges, std::vector<int32_t>* symbols);

}  // namespace pocket::tok
