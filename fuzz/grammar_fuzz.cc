// libFuzzer target for the grammar front ends and the matcher. The first
// input byte picks the front end (0 GBNF, 1 JSON Schema, 2 regex, 3 tool
// definitions, a JSON array, compiled to the tool-call grammar); the rest,
// up to the first NUL, is its text, and what follows the NUL is fed to the
// compiled grammar's matcher byte by byte. A front end must either compile
// or fail with InvalidArgument (never crash, hang or throw); the matcher
// must keep its invariants: a rejected byte leaves the state unchanged, and
// an accepted byte leads to a state from which the grammar can still
// finish, so some byte or the end is allowed. With tools, the input is
// also read back as a reply holding tool calls.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "grammar/gbnf.h"
#include "grammar/json_schema.h"
#include "grammar/matcher.h"
#include "grammar/regex.h"
#include "grammar/tool_calls.h"

namespace {

bool AnyByteOrEnd(pocket::grammar::Matcher* m) {
  if (m->IsComplete()) return true;
  for (int b = 0; b < 256; ++b) {
    if (m->Step(m->state(), static_cast<uint8_t>(b)) != pocket::grammar::Matcher::kDead)
      return true;
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1 || size > 8192) return 0;
  const std::string_view rest(reinterpret_cast<const char*>(data + 1), size - 1);
  const size_t nul = rest.find('\0');
  const std::string_view text = rest.substr(0, nul);
  const std::string_view input = nul == std::string_view::npos ? "" : rest.substr(nul + 1);
  pocket::StatusOr<std::shared_ptr<const pocket::grammar::Grammar>> g =
      std::shared_ptr<const pocket::grammar::Grammar>();
  switch (data[0] % 4) {
    case 0:
      g = pocket::grammar::CompileGbnf(text);
      break;
    case 1:
      g = pocket::grammar::CompileJsonSchema(text);
      break;
    case 2:
      g = pocket::grammar::CompileRegex(text);
      break;
    default: {
      auto tools = pocket::grammar::ParseToolDefinitions(text);
      g = tools.ok()
              ? pocket::grammar::CompileToolCallGrammar(*tools, pocket::grammar::ToolChoice::kAuto)
              : tools.status();
      pocket::grammar::ParseToolCalls(input);
      break;
    }
  }
  if (!g.ok()) {
    if (g.status().code() != pocket::StatusCode::kInvalidArgument) std::abort();
    return 0;
  }
  pocket::grammar::Matcher m(*g);
  if (!AnyByteOrEnd(&m)) std::abort();
  for (char c : input) {
    const int32_t before = m.state();
    if (!m.AcceptByte(static_cast<uint8_t>(c))) {
      if (m.state() != before) std::abort();
      continue;
    }
    if (!AnyByteOrEnd(&m)) std::abort();
  }
  return 0;
}
