#include "grammar/grammar.h"

#include <algorithm>
#include <map>
#include <utility>

namespace pocket {
namespace grammar {

struct GrammarBuilder::Node {
  enum class Kind : uint8_t { kEmpty, kLiteral, kChars, kSeq, kAlt, kRepeat, kRef };
  Kind kind;
  std::vector<Expr> items;        // kSeq, kAlt; kRepeat: the one item
  std::string bytes;              // kLiteral
  std::vector<CodeRange> ranges;  // kChars: sorted, disjoint, surrogates removed
  int32_t min = 0, max = 0;       // kRepeat
  int32_t rule = -1;              // kRef
};

namespace {

using ByteSet = Grammar::ByteSet;
using ByteRange = std::pair<uint8_t, uint8_t>;

// Sorts and merges ranges, drops the surrogates and complements when asked.
std::vector<CodeRange> Normalize(std::vector<CodeRange> ranges, bool negated) {
  std::vector<CodeRange> merged;
  std::sort(ranges.begin(), ranges.end(),
            [](const CodeRange& a, const CodeRange& b) { return a.lo < b.lo; });
  for (const CodeRange& r : ranges) {
    if (r.lo > r.hi) continue;
    const CodeRange c{r.lo, std::min(r.hi, kMaxCodePoint)};
    if (c.lo > kMaxCodePoint) continue;
    if (!merged.empty() && c.lo <= merged.back().hi + 1) {
      merged.back().hi = std::max(merged.back().hi, c.hi);
    } else {
      merged.push_back(c);
    }
  }
  if (negated) {
    std::vector<CodeRange> complement;
    uint32_t next = 0;
    for (const CodeRange& r : merged) {
      if (r.lo > next) complement.push_back({next, r.lo - 1});
      next = r.hi + 1;
    }
    if (next <= kMaxCodePoint) complement.push_back({next, kMaxCodePoint});
    merged.swap(complement);
  }
  std::vector<CodeRange> out;
  for (const CodeRange& r : merged) {
    if (r.hi < 0xD800 || r.lo > 0xDFFF) {
      out.push_back(r);
      continue;
    }
    if (r.lo < 0xD800) out.push_back({r.lo, 0xD7FF});
    if (r.hi > 0xDFFF) out.push_back({0xE000, r.hi});
  }
  return out;
}

int Utf8Length(uint32_t c) { return c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4; }

// Splits [lo, hi] (no surrogates) into runs whose UTF-8 encodings are the
// byte-wise products of ranges: every code point of a run has the same
// length and the same leading bytes except within the ranges.
void Utf8Runs(uint32_t lo, uint32_t hi, std::vector<std::vector<ByteRange>>* out) {
  for (uint32_t boundary : {0x7Fu, 0x7FFu, 0xFFFFu}) {
    if (lo <= boundary && hi > boundary) {
      Utf8Runs(lo, boundary, out);
      Utf8Runs(boundary + 1, hi, out);
      return;
    }
  }
  const int n = Utf8Length(lo);
  for (int i = 1; i < n; ++i) {
    const uint32_t mask = (1u << (6 * i)) - 1;
    if ((lo & ~mask) == (hi & ~mask)) continue;
    if ((lo & mask) != 0) {
      Utf8Runs(lo, lo | mask, out);
      Utf8Runs((lo | mask) + 1, hi, out);
      return;
    }
    if ((hi & mask) != mask) {
      Utf8Runs(lo, (hi & ~mask) - 1, out);
      Utf8Runs(hi & ~mask, hi, out);
      return;
    }
  }
  std::string a, b;
  AppendUtf8(lo, &a);
  AppendUtf8(hi, &b);
  std::vector<ByteRange> run;
  for (int i = 0; i < n; ++i) {
    run.push_back({static_cast<uint8_t>(a[i]), static_cast<uint8_t>(b[i])});
  }
  out->push_back(std::move(run));
}

bool SetEmpty(const ByteSet& s) { return (s[0] | s[1] | s[2] | s[3]) == 0; }

ByteSet SetOf(uint8_t lo, uint8_t hi) {
  ByteSet s{};
  for (int b = lo; b <= hi; ++b) s[b >> 6] |= uint64_t{1} << (b & 63);
  return s;
}

}  // namespace

void AppendUtf8(uint32_t c, std::string* out) {
  if (c < 0x80) {
    out->push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (c >> 6)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else if (c < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (c >> 12)));
    out->push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (c >> 18)));
    out->push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
}

int DecodeUtf8(std::string_view s, size_t pos, uint32_t* cp) {
  const auto byte = [&](size_t i) { return static_cast<uint8_t>(s[i]); };
  const uint8_t b0 = byte(pos);
  int n;
  uint32_t c, min;
  if (b0 < 0x80) {
    *cp = b0;
    return 1;
  } else if (b0 >= 0xC2 && b0 <= 0xDF) {
    n = 2, c = b0 & 0x1F, min = 0x80;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    n = 3, c = b0 & 0x0F, min = 0x800;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    n = 4, c = b0 & 0x07, min = 0x10000;
  } else {
    return 0;
  }
  if (pos + n > s.size()) return 0;
  for (int i = 1; i < n; ++i) {
    if ((byte(pos + i) & 0xC0) != 0x80) return 0;
    c = (c << 6) | (byte(pos + i) & 0x3F);
  }
  if (c < min || c > kMaxCodePoint || (c >= 0xD800 && c <= 0xDFFF)) return 0;
  *cp = c;
  return n;
}

GrammarBuilder::GrammarBuilder() = default;
GrammarBuilder::~GrammarBuilder() = default;

GrammarBuilder::Expr GrammarBuilder::Empty() {
  nodes_.push_back({Node::Kind::kEmpty});
  return static_cast<Expr>(nodes_.size() - 1);
}

GrammarBuilder::Expr GrammarBuilder::Literal(std::string_view bytes) {
  Node n{Node::Kind::kLiteral};
  n.bytes = std::string(bytes);
  nodes_.push_back(std::move(n));
  return static_cast<Expr>(nodes_.size() - 1);
}

GrammarBuilder::Expr GrammarBuilder::Chars(std::vector<CodeRange> ranges, bool negated) {
  Node n{Node::Kind::kChars};
  n.ranges = Normalize(std::move(ranges), negated);
  nodes_.push_back(std::move(n));
  return static_cast<Expr>(nodes_.size() - 1);
}

GrammarBuilder::Expr GrammarBuilder::Seq(std::vector<Expr> items) {
  if (items.size() == 1) return items[0];
  Node n{Node::Kind::kSeq};
  n.items = std::move(items);
  nodes_.push_back(std::move(n));
  return static_cast<Expr>(nodes_.size() - 1);
}

GrammarBuilder::Expr GrammarBuilder::Alt(std::vector<Expr> items) {
  if (items.size() == 1) return items[0];
  Node n{Node::Kind::kAlt};
  n.items = std::move(items);
  nodes_.push_back(std::move(n));
  return static_cast<Expr>(nodes_.size() - 1);
}

GrammarBuilder::Expr GrammarBuilder::Repeat(Expr item, int32_t min, int32_t max) {
  Node n{Node::Kind::kRepeat};
  n.items = {item};
  n.min = min;
  n.max = max;
  nodes_.push_back(std::move(n));
  return static_cast<Expr>(nodes_.size() - 1);
}

GrammarBuilder::Expr GrammarBuilder::Ref(int32_t rule) {
  Node n{Node::Kind::kRef};
  n.rule = rule;
  nodes_.push_back(std::move(n));
  return static_cast<Expr>(nodes_.size() - 1);
}

int32_t GrammarBuilder::Rule(std::string_view name) {
  for (size_t i = 0; i < rule_names_.size(); ++i) {
    if (rule_names_[i] == name) return static_cast<int32_t>(i);
  }
  rule_names_.emplace_back(name);
  rule_bodies_.push_back(-1);
  return static_cast<int32_t>(rule_names_.size() - 1);
}

int32_t GrammarBuilder::NewRule(std::string_view hint) {
  rule_names_.push_back(std::string(hint) + "-" + std::to_string(rule_names_.size()));
  rule_bodies_.push_back(-1);
  return static_cast<int32_t>(rule_names_.size() - 1);
}

bool GrammarBuilder::Defined(int32_t rule) const { return rule_bodies_[rule] >= 0; }

void GrammarBuilder::Define(int32_t rule, Expr body) { rule_bodies_[rule] = body; }

const std::string& GrammarBuilder::RuleName(int32_t rule) const { return rule_names_[rule]; }

// Lowers expression trees to the flat form. Each nested alternative,
// non-ASCII character class and repetition tail becomes a helper rule named
// after the rule it came from, so errors in them still point at the source.
class GrammarBuilder::Lowering {
 public:
  Lowering(const GrammarBuilder& b, Grammar* g) : b_(b), g_(g) {}

  Status Run(int32_t root) {
    const int32_t n = static_cast<int32_t>(b_.rule_names_.size());
    g_->rules_.resize(n);
    g_->names_ = b_.rule_names_;
    // Rules are lowered when first referenced, so only reachable ones exist.
    lowered_.assign(n, false);
    pending_.push_back(root);
    lowered_[root] = true;
    while (!pending_.empty()) {
      const int32_t r = pending_.back();
      pending_.pop_back();
      const Expr body = b_.rule_bodies_[r];
      if (body < 0) {
        return Errorf(StatusCode::kInvalidArgument, "grammar: rule '%s' is used but not defined",
                      b_.rule_names_[r].c_str());
      }
      current_ = b_.rule_names_[r];
      std::vector<std::vector<Grammar::Element>> alts;
      const Node& node = b_.nodes_[body];
      if (node.kind == Node::Kind::kAlt) {
        for (Expr e : node.items) alts.push_back(LowerSeq(e));
      } else {
        alts.push_back(LowerSeq(body));
      }
      SetAlternatives(r, alts);
    }
    g_->root_ = root;
    return Status::Ok();
  }

  // Every item repeated more than once, and the rule it came from.
  const std::vector<std::pair<Grammar::Element, std::string>>& repeated() const {
    return repeated_;
  }

  // Drops the alternatives that can never finish (a character class with
  // no characters, such as a JSON schema's `false`, or a rule that always
  // needs itself), so every state the matcher reaches can still complete:
  // the language is unchanged, and a token mask never leads into a dead
  // end. A root left without alternatives is an error.
  Status Prune() {
    const auto& el = g_->elements_;
    const int32_t n = g_->num_rules();
    std::vector<char> productive(n, 0);
    const auto alt_productive = [&](int32_t p) {
      for (; el[p].kind != Grammar::Kind::kEnd; ++p) {
        if (el[p].kind == Grammar::Kind::kBytes ? SetEmpty(g_->byte_sets_[el[p].arg])
                                                : !productive[el[p].arg]) {
          return false;
        }
      }
      return true;
    };
    for (bool changed = true; changed;) {
      changed = false;
      for (int32_t r = 0; r < n; ++r) {
        if (productive[r]) continue;
        for (int32_t p : g_->rules_[r]) {
          if (alt_productive(p)) {
            productive[r] = changed = true;
            break;
          }
        }
      }
    }
    if (!productive[g_->root_]) {
      return Errorf(StatusCode::kInvalidArgument,
                    "grammar: rule '%s' can never finish (every alternative needs itself, or a "
                    "character class with no characters)",
                    g_->names_[g_->root_].c_str());
    }
    for (auto& alts : g_->rules_) {
      alts.erase(
          std::remove_if(alts.begin(), alts.end(), [&](int32_t p) { return !alt_productive(p); }),
          alts.end());
    }
    return Status::Ok();
  }

 private:
  using Elements = std::vector<Grammar::Element>;

  void SetAlternatives(int32_t rule, const std::vector<Elements>& alts) {
    for (const Elements& alt : alts) {
      g_->rules_[rule].push_back(static_cast<int32_t>(g_->elements_.size()));
      g_->elements_.insert(g_->elements_.end(), alt.begin(), alt.end());
      g_->elements_.push_back({Grammar::Kind::kEnd, 0});
    }
  }

  int32_t Helper(const char* what, const std::vector<Elements>& alts) {
    const int32_t r = g_->num_rules();
    g_->rules_.emplace_back();
    g_->names_.push_back(current_ + "/" + what);
    lowered_.push_back(true);
    SetAlternatives(r, alts);
    return r;
  }

  Grammar::Element Bytes(const ByteSet& set) {
    auto it = set_ids_.find(set);
    if (it == set_ids_.end()) {
      it = set_ids_.emplace(set, static_cast<int32_t>(g_->byte_sets_.size())).first;
      g_->byte_sets_.push_back(set);
    }
    return {Grammar::Kind::kBytes, it->second};
  }

  Grammar::Element RefTo(int32_t rule) {
    if (rule < static_cast<int32_t>(b_.rule_names_.size()) && !lowered_[rule]) {
      lowered_[rule] = true;
      pending_.push_back(rule);
    }
    return {Grammar::Kind::kRule, rule};
  }

  void LowerChars(const std::vector<CodeRange>& ranges, Elements* out) {
    if (ranges.empty() || ranges.back().hi < 0x80) {
      ByteSet set{};
      for (const CodeRange& r : ranges) {
        const ByteSet one = SetOf(static_cast<uint8_t>(r.lo), static_cast<uint8_t>(r.hi));
        for (int i = 0; i < 4; ++i) set[i] |= one[i];
      }
      out->push_back(Bytes(set));
      return;
    }
    auto it = class_rules_.find(ranges);
    if (it == class_rules_.end()) {
      std::vector<std::vector<ByteRange>> runs;
      for (const CodeRange& r : ranges) Utf8Runs(r.lo, r.hi, &runs);
      std::vector<Elements> alts;
      Elements ascii;  // the one-byte runs share a single alternative
      ByteSet ascii_set{};
      for (const auto& run : runs) {
        if (run.size() == 1) {
          const ByteSet one = SetOf(run[0].first, run[0].second);
          for (int i = 0; i < 4; ++i) ascii_set[i] |= one[i];
          continue;
        }
        Elements alt;
        for (const ByteRange& br : run) alt.push_back(Bytes(SetOf(br.first, br.second)));
        alts.push_back(std::move(alt));
      }
      if (ascii_set != ByteSet{}) alts.insert(alts.begin(), Elements{Bytes(ascii_set)});
      it = class_rules_.emplace(ranges, Helper("chars", alts)).first;
    }
    out->push_back({Grammar::Kind::kRule, it->second});
  }

  // The elements of `e` as one element: itself when it lowers to exactly
  // one, else a helper rule.
  Grammar::Element Single(Expr e, const char* what) {
    Elements seq = LowerSeq(e);
    if (seq.size() == 1) return seq[0];
    return {Grammar::Kind::kRule, Helper(what, {seq})};
  }

  void Lower(Expr e, Elements* out) {
    const Node& n = b_.nodes_[e];
    switch (n.kind) {
      case Node::Kind::kEmpty:
        return;
      case Node::Kind::kLiteral:
        for (char c : n.bytes) {
          const uint8_t b = static_cast<uint8_t>(c);
          out->push_back(Bytes(SetOf(b, b)));
        }
        return;
      case Node::Kind::kChars:
        LowerChars(n.ranges, out);
        return;
      case Node::Kind::kSeq:
        for (Expr item : n.items) Lower(item, out);
        return;
      case Node::Kind::kAlt: {
        std::vector<Elements> alts;
        for (Expr item : n.items) alts.push_back(LowerSeq(item));
        out->push_back({Grammar::Kind::kRule, Helper("alt", alts)});
        return;
      }
      case Node::Kind::kRef:
        out->push_back(RefTo(n.rule));
        return;
      case Node::Kind::kRepeat: {
        const Grammar::Element item = Single(n.items[0], "item");
        if (n.max != 1 || n.min > 1) repeated_.push_back({item, current_});
        for (int32_t i = 0; i < n.min; ++i) out->push_back(item);
        if (n.max == kUnbounded) {
          // tail ::= item tail | (empty): right recursion, which the matcher
          // runs in constant stack depth.
          const int32_t tail = Helper("star", {});
          SetAlternatives(tail, {{item, {Grammar::Kind::kRule, tail}}, {}});
          out->push_back({Grammar::Kind::kRule, tail});
        } else if (n.max > n.min) {
          // opt_k ::= item opt_(k-1) | (empty), opt_1 ::= item | (empty).
          int32_t opt = Helper("opt", {{item}, {}});
          for (int32_t k = 2; k <= n.max - n.min; ++k) {
            opt = Helper("opt", {{item, {Grammar::Kind::kRule, opt}}, {}});
          }
          out->push_back({Grammar::Kind::kRule, opt});
        }
        return;
      }
    }
  }

  Elements LowerSeq(Expr e) {
    Elements out;
    Lower(e, &out);
    return out;
  }

  struct RangesLess {
    bool operator()(const std::vector<CodeRange>& a, const std::vector<CodeRange>& b) const {
      return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end(),
                                          [](const CodeRange& x, const CodeRange& y) {
                                            return x.lo != y.lo ? x.lo < y.lo : x.hi < y.hi;
                                          });
    }
  };

  const GrammarBuilder& b_;
  Grammar* g_;
  std::string current_;

  std::vector<std::pair<Grammar::Element, std::string>> repeated_;
  std::vector<bool> lowered_;
  std::vector<int32_t> pending_;
  std::map<ByteSet, int32_t> set_ids_;
  std::map<std::vector<CodeRange>, int32_t, RangesLess> class_rules_;
};

namespace {

// Rejects left recursion, which would make the matcher's closure loop
// forever, and repeating something that can match the empty string, which
// makes every way to split the input a separate parse: `(a?){2,300}` holds
// hundreds of parses at every step, nested repetitions of it millions.
Status CheckRecursion(const Grammar& g,
                      const std::vector<std::pair<Grammar::Element, std::string>>& repeated) {
  const auto& el = g.elements();
  const int32_t n = g.num_rules();
  std::vector<char> nullable(n, 0);
  for (bool changed = true; changed;) {
    changed = false;
    for (int32_t r = 0; r < n; ++r) {
      for (int32_t p : g.alternatives(r)) {
        bool all_null = true;
        for (; el[p].kind != Grammar::Kind::kEnd; ++p) {
          all_null = all_null && el[p].kind == Grammar::Kind::kRule && nullable[el[p].arg];
        }
        if (all_null && !nullable[r]) nullable[r] = changed = true;
      }
    }
  }
  for (const auto& [item, rule] : repeated) {
    if (item.kind == Grammar::Kind::kRule && nullable[item.arg]) {
      return Errorf(StatusCode::kInvalidArgument,
                    "grammar: rule '%s' repeats something that can match the empty string "
                    "(repeat a non-empty part instead: a{0,3} rather than (a?){3})",
                    rule.c_str());
    }
  }
  // Left recursion: a cycle in "r can start with s" (s after only nullable
  // elements), found by a depth-first search with colours.
  std::vector<std::vector<int32_t>> starts(n);
  for (int32_t r = 0; r < n; ++r) {
    for (int32_t p : g.alternatives(r)) {
      for (; el[p].kind == Grammar::Kind::kRule; ++p) {
        starts[r].push_back(el[p].arg);
        if (!nullable[el[p].arg]) break;
      }
    }
  }
  std::vector<char> colour(n, 0);  // 0 new, 1 on the path, 2 done
  for (int32_t r0 = 0; r0 < n; ++r0) {
    if (colour[r0]) continue;
    std::vector<std::pair<int32_t, size_t>> stack{{r0, 0}};
    colour[r0] = 1;
    while (!stack.empty()) {
      auto& [r, next] = stack.back();
      if (next == starts[r].size()) {
        colour[r] = 2;
        stack.pop_back();
        continue;
      }
      const int32_t s = starts[r][next++];
      if (colour[s] == 1) {
        return Errorf(StatusCode::kInvalidArgument,
                      "grammar: rule '%s' is left-recursive: it can reach itself without "
                      "consuming input (rewrite it right-recursively, and do not repeat "
                      "something that can match the empty string)",
                      g.rule_name(s).c_str());
      }
      if (colour[s] == 0) {
        colour[s] = 1;
        stack.push_back({s, 0});
      }
    }
  }
  return Status::Ok();
}

}  // namespace

StatusOr<std::shared_ptr<const Grammar>> GrammarBuilder::Build(int32_t root) const {
  if (root < 0 || root >= static_cast<int32_t>(rule_names_.size())) {
    return Errorf(StatusCode::kInvalidArgument, "grammar: no root rule");
  }
  auto g = std::make_shared<Grammar>();
  Lowering lowering(*this, g.get());
  POCKET_RETURN_IF_ERROR(lowering.Run(root));
  POCKET_RETURN_IF_ERROR(lowering.Prune());
  POCKET_RETURN_IF_ERROR(CheckRecursion(*g, lowering.repeated()));
  return std::shared_ptr<const Grammar>(std::move(g));
}

}  // namespace grammar
}  // namespace pocket
