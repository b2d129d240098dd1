// An incremental byte-level matcher for a Grammar: a pushdown automaton
// that follows every parse at once. A parse is a stack of grammar positions
// (the top is the element to match next, the rest are where to continue
// when a rule ends); stacks are interned as nodes of a tree (position,
// parent), so equal stacks are one integer and shared tails cost nothing. A
// rule referenced as the last element of an alternative returns straight to
// its caller's caller, so right recursion (every `x*`) runs in constant
// depth.
//
// A matcher state is the set of stacks after the bytes so far. States are
// interned and their transitions computed on first use and remembered, so
// the automaton determinizes lazily: a byte the state has seen before costs
// one table lookup. That is what makes walking a vocabulary trie for a token
// mask cheap (token_mask.h). The tables grow with the distinct states a
// matcher meets; one matcher serves one generation.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "grammar/grammar.h"

namespace pocket {
namespace grammar {

class Matcher {
 public:
  static constexpr int32_t kDead = -1;

  explicit Matcher(std::shared_ptr<const Grammar> grammar);

  // The current state; a state id stays valid for the matcher's life, so a
  // caller can save one and restore it with set_state().
  int32_t state() const { return state_; }
  void set_state(int32_t state) { state_ = state; }
  void Reset() { state_ = start_; }

  // Consumes one byte: false (state unchanged) when the grammar forbids it.
  bool AcceptByte(uint8_t byte);
  // Consumes all of `bytes`, or nothing when some byte is forbidden.
  bool AcceptBytes(std::string_view bytes);
  // Whether the input so far is a complete match (end of sequence allowed).
  bool IsComplete() const { return Accepting(state_); }
  // Whether some byte may follow.
  bool CanContinue() const;

  // The state after `byte` from `state`, or kDead.
  int32_t Step(int32_t state, uint8_t byte) {
    const int32_t next = transitions_[static_cast<size_t>(state) * 256 + byte];
    return next != kUnknown ? next : ComputeStep(state, byte);
  }
  bool Accepting(int32_t state) const { return accepting_[state]; }
  // Whether `state` takes any `bytes` plain bytes (IsPlain: printable ASCII
  // but `"` and `\`) in a row, whatever they are: each step must send
  // every plain byte to one common next state (inside a JSON string, also
  // one with maxLength). A token of only plain bytes, no longer than that,
  // is then allowed without walking it (token_mask.h). Only the states on
  // the way are examined.
  bool TakesAnyPlain(int32_t state, int bytes);
  static bool IsPlain(uint8_t b) { return b >= 0x20 && b < 0x7F && b != '"' && b != '\\'; }
  // The same over characters, where a character is a plain byte or, among
  // the first `multibyte_chars`, also any well-formed UTF-8 sequence of two
  // to four bytes: whether `state` takes any `chars` such characters in a
  // row (inside a JSON string, also one with maxLength). A token whose
  // bytes spell that many such characters or fewer (the last one possibly
  // unfinished), its multi-byte ones among the first `multibyte_chars`, is
  // then allowed without walking it. Only the states on the way are
  // examined, and multi-byte characters only as far as asked: each costs a
  // bounded string's states through every UTF-8 lead byte.
  bool TakesAnyText(int32_t state, int chars, int multibyte_chars);

  // Byte classes for LoopClasses: letters, digits, space and groups of
  // punctuation one by one, so that the loops of a pattern's or format's
  // character class (an email's local part) show; kMultiByte stands for
  // every well-formed UTF-8 sequence of two to four bytes, and
  // kBrokenUtf8 for bytes that are not well-formed UTF-8 (no state loops
  // on it).
  enum : uint16_t { kMultiByte = 1 << 13, kBrokenUtf8 = 1 << 14 };
  static uint16_t ByteClass(uint8_t b) { return uint16_t{1} << kClassOf[b]; }
  // The classes all of whose bytes (or, for kMultiByte, characters) lead
  // from `state` back to it: a token made only of them is allowed.
  uint16_t LoopClasses(int32_t state);
  int32_t num_states() const { return static_cast<int32_t>(accepting_.size()); }
  const Grammar& grammar() const { return *grammar_; }

 private:
  static constexpr int32_t kUnknown = -2;
  static constexpr int32_t kDone = 0;  // the empty stack: the root rule ended

  int32_t Node(int32_t pos, int32_t parent);
  // The stacks reachable from `node` without consuming a byte whose top is
  // a byte set, plus kDone when the whole grammar can end.
  const std::vector<int32_t>& Closure(int32_t node);
  void AddClosure(int32_t node, std::vector<int32_t>* out);
  int32_t InternState(std::vector<int32_t> nodes);
  // Whether every well-formed multi-byte UTF-8 character leads from
  // `state` to `target`.
  bool MultiByteCharsLeadTo(int32_t state, int32_t target);
  // The state every plain byte (every character, see TakesAnyText) leads
  // to from `state`, or kDead when they do not all lead to one; remembered.
  int32_t PlainStep(int32_t state);
  int32_t TextStep(int32_t state);
  static const std::array<uint8_t, 256> kClassOf;
  // Fills every byte's transition of `state`; returns the one for `byte`.
  int32_t ComputeStep(int32_t state, uint8_t byte);

  std::shared_ptr<const Grammar> grammar_;
  // Stack nodes: position and parent node; node 0 is the empty stack.
  std::vector<int32_t> node_pos_, node_parent_;
  std::unordered_map<uint64_t, int32_t> node_ids_;
  std::vector<std::vector<int32_t>> closures_;
  std::vector<char> closure_done_;
  // States: sorted node sets, their transitions (256 per state) and
  // whether they accept.
  std::vector<std::vector<int32_t>> states_;
  std::unordered_map<std::string, int32_t> state_ids_;
  std::vector<int32_t> transitions_;
  std::vector<char> accepting_;
  // Per state, -1 (or kUnknownClasses) until computed.
  std::vector<int32_t> plain_step_, text_step_;
  static constexpr int32_t kUnknownClasses = -1;
  std::vector<int32_t> loop_classes_;
  int32_t start_ = 0;
  int32_t state_ = 0;
};

}  // namespace grammar
}  // namespace pocket
