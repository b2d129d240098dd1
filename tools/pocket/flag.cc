#include "tools/pocket/flag.h"

#include <utility>

namespace pocket::cli {
namespace {

constexpr size_t kHelpColumn = 24;
constexpr size_t kLineWidth = 80;

// "-n, --n-predict N": the names and the value's name.
std::string Synopsis(const Flag& f) {
  std::string out;
  for (const std::string& name : Names(f)) out += (out.empty() ? "" : ", ") + name;
  std::string value = f.value;
  if (value.empty() && f.kind == ValueKind::kChoice) {
    for (const std::string& c : f.choices()) value += (value.empty() ? "" : "|") + c;
  }
  return value.empty() ? out : out + " " + value;
}

// `text` in lines of at most kLineWidth columns, each after kHelpColumn
// spaces but the first, which continues `line`.
void AppendWrapped(const std::string& text, std::string line, std::string* out) {
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find(' ', start);
    if (end == std::string::npos) end = text.size();
    const std::string word = text.substr(start, end - start);
    if (line.size() > kHelpColumn && line.size() + 1 + word.size() > kLineWidth) {
      *out += line + "\n";
      line = std::string(kHelpColumn, ' ');
    }
    if (line.size() > kHelpColumn) line += ' ';
    line += word;
    start = end + 1;
  }
  *out += line + "\n";
}

}  // namespace

std::vector<std::string> Names(const Flag& flag) {
  std::vector<std::string> names;
  size_t start = 0;
  while (start <= flag.names.size()) {
    size_t bar = flag.names.find('|', start);
    if (bar == std::string::npos) bar = flag.names.size();
    names.push_back(flag.names.substr(start, bar - start));
    start = bar + 1;
  }
  return names;
}

Flag Switch(std::string names, std::string help) {
  Flag f;
  f.names = std::move(names);
  f.help = std::move(help);
  return f;
}

Flag Text(std::string names, std::string value, std::string help) {
  Flag f = Switch(std::move(names), std::move(help));
  f.value = std::move(value);
  f.kind = ValueKind::kText;
  return f;
}

Flag Int(std::string names, std::string value, std::string fallback, int64_t min, int64_t max,
         std::string help) {
  Flag f = Text(std::move(names), std::move(value), std::move(help));
  f.kind = ValueKind::kInt;
  f.fallback = std::move(fallback);
  f.min = min;
  f.max = max;
  return f;
}

Flag Uint64(std::string names, std::string value, std::string help) {
  Flag f = Text(std::move(names), std::move(value), std::move(help));
  f.kind = ValueKind::kUint64;
  return f;
}

Flag Number(std::string names, std::string value, std::string help) {
  Flag f = Text(std::move(names), std::move(value), std::move(help));
  f.kind = ValueKind::kNumber;
  return f;
}

Flag Choice(std::string names, std::string value, std::string fallback,
            std::function<std::vector<std::string>()> choices, std::string help) {
  Flag f = Text(std::move(names), std::move(value), std::move(help));
  f.kind = ValueKind::kChoice;
  f.fallback = std::move(fallback);
  f.choices = std::move(choices);
  return f;
}

Flag Choice(std::string names, std::string fallback, std::vector<std::string> choices,
            std::string help) {
  return Choice(
      std::move(names), "", std::move(fallback), [choices = std::move(choices)] { return choices; },
      std::move(help));
}

Flag Repeatable(Flag flag) {
  flag.repeatable = true;
  return flag;
}

std::string FlagHelp(const std::vector<const FlagTable*>& tables) {
  std::string out;
  for (const FlagTable* table : tables) {
    out += "\n" + table->title + ":\n";
    for (const Flag& f : table->flags) {
      std::string help = f.help;
      if (!f.fallback.empty()) help += " (default " + f.fallback + ")";
      if (f.repeatable) help += "; repeatable";
      // A synopsis too long for its column takes a line of its own.
      std::string line = "  " + Synopsis(f);
      if (line.size() + 2 > kHelpColumn) {
        out += line + "\n";
        line.clear();
      }
      line.resize(kHelpColumn, ' ');
      AppendWrapped(help, line, &out);
    }
  }
  return out;
}

}  // namespace pocket::cli
