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
    states_.push_back(std::move(nodes));
    transitions_.resize(transitions_.size() + 256, kUnknown);
  }
  return it->second;
}

int32_t Matcher::ComputeStep(int32_t state, uint8_t byte) {
  const auto& el = grammar_->elements();
  std::vector<int32_t> next;
  // Copied: interning nodes below may reallocate states_.
  const std::vector<int32_t> nodes = states_[state];
  for (int32_t node : nodes) {
    if (node == kDone) continue;
    const int32_t pos = node_pos_[node];
    if (!grammar_->ByteIn(el[pos].arg, byte)) continue;
    AddClosure(Node(pos + 1, node_parent_[node]), &next);
  }
  const int32_t id = InternState(std::move(next));
  transitions_[static_cast<size_t>(state) * 256 + byte] = id;
  return id;
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
