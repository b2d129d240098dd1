#include "grammar/matcher.h"

#include <algorithm>
#include <cstring>
#include <utility>

namespace pocket {
namespace grammar {

Matcher::Matcher(std::shared_ptr<const Grammar> grammar) : grammar_(std::move(grammar)) {
  node_pos_.push_back(-1);  // kDone
  node_parent_.push_back(-1);
  closures_.push_back({kDone});
  closure_done_.push_back(1);
  // The start: one stack per alternative of the root rule.
  std::vector<int32_t> start;
  for (int32_t p : grammar_->alternatives(grammar_->root())) AddClosure(Node(p, kDone), &start);
  start_ = state_ = InternState(std::move(start));
}

int32_t Matcher::Node(int32_t pos, int32_t parent) {
  const uint64_t key =
      (static_cast<uint64_t>(static_cast<uint32_t>(pos)) << 32) | static_cast<uint32_t>(parent);
  auto [it, inserted] = node_ids_.emplace(key, static_cast<int32_t>(node_pos_.size()));
  if (inserted) {
    node_pos_.push_back(pos);
    node_parent_.push_back(parent);
    closures_.emplace_back();
    closure_done_.push_back(0);
  }
  return it->second;
}

void Matcher::AddClosure(int32_t node, std::vector<int32_t>* out) {
  const std::vector<int32_t>& c = Closure(node);
  out->insert(out->end(), c.begin(), c.end());
}

const std::vector<int32_t>& Matcher::Closure(int32_t node) {
  if (closure_done_[node]) return closures_[node];
  const auto& el = grammar_->elements();
  std::vector<int32_t> out;
  const int32_t pos = node_pos_[node];
  const int32_t parent = node_parent_[node];
  const Grammar::Element& e = el[pos];
  if (e.kind == Grammar::Kind::kEnd) {
    // The alternative ended: continue with the caller.
    AddClosure(parent, &out);
  } else if (e.kind == Grammar::Kind::kBytes) {
    out.push_back(node);
  } else {
    // Entering a rule. When the reference is the alternative's last
    // element, the rule returns straight to this alternative's caller.
    const int32_t cont = el[pos + 1].kind == Grammar::Kind::kEnd ? parent : Node(pos + 1, parent);
    for (int32_t p : grammar_->alternatives(e.arg)) AddClosure(Node(p, cont), &out);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  // Node() may have grown the vectors: index again rather than keep a
  // reference across the recursion.
  closures_[node] = std::move(out);
  closure_done_[node] = 1;
  return closures_[node];
}

int32_t Matcher::InternState(std::vector<int32_t> nodes) {
  std::sort(nodes.begin(), nodes.end());
  nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
  if (nodes.empty()) return kDead;
  std::string key(nodes.size() * sizeof(int32_t), '\0');
  std::memcpy(&key[0], nodes.data(), key.size());
  auto [it, inserted] = state_ids_.emplace(std::move(key), static_cast<int32_t>(states_.size()));
  if (inserted) {
    accepting_.push_back(nodes.front() == kDone);
    plain_step_.push_back(kUnknown);
    text_step_.push_back(kUnknown);
    loop_classes_.push_back(kUnknownClasses);
    states_.push_back(std::move(nodes));
    transitions_.resize(transitions_.size() + 256, kUnknown);
  }
  return it->second;
}

// Fills the state's whole row at once. Bytes accepted by the same stacks of
// the state lead to the same next state, so each distinct set of accepting
// stacks is closed and interned once: the 256 bytes inside a JSON string
// fall into a handful of such sets.
int32_t Matcher::ComputeStep(int32_t state, uint8_t byte) {
  const auto& el = grammar_->elements();
  // Copied: interning nodes below may reallocate states_.
  const std::vector<int32_t> nodes = states_[state];
  const size_t words = (nodes.size() + 63) / 64;
  std::vector<uint64_t> accepting(256 * words, 0);  // per byte: which stacks take it
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i] == kDone) continue;
    const int32_t set = el[node_pos_[nodes[i]]].arg;
    for (int b = 0; b < 256; ++b) {
      if (grammar_->ByteIn(set, static_cast<uint8_t>(b))) {
        accepting[b * words + i / 64] |= uint64_t{1} << (i % 64);
      }
    }
  }
  // The distinct sets so far (few), each as the first byte that had it and
  // the state it leads to.
  std::vector<std::pair<int, int32_t>> distinct;
  for (int b = 0; b < 256; ++b) {
    const uint64_t* key = &accepting[b * words];
    int32_t next_state = kUnknown;
    for (const auto& [first, next] : distinct) {
      if (std::equal(key, key + words, &accepting[first * words])) {
        next_state = next;
        break;
      }
    }
    if (next_state == kUnknown) {
      std::vector<int32_t> next;
      for (size_t i = 0; i < nodes.size(); ++i) {
        if (!((key[i / 64] >> (i % 64)) & 1)) continue;
        AddClosure(Node(node_pos_[nodes[i]] + 1, node_parent_[nodes[i]]), &next);
      }
      next_state = InternState(std::move(next));
      distinct.push_back({b, next_state});
    }
    transitions_[static_cast<size_t>(state) * 256 + b] = next_state;
  }
  return transitions_[static_cast<size_t>(state) * 256 + byte];
}

const std::array<uint8_t, 256> Matcher::kClassOf = [] {
  std::array<uint8_t, 256> c{};
  for (int b = 0; b < 256; ++b) {
    uint8_t k;
    if (b >= 'a' && b <= 'z') {
      k = 0;
    } else if (b >= 'A' && b <= 'Z') {
      k = 1;
    } else if (b >= '0' && b <= '9') {
      k = 2;
    } else if (b == ' ') {
      k = 3;
    } else if (b == '-' || b == '_' || b == '.') {
      k = b == '-' ? 4 : b == '_' ? 5 : 6;
    } else if (std::strchr("!#$%&'*+/=?^`{|}~", b) != nullptr && b != 0) {
      k = 7;
    } else if (IsPlain(static_cast<uint8_t>(b))) {
      k = 8;
    } else if (b == '"' || b == '\\') {
      k = b == '"' ? 9 : 10;
    } else if (b == '\t' || b == '\n' || b == '\r') {
      k = 11;
    } else if (b < 0x80) {
      k = 12;  // other control characters and DEL
    } else {
      k = 13;  // kMultiByte
    }
    c[b] = k;
  }
  return c;
}();

bool Matcher::MultiByteCharsLeadTo(int32_t state, int32_t target) {
  // Lead bytes, how many continuation bytes follow, and the range of the
  // first one (UTF-8 without overlong forms, surrogates or values past
  // U+10FFFF); later continuation bytes are 0x80-0xBF.
  struct Lead {
    uint8_t lo, hi, follow, first_lo, first_hi;
  };
  static constexpr Lead kLeads[] = {{0xC2, 0xDF, 1, 0x80, 0xBF}, {0xE0, 0xE0, 2, 0xA0, 0xBF},
                                    {0xE1, 0xEC, 2, 0x80, 0xBF}, {0xED, 0xED, 2, 0x80, 0x9F},
                                    {0xEE, 0xEF, 2, 0x80, 0xBF}, {0xF0, 0xF0, 3, 0x90, 0xBF},
                                    {0xF1, 0xF3, 3, 0x80, 0xBF}, {0xF4, 0xF4, 3, 0x80, 0x8F}};
  // The distinct states after each byte position: few, since the grammar
  // spells a class of characters by ranges.
  std::vector<int32_t> frontier, next;
  for (const Lead& lead : kLeads) {
    frontier.clear();
    for (int b = lead.lo; b <= lead.hi; ++b)
      frontier.push_back(Step(state, static_cast<uint8_t>(b)));
    for (int k = 0; k <= lead.follow; ++k) {
      std::sort(frontier.begin(), frontier.end());
      frontier.erase(std::unique(frontier.begin(), frontier.end()), frontier.end());
      if (frontier.front() == kDead) return false;
      if (k == lead.follow) break;
      next.clear();
      const int lo = k == 0 ? lead.first_lo : 0x80, hi = k == 0 ? lead.first_hi : 0xBF;
      for (int32_t s : frontier) {
        for (int b = lo; b <= hi; ++b) next.push_back(Step(s, static_cast<uint8_t>(b)));
      }
      frontier.swap(next);
    }
    if (frontier.size() != 1 || frontier[0] != target) return false;
  }
  return true;
}

int32_t Matcher::PlainStep(int32_t s) {
  if (plain_step_[s] != kUnknown) return plain_step_[s];
  int32_t next = Step(s, ' ');
  for (int b = 0x21; b < 0x7F && next != kDead; ++b) {
    if (IsPlain(static_cast<uint8_t>(b)) && Step(s, static_cast<uint8_t>(b)) != next) next = kDead;
  }
  plain_step_[s] = next;
  return next;
}

int32_t Matcher::TextStep(int32_t s) {
  if (text_step_[s] != kUnknown) return text_step_[s];
  int32_t next = PlainStep(s);
  if (next != kDead && !MultiByteCharsLeadTo(s, next)) next = kDead;
  text_step_[s] = next;
  return next;
}

bool Matcher::TakesAnyText(int32_t state, int chars, int multibyte_chars) {
  int32_t s = state;
  for (int k = 0; k < chars; ++k) {
    const int32_t next = k < multibyte_chars ? TextStep(s) : PlainStep(s);
    if (next == kDead) return false;
    // A loop takes every later character too: those checked here, and
    // past multibyte_chars plain bytes only.
    if (next == s) return true;
    s = next;
  }
  return true;
}

bool Matcher::TakesAnyPlain(int32_t state, int bytes) { return TakesAnyText(state, bytes, 0); }

uint16_t Matcher::LoopClasses(int32_t state) {
  if (loop_classes_[state] != kUnknownClasses) return static_cast<uint16_t>(loop_classes_[state]);
  uint16_t loops = 0x1FFF;  // the single-byte classes, until a byte leaves
  for (int b = 0; b < 0x80; ++b) {
    if (Step(state, static_cast<uint8_t>(b)) != state) loops &= ~ByteClass(static_cast<uint8_t>(b));
  }
  if (Step(state, 0xC3) != kDead && MultiByteCharsLeadTo(state, state)) loops |= kMultiByte;
  loop_classes_[state] = loops;
  return loops;
}

bool Matcher::AcceptByte(uint8_t byte) {
  const int32_t next = Step(state_, byte);
  if (next == kDead) return false;
  state_ = next;
  return true;
}

bool Matcher::AcceptBytes(std::string_view bytes) {
  int32_t s = state_;
  for (char c : bytes) {
    s = Step(s, static_cast<uint8_t>(c));
    if (s == kDead) return false;
  }
  state_ = s;
  return true;
}

bool Matcher::CanContinue() const {
  const std::vector<int32_t>& nodes = states_[state_];
  return nodes.size() > 1 || nodes.front() != kDone;
}

}  // namespace grammar
}  // namespace pocket
