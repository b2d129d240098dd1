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
    plain_run_.push_back(-1);
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

uint8_t Matcher::PlainRun(int32_t state) {
  // Follows the common successors until a state whose run is known, one
  // without a common successor, one that loops, or the cap; then each state
  // on the way gets one more than the next. A cycle through several states
  // stops at the cap, which undercounts: still a run the state does take.
  std::vector<int32_t> chain;
  int32_t s = state;
  int run = 0;
  for (;;) {
    if (plain_run_[s] >= 0) {
      run = plain_run_[s];
      break;
    }
    int32_t next = Step(s, ' ');
    for (int b = 0x21; b < 0x7F && next != kDead; ++b) {
      if (IsPlain(static_cast<uint8_t>(b)) && Step(s, static_cast<uint8_t>(b)) != next) {
        next = kDead;
      }
    }
    if (next == s || next == kDead) {
      run = next == s ? kPlainForever : 0;
      plain_run_[s] = static_cast<int16_t>(run);
      break;
    }
    chain.push_back(s);
    if (chain.size() + 1 >= kPlainForever) break;  // run 0 past the cap
    s = next;
  }
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    if (run != kPlainForever) run = std::min(run + 1, kPlainForever - 1);
    plain_run_[*it] = static_cast<int16_t>(run);
  }
  return static_cast<uint8_t>(plain_run_[state]);
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
