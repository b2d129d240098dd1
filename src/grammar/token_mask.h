// Token masks: which tokens of a vocabulary the grammar allows next.
//
// TokenTrie holds the vocabulary's token byte strings as a trie laid out in
// depth-first order (each node: its byte, depth, the end of its subtree and
// the tokens that end there). A mask is one pass over that array with the
// matcher's lazy automaton: a node whose byte the grammar rejects skips its
// whole subtree, and every token ending at a surviving node is allowed. A
// subtree is allowed whole, without walking it, under a state that takes
// any text of that many characters (inside a string, also a bounded one),
// or that loops on every byte class the subtree holds (an email's local
// part). A
// token is judged by all its bytes, so merged tokens that span grammar
// elements (`"}`, `":`, `],`) and tokens ending inside a UTF-8 character are
// handled like any other. The trie depends only on the vocabulary: build it
// once per tokenizer and share it.
//
// TokenMasker follows one generation: the mask at the current state (cached
// per matcher state, since constrained output revisits states: every
// character inside a JSON string leads back to the same one), and the
// state after each sampled token. End-of-sequence tokens are allowed exactly
// where the grammar accepts.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "grammar/grammar.h"
#include "grammar/matcher.h"
#include "util/status.h"

namespace pocket {
namespace grammar {

class TokenTrie {
 public:
  // token_bytes[id] for every id of the vocabulary; tokens whose bytes are
  // empty or whose `usable` entry is false (control tokens) are never
  // allowed by the grammar (end tokens are handled by TokenMasker).
  TokenTrie(const std::vector<std::string>& token_bytes, const std::vector<bool>& usable);

  int32_t vocab_size() const { return vocab_; }
  size_t num_nodes() const { return bytes_.size(); }
  std::string_view token(int32_t id) const {
    return std::string_view(pool_).substr(offsets_[id], offsets_[id + 1] - offsets_[id]);
  }

  // Sets bit id of `mask` (vocab_size() bits, cleared first) for every
  // token whose bytes the matcher accepts from `state`.
  void Fill(Matcher* matcher, int32_t state, std::vector<uint64_t>* mask) const;

 private:
  void ClassifySubtrees();

  int32_t vocab_ = 0;
  std::string pool_;               // every token's bytes, in id order
  std::vector<uint32_t> offsets_;  // token id = pool_[offsets_[id], offsets_[id + 1])
  // Per node, in depth-first order.
  std::vector<uint8_t> bytes_;
  std::vector<uint16_t> depth_;     // 1 for the root's children
  std::vector<uint32_t> skip_;      // index just past the node's subtree
  std::vector<uint32_t> id_begin_;  // ids_[id_begin_[i], id_begin_[i + 1])
  // Whether the node's subtree (itself included) holds only bytes for which
  // Matcher::IsPlain holds, and how deep it is (the node alone: 1; at most
  // 255): from a state that takes any plain bytes that many deep
  // (Matcher::TakesAnyPlain) every token in it is allowed, and its ids are
  // ids_[id_begin_[i], id_begin_[skip_[i]]).
  std::vector<uint8_t> plain_;
  std::vector<uint8_t> height_;
  // Per node, over the bytes of its subtree from the node down (what a
  // state at its parent would read): whether they all spell text
  // characters (Matcher::TakesAnyText) and then the most characters any
  // token there begins (0: not all text; at most 255); and the union of
  // their byte classes (Matcher::ByteClass, kBrokenUtf8 where one is not
  // well-formed UTF-8). A state at the parent lets the whole subtree pass
  // when it takes any text of that many characters, or when it loops on
  // every class.
  std::vector<uint8_t> text_chars_;
  std::vector<uint8_t> multibyte_chars_;  // the furthest a multi-byte one begins
  std::vector<uint16_t> classes_;
  std::vector<int32_t> ids_;
  std::vector<uint64_t> all_;  // a mask of every token in the trie
  size_t max_depth_ = 0;
};

class TokenMasker {
 public:
  // `end_ids`: the tokens that end the sequence (eos, stop tokens).
  TokenMasker(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenTrie> trie,
              std::vector<int32_t> end_ids);

  // The allowed tokens at the current state, one bit per id.
  const std::vector<uint64_t>& Mask();
  // Sets the logits of forbidden tokens to -inf.
  void Apply(float* logits, int32_t vocab);
  // Advances over a token: InvalidArgument naming it when the grammar
  // forbids it. An end token is accepted where the grammar is complete and
  // leaves the state as it is.
  Status Accept(int32_t id);
  bool IsComplete() const { return matcher_.IsComplete(); }
  bool IsEnd(int32_t id) const;
  Matcher& matcher() { return matcher_; }

 private:
  Matcher matcher_;
  std::shared_ptr<const TokenTrie> trie_;
  std::vector<int32_t> end_ids_;
  std::unordered_map<int32_t, std::vector<uint64_t>> masks_;
};

}  // namespace grammar
}  // namespace pocket
