#include "grammar/json_schema.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "grammar/regex.h"

namespace pocket {
namespace grammar {
namespace {

using Expr = GrammarBuilder::Expr;

// Keywords that describe a schema without constraining instances.
const std::set<std::string> kAnnotations = {
    "$schema",  "$id",        "$comment", "$anchor",   "title", "description", "default",
    "examples", "deprecated", "readOnly", "writeOnly", "$defs", "definitions"};

// The keywords each type uses; a keyword of no supported type is an error.
const std::set<std::string> kObjectKeys = {"properties", "required", "additionalProperties"};
const std::set<std::string> kArrayKeys = {"items", "prefixItems", "minItems", "maxItems"};
const std::set<std::string> kStringKeys = {"minLength", "maxLength", "pattern", "format"};
const std::set<std::string> kNumberKeys = {"minimum", "maximum", "exclusiveMinimum",
                                           "exclusiveMaximum"};
const std::set<std::string> kGeneralKeys = {"type",  "enum",  "const", "anyOf",
                                            "oneOf", "allOf", "$ref"};

// Integer digits of a generated number (a double holds 15 to 17 exactly).
constexpr int kMaxDigits = 16;

// Bounds of integer ranges: beyond this, a bound does not narrow anything a
// model would write, and the arithmetic below stays far from overflow.
constexpr int64_t kIntLimit = 1000000000000000000;  // 1e18

// String formats as regexes (kWhole: none of their characters needs a JSON
// escape). Dates know the months' lengths but not leap years (February has
// 29 days); a leap second is allowed at any minute; email is RFC 5321's
// dot-atom local part at a domain of two or more labels (no quoted local
// parts, no address literals).
const std::string kDate =
    "[0-9]{4}-((0[13578]|1[02])-(0[1-9]|[12][0-9]|3[01])|(0[469]|11)-(0[1-9]|[12][0-9]|30)|"
    "02-(0[1-9]|[12][0-9]))";
const std::string kTime =
    "([01][0-9]|2[0-3]):[0-5][0-9]:([0-5][0-9]|60)(\\.[0-9]+)?([Zz]|[+-]([01][0-9]|2[0-3]):[0-5]"
    "[0-9])";
const std::map<std::string, std::string> kFormats = {
    {"date", kDate},
    {"time", kTime},
    {"date-time", kDate + "[Tt]" + kTime},
    {"uuid", "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"},
    {"email",
     "[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(\\.[A-Za-z0-9!#$%&'*+/"
     "=?^_`{|}~-]+)*@[A-Za-z0-9-]+(\\.[A-Za-z0-9-]+)+"},
};

std::string Digits(uint64_t v) { return std::to_string(v); }

// %XX escapes decoded (a malformed one is kept as it is).
std::string PercentDecoded(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && std::isxdigit(static_cast<unsigned char>(s[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
      out.push_back(static_cast<char>(std::stoi(s.substr(i + 1, 2), nullptr, 16)));
      i += 2;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

uint64_t Pow10(int n) {
  uint64_t v = 1;
  for (int i = 0; i < n; ++i) v *= 10;
  return v;
}

}  // namespace

class SchemaCompiler {
 public:
  explicit SchemaCompiler(GrammarBuilder* builder) : b_(*builder) {}

  // The values `root` accepts; its $refs resolve inside it.
  StatusOr<Expr> CompileRoot(const Json& root) {
    if (root.is_boolean() && !root.get<bool>()) {
      return Unsupported("the schema is false: no value matches", "#");
    }
    root_ = &root;
    refs_.clear();  // a pointer names a place in this schema only
    StatusOr<Expr> body = Compile(root, "#");
    root_ = nullptr;
    return body;
  }
  Expr Ws() { return Named("ws", &SchemaCompiler::DefineWs); }

 private:
  static Status Unsupported(const std::string& what, const std::string& path) {
    return Errorf(StatusCode::kInvalidArgument, "json schema: %s (at %s)", what.c_str(),
                  path.c_str());
  }

  // Common rules, defined on first use.
  Expr Named(const char* name, Expr (SchemaCompiler::*define)()) {
    const int32_t r = b_.Rule(name);
    if (!b_.Defined(r)) {
      b_.Define(r, b_.Empty());  // a placeholder, so recursion finds the rule
      b_.Define(r, (this->*define)());
    }
    return b_.Ref(r);
  }
  // Nothing, one space, or a line break and an indentation: every layout a
  // JSON printer uses, and nothing for a model to ramble in.
  Expr DefineWs() {
    const Expr indent = b_.Repeat(b_.Chars({{' ', ' '}, {'\t', '\t'}}), 0, kMaxIndent);
    return b_.Alt({b_.Empty(), b_.Literal(" "), b_.Seq({b_.Literal("\n"), indent})});
  }
  Expr Value() { return Named("value", &SchemaCompiler::DefineValue); }
  Expr DefineValue() {
    const Expr member = b_.Seq({String(), Ws(), b_.Literal(":"), Ws(), Value()});
    const Expr object =
        b_.Seq({b_.Literal("{"), Ws(), b_.Repeat(b_.Seq({member, Repeat(member)}), 0, 1), Ws(),
                b_.Literal("}")});
    const Expr array =
        b_.Seq({b_.Literal("["), Ws(), b_.Repeat(b_.Seq({Value(), Repeat(Value())}), 0, 1), Ws(),
                b_.Literal("]")});
    return b_.Alt({object, array, String(), Number(), b_.Literal("true"), b_.Literal("false"),
                   b_.Literal("null")});
  }
  // (sep item)*
  Expr Repeat(Expr item) {
    return b_.Repeat(b_.Seq({Separator(), item}), 0, GrammarBuilder::kUnbounded);
  }
  Expr Separator() { return b_.Seq({Ws(), b_.Literal(","), Ws()}); }
  Expr Char() { return Named("char", &SchemaCompiler::DefineChar); }
  Expr DefineChar() {
    const Expr escape = b_.Seq(
        {b_.Literal("\\"),
         b_.Alt({b_.Chars({{'"', '"'},
                           {'\\', '\\'},
                           {'/', '/'},
                           {'b', 'b'},
                           {'f', 'f'},
                           {'n', 'n'},
                           {'r', 'r'},
                           {'t', 't'}}),
                 b_.Seq({b_.Literal("u"),
                         b_.Repeat(b_.Chars({{'0', '9'}, {'a', 'f'}, {'A', 'F'}}), 4, 4)})})});
    return b_.Alt({b_.Chars({{0, 0x1F}, {'"', '"'}, {'\\', '\\'}}, true), escape});
  }
  Expr String() { return Named("string", &SchemaCompiler::DefineString); }
  Expr DefineString() {
    return b_.Seq(
        {b_.Literal("\""), b_.Repeat(Char(), 0, GrammarBuilder::kUnbounded), b_.Literal("\"")});
  }
  Expr Integer() { return Named("integer", &SchemaCompiler::DefineInteger); }
  Expr DefineInteger() { return b_.Seq({b_.Repeat(b_.Literal("-"), 0, 1), Natural()}); }
  // At most kMaxDigits digits before the point and a two-digit exponent:
  // every number a parser reads into a double stays finite.
  Expr Natural() {
    return b_.Alt(
        {b_.Literal("0"),
         b_.Seq({b_.Chars({{'1', '9'}}), b_.Repeat(b_.Chars({{'0', '9'}}), 0, kMaxDigits - 1)})});
  }
  Expr Number() { return Named("number", &SchemaCompiler::DefineNumber); }
  Expr DefineNumber() { return b_.Seq({b_.Repeat(b_.Literal("-"), 0, 1), UnsignedNumber()}); }
  Expr UnsignedNumber() {
    const Expr digits = b_.Repeat(b_.Chars({{'0', '9'}}), 1, GrammarBuilder::kUnbounded);
    const Expr fraction = b_.Repeat(b_.Seq({b_.Literal("."), digits}), 0, 1);
    const Expr exponent = b_.Repeat(b_.Seq({b_.Chars({{'e', 'e'}, {'E', 'E'}}),
                                            b_.Repeat(b_.Chars({{'-', '-'}, {'+', '+'}}), 0, 1),
                                            b_.Repeat(b_.Chars({{'0', '9'}}), 1, 2)}),
                                    0, 1);
    return b_.Seq({Natural(), fraction, exponent});
  }

  // Decimal integers of `a.size()` digits between a and b (same length).
  Expr SameLength(const std::string& a, const std::string& b) {
    if (a.empty()) return b_.Empty();
    const auto digit = [&](char lo, char hi) {
      return b_.Chars({{static_cast<uint32_t>(lo), static_cast<uint32_t>(hi)}});
    };
    const std::string ra = a.substr(1), rb = b.substr(1);
    if (a[0] == b[0]) return b_.Seq({digit(a[0], a[0]), SameLength(ra, rb)});
    const std::string zeros(ra.size(), '0'), nines(ra.size(), '9');
    if (ra == zeros && rb == nines) {
      return b_.Seq({digit(a[0], b[0]), b_.Repeat(digit('0', '9'), static_cast<int32_t>(ra.size()),
                                                  static_cast<int32_t>(ra.size()))});
    }
    std::vector<Expr> alts = {b_.Seq({digit(a[0], a[0]), SameLength(ra, nines)})};
    if (a[0] + 1 <= b[0] - 1) {
      alts.push_back(b_.Seq(
          {digit(a[0] + 1, b[0] - 1), b_.Repeat(digit('0', '9'), static_cast<int32_t>(ra.size()),
                                                static_cast<int32_t>(ra.size()))}));
    }
    alts.push_back(b_.Seq({digit(b[0], b[0]), SameLength(zeros, rb)}));
    return b_.Alt(std::move(alts));
  }

  // Canonical decimal naturals in [lo, hi] (hi unbounded when !has_hi).
  Expr NaturalRange(uint64_t lo, bool has_hi, uint64_t hi) {
    const int lo_len = static_cast<int>(Digits(lo).size());
    const int hi_len = has_hi ? static_cast<int>(Digits(hi).size()) : lo_len;
    std::vector<Expr> alts;
    for (int len = lo_len; len <= hi_len; ++len) {
      const uint64_t a = len == lo_len ? lo : Pow10(len - 1);
      const uint64_t b = has_hi && len == hi_len ? hi : Pow10(len) - 1;
      alts.push_back(SameLength(Digits(a), Digits(b)));
    }
    if (!has_hi && lo_len < kMaxDigits) {
      alts.push_back(b_.Seq(
          {b_.Chars({{'1', '9'}}), b_.Repeat(b_.Chars({{'0', '9'}}), lo_len, kMaxDigits - 1)}));
    }
    return b_.Alt(std::move(alts));
  }

  StatusOr<Expr> IntegerRange(const Json& s, const std::string& path) {
    bool has_lo = false, has_hi = false;
    int64_t lo = 0, hi = 0;
    for (const char* key : {"minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"}) {
      const Json* v = FindMember(s, key);
      if (v == nullptr) continue;
      if (!v->is_number()) return Unsupported(std::string("'") + key + "' must be a number", path);
      const double d = v->get<double>();
      if (std::fabs(d) >= static_cast<double>(kIntLimit)) continue;  // narrows nothing here
      const std::string k = key;
      const bool lower = k == "minimum" || k == "exclusiveMinimum";
      const bool exclusive = k[0] == 'e';
      if (lower) {
        int64_t bound = static_cast<int64_t>(std::ceil(d));
        if (exclusive && static_cast<double>(bound) == d) ++bound;
        lo = has_lo ? std::max(lo, bound) : bound;
        has_lo = true;
      } else {
        int64_t bound = static_cast<int64_t>(std::floor(d));
        if (exclusive && static_cast<double>(bound) == d) --bound;
        hi = has_hi ? std::min(hi, bound) : bound;
        has_hi = true;
      }
    }
    if (!has_lo && !has_hi) return Integer();
    if (has_lo && has_hi && lo > hi) return Unsupported("no integer satisfies the bounds", path);
    std::vector<Expr> alts;
    if (!has_lo || lo < 0) {
      // Negative values v in [lo, min(hi, -1)]: "-" then |v| in
      // [max(1, -hi), -lo].
      const int64_t top = has_hi ? std::min<int64_t>(hi, -1) : -1;
      if (!has_lo || lo <= top) {
        const uint64_t mag_lo = static_cast<uint64_t>(-top);
        alts.push_back(
            b_.Seq({b_.Literal("-"),
                    NaturalRange(mag_lo, has_lo, has_lo ? static_cast<uint64_t>(-lo) : 0)}));
      }
    }
    if (!has_hi || hi >= 0) {
      const int64_t bottom = has_lo ? std::max<int64_t>(lo, 0) : 0;
      if (!has_hi || bottom <= hi) {
        alts.push_back(NaturalRange(static_cast<uint64_t>(bottom), has_hi,
                                    has_hi ? static_cast<uint64_t>(hi) : 0));
      }
    }
    return b_.Alt(std::move(alts));
  }

  StatusOr<Expr> Compile(const Json& s, const std::string& path) {
    if (s.is_boolean()) {
      // false inside a schema: a branch, property or element that cannot
      // be (an empty character class matches nothing).
      return s.get<bool>() ? Value() : b_.Chars({});
    }
    if (!s.is_object()) return Unsupported("a schema must be an object or a boolean", path);
    std::vector<std::string> keys;
    for (auto it = s.begin(); it != s.end(); ++it) {
      const std::string& k = it.key();
      if (kAnnotations.count(k)) continue;
      if (!kGeneralKeys.count(k) && !kObjectKeys.count(k) && !kArrayKeys.count(k) &&
          !kStringKeys.count(k) && !kNumberKeys.count(k)) {
        return Unsupported("unsupported keyword '" + k + "'", path);
      }
      keys.push_back(k);
    }
    const auto only = [&](const std::set<std::string>& allowed, const char* what) -> Status {
      for (const std::string& k : keys) {
        if (!allowed.count(k)) {
          return Unsupported("'" + k + "' beside '" + what + "' is not supported", path);
        }
      }
      return Status::Ok();
    };
    if (const Json* ref = FindMember(s, "$ref")) {
      POCKET_RETURN_IF_ERROR(only({"$ref"}, "$ref"));
      if (!ref->is_string()) return Unsupported("'$ref' must be a string", path);
      return Ref(ref->get<std::string>(), path);
    }
    for (const char* key : {"anyOf", "oneOf", "allOf"}) {
      const Json* list = FindMember(s, key);
      if (list == nullptr) continue;
      POCKET_RETURN_IF_ERROR(only({key}, key));
      if (!list->is_array() || list->empty()) {
        return Unsupported(std::string("'") + key + "' must be a non-empty array", path);
      }
      if (key[1] == 'l' && list->size() != 1) {
        return Unsupported("'allOf' with more than one schema is not supported", path);
      }
      // oneOf is compiled as anyOf: exclusivity is not enforced.
      std::vector<Expr> alts;
      for (size_t i = 0; i < list->size(); ++i) {
        POCKET_ASSIGN_OR_RETURN(Expr e,
                                Compile((*list)[i], path + "/" + key + "/" + std::to_string(i)));
        alts.push_back(e);
      }
      return b_.Alt(std::move(alts));
    }
    std::vector<std::string> types;
    if (const Json* type = FindMember(s, "type")) {
      if (type->is_string()) {
        types.push_back(type->get<std::string>());
      } else if (type->is_array() && !type->empty()) {
        for (const Json& t : *type) {
          if (!t.is_string()) return Unsupported("'type' must name types", path);
          types.push_back(t.get<std::string>());
        }
      } else {
        return Unsupported("'type' must be a string or a non-empty array", path);
      }
    }
    const Json* enum_values = FindMember(s, "enum");
    const Json* const_value = FindMember(s, "const");
    if (enum_values != nullptr || const_value != nullptr) {
      POCKET_RETURN_IF_ERROR(only({"enum", "const", "type"}, enum_values ? "enum" : "const"));
      std::vector<Json> values;
      if (const_value != nullptr) {
        values.push_back(*const_value);
      } else if (enum_values->is_array()) {
        values.assign(enum_values->begin(), enum_values->end());
      } else {
        return Unsupported("'enum' must be an array", path);
      }
      std::vector<Expr> alts;
      for (const Json& v : values) {
        if (!types.empty() && !HasType(v, types)) continue;
        alts.push_back(b_.Literal(DumpJson(v)));
      }
      if (alts.empty()) return Unsupported("no value of 'enum'/'const' matches 'type'", path);
      return b_.Alt(std::move(alts));
    }
    if (types.empty()) {
      // No type: a value of any type, each constrained by its own keywords.
      const bool constrained = std::any_of(keys.begin(), keys.end(), [](const std::string& k) {
        return kObjectKeys.count(k) || kArrayKeys.count(k) || kStringKeys.count(k) ||
               kNumberKeys.count(k);
      });
      if (!constrained) return Value();
      types = {"object", "array", "string", "number", "boolean", "null"};
    }
    std::vector<Expr> alts;
    for (const std::string& t : types) {
      POCKET_ASSIGN_OR_RETURN(Expr e, Typed(s, t, path));
      alts.push_back(e);
    }
    return b_.Alt(std::move(alts));
  }

  static bool HasType(const Json& v, const std::vector<std::string>& types) {
    for (const std::string& t : types) {
      if ((t == "object" && v.is_object()) || (t == "array" && v.is_array()) ||
          (t == "string" && v.is_string()) || (t == "number" && v.is_number()) ||
          (t == "integer" &&
           (v.is_number_integer() ||
            (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>()))) ||
          (t == "boolean" && v.is_boolean()) || (t == "null" && v.is_null())) {
        return true;
      }
    }
    return false;
  }

  StatusOr<Expr> Typed(const Json& s, const std::string& type, const std::string& path) {
    if (type == "object") return Object(s, path);
    if (type == "array") return Array(s, path);
    if (type == "string") return StringSchema(s, path);
    if (type == "integer") return IntegerRange(s, path);
    if (type == "number") {
      for (const char* key : {"maximum", "exclusiveMinimum", "exclusiveMaximum"}) {
        if (FindMember(s, key) != nullptr) {
          return Unsupported(std::string("'") + key +
                                 "' narrows only integers (type 'integer'); for numbers only "
                                 "'minimum': 0 is supported",
                             path);
        }
      }
      if (const Json* min = FindMember(s, "minimum")) {
        if (!min->is_number() || min->get<double>() != 0.0) {
          return Unsupported(
              "'minimum' on a number is supported only as 0 (use type 'integer' for others)", path);
        }
        return UnsignedNumber();
      }
      return Number();
    }
    if (type == "boolean") return b_.Alt({b_.Literal("true"), b_.Literal("false")});
    if (type == "null") return b_.Literal("null");
    return Unsupported("unknown type '" + type + "'", path);
  }

  StatusOr<Expr> StringSchema(const Json& s, const std::string& path) {
    int64_t min = 0, max = GrammarBuilder::kUnbounded;
    POCKET_RETURN_IF_ERROR(GetOptInt(s, "minLength", &min, path.c_str()));
    POCKET_RETURN_IF_ERROR(GetOptInt(s, "maxLength", &max, path.c_str()));
    const Json* pattern = FindMember(s, "pattern");
    const Json* format = FindMember(s, "format");
    const bool lengths = FindMember(s, "minLength") || FindMember(s, "maxLength");
    if ((pattern || format) && lengths) {
      return Unsupported("'minLength'/'maxLength' beside 'pattern' or 'format' is not supported",
                         path);
    }
    if (pattern && format) return Unsupported("'pattern' beside 'format' is not supported", path);
    const Expr quote = b_.Literal("\"");
    if (pattern != nullptr) {
      if (!pattern->is_string()) return Unsupported("'pattern' must be a string", path);
      POCKET_ASSIGN_OR_RETURN(Expr body,
                              ParseRegex(pattern->get<std::string>(), RegexMode::kJsonSearch, &b_));
      return b_.Seq({quote, body, quote});
    }
    if (format != nullptr) {
      if (!format->is_string()) return Unsupported("'format' must be a string", path);
      auto it = kFormats.find(format->get<std::string>());
      if (it == kFormats.end()) {
        return Unsupported("unsupported format '" + format->get<std::string>() +
                               "' (supported: date, time, date-time, uuid, email)",
                           path);
      }
      POCKET_ASSIGN_OR_RETURN(Expr body, ParseRegex(it->second, RegexMode::kWhole, &b_));
      return b_.Seq({quote, body, quote});
    }
    if (min < 0 || min > 10000 || max > 10000 || (max != GrammarBuilder::kUnbounded && max < min)) {
      return Unsupported(
          "'minLength'/'maxLength' must satisfy 0 <= minLength <= maxLength <= "
          "10000",
          path);
    }
    if (min == 0 && max == GrammarBuilder::kUnbounded) return String();
    return b_.Seq(
        {quote, b_.Repeat(Char(), static_cast<int32_t>(min), static_cast<int32_t>(max)), quote});
  }

  StatusOr<Expr> Array(const Json& s, const std::string& path) {
    int64_t min = 0, max = -1;
    POCKET_RETURN_IF_ERROR(GetOptInt(s, "minItems", &min, path.c_str()));
    POCKET_RETURN_IF_ERROR(GetOptInt(s, "maxItems", &max, path.c_str()));
    if (min < 0 || min > 10000 || max > 10000 || (max >= 0 && max < min)) {
      return Unsupported("'minItems'/'maxItems' must satisfy 0 <= minItems <= maxItems <= 10000",
                         path);
    }
    std::vector<Expr> prefix;
    if (const Json* p = FindMember(s, "prefixItems")) {
      if (!p->is_array()) return Unsupported("'prefixItems' must be an array", path);
      for (size_t i = 0; i < p->size(); ++i) {
        POCKET_ASSIGN_OR_RETURN(Expr e,
                                Compile((*p)[i], path + "/prefixItems/" + std::to_string(i)));
        prefix.push_back(e);
      }
    }
    const int64_t k = static_cast<int64_t>(prefix.size());
    Expr item = -1;
    const Json* items = FindMember(s, "items");
    if (items != nullptr && items->is_boolean() && !items->get<bool>()) {
      max = max < 0 ? k : std::min(max, k);
    } else if (items != nullptr) {
      POCKET_ASSIGN_OR_RETURN(item, Compile(*items, path + "/items"));
    } else {
      item = Value();
    }
    if (max >= 0 && min > max) return Unsupported("'minItems' exceeds the items allowed", path);
    const auto element = [&](int64_t j) { return j < k ? prefix[j] : item; };
    // Elements 0..mandatory-1 always come; each later one only after the one
    // before: opt(j) = (sep e_j opt(j+1))?. Past the prefix every element is
    // `item`, so that run is one repetition of (sep item).
    const int64_t mandatory = std::max<int64_t>(min, 1);
    const int64_t plain_from = std::max(k, mandatory);
    Expr tail = b_.Empty();
    if (max < 0) {
      tail = b_.Repeat(b_.Seq({Separator(), item}), 0, GrammarBuilder::kUnbounded);
    } else if (max > plain_from) {
      tail = b_.Repeat(b_.Seq({Separator(), item}), 0, static_cast<int32_t>(max - plain_from));
    }
    const int64_t optional_end = max < 0 ? plain_from : std::min(plain_from, max);
    for (int64_t j = optional_end - 1; j >= mandatory; --j) {
      tail = b_.Repeat(b_.Seq({Separator(), element(j), tail}), 0, 1);
    }
    std::vector<Expr> body;
    for (int64_t j = 0; j < mandatory; ++j) {
      if (j > 0) body.push_back(Separator());
      body.push_back(element(j));
    }
    body.push_back(tail);
    Expr elements = b_.Seq(std::move(body));
    if (min == 0) elements = max == 0 ? b_.Empty() : b_.Repeat(elements, 0, 1);
    return b_.Seq({b_.Literal("["), Ws(), elements, Ws(), b_.Literal("]")});
  }

  // A JSON string naming a key outside `names`: a trie of the names over
  // their characters, where every character off the trie leads to any
  // string and the closing quote is allowed except at a name's end.
  Expr OtherKey(const std::vector<std::string>& names) {
    struct TrieNode {
      std::map<uint32_t, int> children;
      bool end = false;
    };
    std::vector<TrieNode> trie(1);
    for (const std::string& name : names) {
      int node = 0;
      for (size_t i = 0; i < name.size();) {
        uint32_t cp;
        const int n = DecodeUtf8(name, i, &cp);
        if (n == 0) break;
        i += static_cast<size_t>(n);
        auto it = trie[node].children.find(cp);
        if (it == trie[node].children.end()) {
          trie.emplace_back();
          it = trie[node].children.emplace(cp, static_cast<int>(trie.size() - 1)).first;
        }
        node = it->second;
      }
      trie[node].end = true;
    }
    const Expr rest = b_.Seq({b_.Repeat(Char(), 0, GrammarBuilder::kUnbounded), b_.Literal("\"")});
    std::vector<int32_t> rules(trie.size());
    for (size_t i = 0; i < trie.size(); ++i) rules[i] = b_.NewRule("other-key");
    for (size_t i = 0; i < trie.size(); ++i) {
      std::vector<Expr> alts;
      std::vector<CodeRange> taken;
      for (const auto& [cp, child] : trie[i].children) {
        alts.push_back(b_.Seq({JsonStringChars({{cp, cp}}, false, &b_), b_.Ref(rules[child])}));
        taken.push_back({cp, cp});
      }
      alts.push_back(b_.Seq({JsonStringChars(taken, true, &b_), rest}));
      if (!trie[i].end) alts.push_back(b_.Literal("\""));
      b_.Define(rules[i], b_.Alt(std::move(alts)));
    }
    return b_.Seq({b_.Literal("\""), b_.Ref(rules[0])});
  }

  StatusOr<Expr> Object(const Json& s, const std::string& path) {
    std::vector<std::pair<std::string, Expr>> props;
    const Json* properties = FindMember(s, "properties");
    if (properties != nullptr) {
      if (!properties->is_object()) return Unsupported("'properties' must be an object", path);
      for (auto it = properties->begin(); it != properties->end(); ++it) {
        POCKET_ASSIGN_OR_RETURN(Expr e, Compile(it.value(), path + "/properties/" + it.key()));
        props.push_back({it.key(), e});
      }
    }
    std::set<std::string> required;
    if (const Json* r = FindMember(s, "required")) {
      if (!r->is_array()) return Unsupported("'required' must be an array", path);
      for (const Json& name : *r) {
        if (!name.is_string()) return Unsupported("'required' must list strings", path);
        required.insert(name.get<std::string>());
      }
    }
    for (const std::string& name : required) {
      if (properties == nullptr || FindMember(*properties, name.c_str()) == nullptr) {
        return Unsupported("required property '" + name + "' is not in 'properties'", path);
      }
    }
    Expr extra = -1;
    const Json* additional = FindMember(s, "additionalProperties");
    if (additional == nullptr || !additional->is_boolean() || additional->get<bool>()) {
      Expr value = -1;
      if (additional != nullptr && !additional->is_boolean()) {
        POCKET_ASSIGN_OR_RETURN(value, Compile(*additional, path + "/additionalProperties"));
      } else {
        value = Value();
      }
      std::vector<std::string> names;
      for (const auto& p : props) names.push_back(p.first);
      extra = b_.Seq({OtherKey(names), Ws(), b_.Literal(":"), Ws(), value});
    }
    // first(i): members i.. when none came before; after(i): when some did.
    const size_t n = props.size();
    std::vector<int32_t> first(n + 1), after(n + 1);
    for (size_t i = 0; i <= n; ++i) {
      first[i] = b_.NewRule("first");
      after[i] = b_.NewRule("after");
    }
    if (extra >= 0) {
      const Expr more = b_.Repeat(b_.Seq({Separator(), extra}), 0, GrammarBuilder::kUnbounded);
      b_.Define(after[n], more);
      b_.Define(first[n], b_.Repeat(b_.Seq({extra, more}), 0, 1));
    } else {
      b_.Define(after[n], b_.Empty());
      b_.Define(first[n], b_.Empty());
    }
    for (size_t i = n; i-- > 0;) {
      const Expr member = b_.Seq({b_.Literal(DumpJson(Json(props[i].first))), Ws(), b_.Literal(":"),
                                  Ws(), props[i].second});
      const bool req = required.count(props[i].first) > 0;
      const Expr with_sep = b_.Seq({Separator(), member, b_.Ref(after[i + 1])});
      b_.Define(after[i], req ? with_sep : b_.Alt({with_sep, b_.Ref(after[i + 1])}));
      const Expr here = b_.Seq({member, b_.Ref(after[i + 1])});
      b_.Define(first[i], req ? here : b_.Alt({here, b_.Ref(first[i + 1])}));
    }
    return b_.Seq({b_.Literal("{"), Ws(), b_.Ref(first[0]), Ws(), b_.Literal("}")});
  }

  StatusOr<Expr> Ref(const std::string& ref, const std::string& path) {
    auto it = refs_.find(ref);
    if (it != refs_.end()) return b_.Ref(it->second);
    if (ref.empty() || ref[0] != '#') {
      return Unsupported("'$ref' to '" + ref + "': only local references (#...) are supported",
                         path);
    }
    // A URI fragment (percent-encoded) holding a JSON pointer into this
    // document: /-separated, ~1 is '/', ~0 is '~'.
    const std::string pointer = PercentDecoded(ref);
    const Json* target = root_;
    size_t pos = 1;
    while (pos < pointer.size()) {
      if (pointer[pos] != '/')
        return Unsupported("'$ref' '" + ref + "' is not a JSON pointer", path);
      const size_t next = std::min(pointer.find('/', pos + 1), pointer.size());
      std::string token = pointer.substr(pos + 1, next - pos - 1);
      for (size_t t = 0; (t = token.find('~', t)) != std::string::npos; ++t) {
        if (t + 1 < token.size() && (token[t + 1] == '0' || token[t + 1] == '1')) {
          token.replace(t, 2, token[t + 1] == '0' ? "~" : "/");
        }
      }
      const Json* child = nullptr;
      if (target->is_object()) {
        child = FindMember(*target, token.c_str());
      } else if (target->is_array() && !token.empty() &&
                 token.find_first_not_of("0123456789") == std::string::npos && token.size() < 9 &&
                 std::stoul(token) < target->size()) {
        child = &(*target)[std::stoul(token)];
      }
      if (child == nullptr) return Unsupported("'$ref' '" + ref + "' points at nothing", path);
      target = child;
      pos = next;
    }
    const int32_t rule = b_.NewRule("ref");
    refs_[ref] = rule;
    POCKET_ASSIGN_OR_RETURN(Expr body, Compile(*target, ref));
    b_.Define(rule, body);
    return b_.Ref(rule);
  }

  const Json* root_ = nullptr;
  GrammarBuilder& b_;
  std::map<std::string, int32_t> refs_;
};

namespace {

// Where and why text is not JSON, in nlohmann's words ("parse error at
// line 1, column 9: ..."): a second pass with an event handler that stops
// at the error, since the parser reports it only through a handler when it
// may not throw.
class ErrorLocator : public nlohmann::json_sax<Json> {
 public:
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return true; }
  bool key(string_t&) override { return true; }
  bool end_object() override { return true; }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    message = e.what();
    const size_t cut = message.find("] ");  // drop nlohmann's "[json.exception...]" tag
    if (cut != std::string::npos) message = message.substr(cut + 2);
    return false;
  }
  std::string message = "not valid JSON";
};

std::string ParseErrorText(std::string_view text) {
  ErrorLocator locator;
  Json::sax_parse(text.begin(), text.end(), &locator);
  return locator.message;
}

// The JSON helpers report malformed input as a corrupt file; a schema is
// the caller's argument.
Status AsInvalidArgument(const Status& s) {
  return s.ok() ? s : Status(StatusCode::kInvalidArgument, s.message());
}

}  // namespace

StatusOr<std::shared_ptr<const Grammar>> CompileJsonSchemaValue(const Json& schema) {
  GrammarBuilder builder;
  SchemaCompiler compiler(&builder);
  const int32_t root = builder.Rule("root");
  StatusOr<Expr> body = compiler.CompileRoot(schema);
  if (!body.ok()) return AsInvalidArgument(body.status());
  builder.Define(root, *body);
  auto g = builder.Build(root);
  if (!g.ok()) return AsInvalidArgument(g.status());
  return g;
}

StatusOr<std::shared_ptr<const Grammar>> CompileJsonSchema(std::string_view schema_json) {
  auto schema = ParseJson(schema_json, "json schema");
  if (!schema.ok()) {
    return Errorf(StatusCode::kInvalidArgument, "json schema: %s",
                  ParseErrorText(schema_json).c_str());
  }
  return CompileJsonSchemaValue(*schema);
}

JsonSchemaRules::JsonSchemaRules(GrammarBuilder* builder)
    : compiler_(std::make_unique<SchemaCompiler>(builder)) {}
JsonSchemaRules::~JsonSchemaRules() = default;

StatusOr<GrammarBuilder::Expr> JsonSchemaRules::Compile(const Json& schema) {
  StatusOr<Expr> body = compiler_->CompileRoot(schema);
  if (!body.ok()) return AsInvalidArgument(body.status());
  return body;
}

GrammarBuilder::Expr JsonSchemaRules::Ws() { return compiler_->Ws(); }

std::shared_ptr<const Grammar> JsonGrammar() {
  static const std::shared_ptr<const Grammar> g = *CompileJsonSchemaValue(Json::object());
  return g;
}

}  // namespace grammar
}  // namespace pocket
