#include "grammar/tool_calls.h"

#include <algorithm>
#include <set>
#include <utility>

#include "grammar/json_schema.h"
#include "util/json_util.h"

namespace pocket {
namespace grammar {
namespace {

using Expr = GrammarBuilder::Expr;
using OrderedJson = nlohmann::ordered_json;

constexpr char kCallOpen[] = "<tool_call>";
constexpr char kCallClose[] = "</tool_call>";
constexpr size_t kMaxNameLength = 64;

bool NameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-' || c == '.';
}

bool IsUtf8(std::string_view text) {
  uint32_t code_point = 0;
  for (size_t pos = 0; pos < text.size();) {
    const int n = DecodeUtf8(text, pos, &code_point);
    if (n == 0) return false;
    pos += static_cast<size_t>(n);
  }
  return true;
}

StatusOr<OrderedJson> ParseOrdered(std::string_view text, const std::string& what) {
  OrderedJson j = OrderedJson::parse(text.begin(), text.end(), nullptr, false);
  if (j.is_discarded()) {
    return Errorf(StatusCode::kInvalidArgument, "%s is not valid JSON", what.c_str());
  }
  return j;
}

std::string Quoted(const std::string& s) {
  return OrderedJson(s).dump(-1, ' ', false, OrderedJson::error_handler_t::replace);
}

// Python's json.dumps(ensure_ascii=False) layout, members in their order.
void AppendPython(const OrderedJson& j, std::string* out) {
  if (j.is_object()) {
    out->push_back('{');
    bool first = true;
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (!first) out->append(", ");
      first = false;
      out->append(Quoted(it.key())).append(": ");
      AppendPython(it.value(), out);
    }
    out->push_back('}');
  } else if (j.is_array()) {
    out->push_back('[');
    for (size_t i = 0; i < j.size(); ++i) {
      if (i > 0) out->append(", ");
      AppendPython(j[i], out);
    }
    out->push_back(']');
  } else {
    out->append(j.dump(-1, ' ', false, OrderedJson::error_handler_t::replace));
  }
}

// Any text without `pattern` (ASCII) in it: one rule per length of the
// pattern's prefix the text ends with (Knuth-Morris-Pratt's automaton), so
// the matcher's state says how much of the pattern has just been seen.
Expr TextWithout(GrammarBuilder* b, const std::string& pattern) {
  const size_t m = pattern.size();
  std::vector<int32_t> rules;
  for (size_t k = 0; k < m; ++k) rules.push_back(b->NewRule("text"));
  std::vector<CodeRange> pattern_chars;
  for (char c : std::set<char>(pattern.begin(), pattern.end())) {
    pattern_chars.push_back({static_cast<uint32_t>(c), static_cast<uint32_t>(c)});
  }
  for (size_t k = 0; k < m; ++k) {
    std::vector<Expr> alts = {b->Empty(),
                              b->Seq({b->Chars(pattern_chars, true), b->Ref(rules[0])})};
    for (const CodeRange& r : pattern_chars) {
      // The longest prefix of the pattern that the text then ends with.
      const std::string seen = pattern.substr(0, k) + static_cast<char>(r.lo);
      size_t next = std::min(seen.size(), m);
      while (next > 0 && seen.compare(seen.size() - next, next, pattern, 0, next) != 0) --next;
      if (next == m) continue;  // the whole pattern: not allowed
      alts.push_back(
          b->Seq({b->Literal(std::string(1, static_cast<char>(r.lo))), b->Ref(rules[next])}));
    }
    b->Define(rules[k], b->Alt(std::move(alts)));
  }
  return b->Ref(rules[0]);
}

}  // namespace

Status ValidateTools(const std::vector<ToolDefinition>& tools) {
  std::set<std::string> names;
  for (size_t i = 0; i < tools.size(); ++i) {
    const ToolDefinition& t = tools[i];
    if (t.name.empty() || t.name.size() > kMaxNameLength ||
        !std::all_of(t.name.begin(), t.name.end(), NameChar)) {
      return Errorf(StatusCode::kInvalidArgument,
                    "tool %zu: the name '%s' must be 1 to 64 of the characters A-Z a-z 0-9 _ - .",
                    i, t.name.c_str());
    }
    if (!names.insert(t.name).second) {
      return Errorf(StatusCode::kInvalidArgument, "tool %zu: a second tool named '%s'", i,
                    t.name.c_str());
    }
    if (!IsUtf8(t.description)) {
      return Errorf(StatusCode::kInvalidArgument, "tool '%s': the description is not UTF-8",
                    t.name.c_str());
    }
    if (!t.parameters.empty()) {
      POCKET_RETURN_IF_ERROR(
          ParseOrdered(t.parameters, "tool '" + t.name + "': the parameters").status());
    }
  }
  return Status::Ok();
}

StatusOr<std::vector<ToolDefinition>> ParseToolDefinitions(std::string_view json_array) {
  POCKET_ASSIGN_OR_RETURN(OrderedJson tools, ParseOrdered(json_array, "the tools"));
  if (!tools.is_array()) {
    return Status(StatusCode::kInvalidArgument, "the tools must be a JSON array");
  }
  std::vector<ToolDefinition> out;
  for (size_t i = 0; i < tools.size(); ++i) {
    const OrderedJson* f = &tools[i];
    if (f->is_object() && f->contains("function")) f = &(*f)["function"];
    const auto text = [&](const char* key, std::string* value) {
      if (!f->is_object() || !f->contains(key)) return true;
      const OrderedJson& v = (*f)[key];
      if (!v.is_string()) return false;
      *value = v.get<std::string>();
      return true;
    };
    ToolDefinition t;
    if (!f->is_object() || !f->contains("name") || !text("name", &t.name) ||
        !text("description", &t.description)) {
      return Errorf(StatusCode::kInvalidArgument,
                    "tool %zu: expected an object with a string \"name\" and an optional string "
                    "\"description\" (or one inside \"function\")",
                    i);
    }
    if (f->contains("parameters")) {
      t.parameters = (*f)["parameters"].dump(-1, ' ', false, OrderedJson::error_handler_t::replace);
    }
    out.push_back(std::move(t));
  }
  POCKET_RETURN_IF_ERROR(ValidateTools(out));
  return out;
}

StatusOr<std::string> ToolSignatureJson(const ToolDefinition& tool) {
  POCKET_RETURN_IF_ERROR(ValidateTools({tool}));
  std::string out = "{\"type\": \"function\", \"function\": {\"name\": " + Quoted(tool.name) +
                    ", \"description\": " + Quoted(tool.description) + ", \"parameters\": ";
  if (tool.parameters.empty()) {
    out += "{\"type\": \"object\", \"properties\": {}}";
  } else {
    POCKET_ASSIGN_OR_RETURN(OrderedJson params, ParseOrdered(tool.parameters, "parameters"));
    AppendPython(params, &out);
  }
  return out + "}}";
}

StatusOr<std::shared_ptr<const Grammar>> CompileToolCallGrammar(
    const std::vector<ToolDefinition>& tools, ToolChoice choice) {
  if (tools.empty()) {
    return Status(StatusCode::kInvalidArgument, "tool calls: no tools given");
  }
  POCKET_RETURN_IF_ERROR(ValidateTools(tools));
  GrammarBuilder b;
  JsonSchemaRules schemas(&b);
  const Expr ws = schemas.Ws();
  std::vector<Expr> bodies;
  for (const ToolDefinition& t : tools) {
    POCKET_ASSIGN_OR_RETURN(
        Json params,
        ParseJson(t.parameters.empty() ? "{\"type\": \"object\"}" : t.parameters, "parameters"));
    StatusOr<Expr> args = schemas.Compile(params);
    if (!args.ok()) {
      return Errorf(StatusCode::kInvalidArgument, "tool '%s': %s", t.name.c_str(),
                    args.status().message().c_str());
    }
    bodies.push_back(b.Seq({b.Literal("\"" + t.name + "\""), ws, b.Literal(","), ws,
                            b.Literal("\"arguments\""), ws, b.Literal(":"), ws, *args}));
  }
  const int32_t call = b.NewRule("tool-call");
  b.Define(call, b.Seq({b.Literal(kCallOpen), ws, b.Literal("{"), ws, b.Literal("\"name\""), ws,
                        b.Literal(":"), ws, b.Alt(std::move(bodies)), ws, b.Literal("}"), ws,
                        b.Literal(kCallClose)}));
  const int32_t root = b.Rule("root");
  if (choice == ToolChoice::kAuto) {
    const Expr text = TextWithout(&b, kCallOpen);
    b.Define(root,
             b.Seq({text, b.Repeat(b.Seq({b.Ref(call), text}), 0, GrammarBuilder::kUnbounded)}));
  } else {
    // Qwen3 ends its thoughts with "</think>\n\n".
    const Expr think = b.Seq({b.Literal("<think>"), TextWithout(&b, "</think>"),
                              b.Literal("</think>"), b.Repeat(b.Literal("\n"), 0, 2)});
    b.Define(root, b.Seq({b.Repeat(think, 0, 1), b.Ref(call),
                          b.Repeat(b.Seq({ws, b.Ref(call)}), 0, GrammarBuilder::kUnbounded)}));
  }
  return b.Build(root);
}

std::vector<ToolCall> ParseToolCalls(std::string_view text) {
  std::vector<ToolCall> calls;
  const std::string_view open = kCallOpen, close = kCallClose;
  for (size_t pos = text.find(open); pos != std::string_view::npos; pos = text.find(open, pos)) {
    const size_t begin = pos + open.size();
    const size_t end = text.find(close, begin);
    if (end == std::string_view::npos) break;
    pos = end + close.size();
    StatusOr<OrderedJson> j = ParseOrdered(text.substr(begin, end - begin), "tool call");
    if (!j.ok() || !j->is_object()) continue;
    auto name = j->find("name");
    auto args = j->find("arguments");
    if (name == j->end() || !name->is_string() || args == j->end()) continue;
    calls.push_back({name->get<std::string>(),
                     args->dump(-1, ' ', false, OrderedJson::error_handler_t::replace)});
  }
  return calls;
}

}  // namespace grammar
}  // namespace pocket
