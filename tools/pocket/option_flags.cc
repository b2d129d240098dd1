#include "tools/pocket/option_flags.h"

#include <cctype>

namespace pocket::cli {
namespace {

struct OptionFlag {
  const char* option;  // as include/pocket/pocket.h or the library's option structs spell it
  const char* flag;
  const char* value;  // the flag's value as --help names it
};

// Every option a library message may name, and the flag that sets it.
constexpr OptionFlag kOptionFlags[] = {
    {"budget_bytes", "--budget", "MIB"},      {"kv_type", "--kv", "TYPE"},
    {"kv_policy", "--kv-policy", "POLICY"},   {"backend", "--backend", "NAME"},
    {"quant_math", "--quant-math", "MATH"},   {"threads", "--threads", "N"},
    {"cpu_target", "--cpu-target", "NAME"},   {"quant", "--quant", "TYPE"},
    {"embed_quant", "--embed-quant", "TYPE"}, {"group", "--group", "N"},
    {"layout", "--layout", "LAYOUT"},         {"tokenizer_path", "--tokenizer", "FILE"},
};

bool IsNameChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// The option whose name starts `text` at `i` as a whole word, or null.
const OptionFlag* OptionAt(const std::string& text, size_t i, size_t* length) {
  if (i > 0 && (IsNameChar(text[i - 1]) || text[i - 1] == '-')) return nullptr;
  for (const OptionFlag& o : kOptionFlags) {
    const std::string name = o.option;
    if (text.compare(i, name.size(), name) != 0) continue;
    const size_t end = i + name.size();
    if (end < text.size() && IsNameChar(text[end])) continue;
    *length = name.size();
    return &o;
  }
  return nullptr;
}

}  // namespace

std::string InFlagTerms(const std::string& message) {
  std::string out;
  for (size_t i = 0; i < message.size();) {
    size_t length = 0;
    const OptionFlag* o = OptionAt(message, i, &length);
    const bool with_value =
        o != nullptr && i + length < message.size() && message[i + length] == '=';
    if (with_value) {
      out += std::string(o->flag) + ' ';
      i += length + 1;
    } else if (o != nullptr && std::string(o->option).find('_') != std::string::npos) {
      out += std::string(o->flag) + ' ' + o->value;
      i += length;
    } else {
      out += message[i++];
    }
  }
  return out;
}

std::string InFlagTerms(const Status& status) { return InFlagTerms(status.ToString()); }

}  // namespace pocket::cli
