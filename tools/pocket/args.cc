#include "tools/pocket/args.h"

#include <strings.h>
#include <algorithm>
#include <cerrno>
#include <cstdlib>

namespace pocket::cli {
namespace {

// The help switch every command takes.
const Flag& HelpFlag() {
  static const Flag help = Switch("-h|--help", "show this help");
  return help;
}

// Whether `name` is one of the flag's; *key is then its first.
bool HasName(const Flag& flag, const std::string& name, std::string* key) {
  const std::vector<std::string> names = Names(flag);
  if (std::find(names.begin(), names.end(), name) == names.end()) return false;
  *key = names.front();
  return true;
}

bool ParseInt(const std::string& text, int64_t* out) {
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno == ERANGE) return false;
  *out = v;
  return true;
}

}  // namespace

Args::Args(std::vector<const FlagTable*> tables) : tables_(std::move(tables)) {}

const Flag* Args::Find(const std::string& name, std::string* key) const {
  if (HasName(HelpFlag(), name, key)) return &HelpFlag();
  for (const FlagTable* table : tables_) {
    for (const Flag& f : table->flags) {
      if (HasName(f, name, key)) return &f;
    }
  }
  return nullptr;
}

bool Args::Check(const Flag& flag, const std::string& name, std::string* text) {
  const std::string& v = *text;
  switch (flag.kind) {
    case ValueKind::kSwitch:
    case ValueKind::kText:
      return true;
    case ValueKind::kInt: {
      int64_t n = 0;
      if (ParseInt(v, &n) && n >= flag.min && n <= flag.max) return true;
      error_ = "option '" + name + "' needs an integer in [" + std::to_string(flag.min) + ", " +
               std::to_string(flag.max) + "], got '" + v + "'";
      return false;
    }
    case ValueKind::kUint64: {
      // strtoull would take "-1" as 2^64 - 1.
      const bool digits = !v.empty() && v[0] >= '0' && v[0] <= '9';
      errno = 0;
      char* end = nullptr;
      if (digits) std::strtoull(v.c_str(), &end, 10);
      if (!digits || *end != '\0') {
        error_ = "option '" + name + "' needs an integer in [0, 2^64 - 1], got '" + v + "'";
        return false;
      }
      if (errno == ERANGE) {
        error_ = "option '" + name + "' got " + v +
                 ", larger than 2^64 - 1 = 18446744073709551615; give a smaller number";
        return false;
      }
      return true;
    }
    case ValueKind::kNumber: {
      errno = 0;
      char* end = nullptr;
      std::strtod(v.c_str(), &end);
      if (errno == 0 && end != v.c_str() && *end == '\0') return true;
      error_ = "option '" + name + "' needs a number, got '" + v + "'";
      return false;
    }
    case ValueKind::kChoice: {
      std::string listed;
      for (const std::string& c : flag.choices()) {
        if (strcasecmp(c.c_str(), v.c_str()) == 0) {
          *text = c;
          return true;
        }
        listed += (listed.empty() ? "" : ", ") + c;
      }
      error_ = "option '" + name + "' takes one of " + listed + " (any case), got '" + v + "'";
      return false;
    }
  }
  return false;
}

bool Args::Parse(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--") {
      for (++i; i < argc; ++i) positional_.push_back(argv[i]);
      break;
    }
    if (a.size() < 2 || a[0] != '-') {
      positional_.push_back(a);
      continue;
    }
    std::string value;
    bool inline_value = false;
    const size_t eq = a.find('=');
    if (a.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = a.substr(eq + 1);
      a = a.substr(0, eq);
      inline_value = true;
    }
    std::string key;
    const Flag* flag = Find(a, &key);
    if (flag == nullptr) {
      error_ = "unknown option '" + a + "'";
      return false;
    }
    if (flag->kind == ValueKind::kSwitch) {
      if (inline_value) {
        error_ = "option '" + a + "' takes no value";
        return false;
      }
      values_[key] = {"1"};
      continue;
    }
    if (!inline_value) {
      if (i + 1 >= argc) {
        error_ = "option '" + a + "' needs a value";
        return false;
      }
      value = argv[++i];
    }
    if (!Check(*flag, a, &value)) return false;
    std::vector<std::string>& values = values_[key];
    if (!flag->repeatable) values.clear();
    values.push_back(value);
  }
  return true;
}

bool Args::Has(const std::string& key) const { return values_.count(key) != 0; }

std::string Args::Get(const std::string& key) const {
  auto it = values_.find(key);
  if (it != values_.end()) return it->second.back();
  std::string unused;
  const Flag* flag = Find(key, &unused);
  return flag == nullptr ? std::string() : flag->fallback;
}

int64_t Args::Int(const std::string& key) const {
  int64_t v = 0;
  ParseInt(Get(key), &v);
  return v;
}

uint64_t Args::Uint64(const std::string& key) const {
  return std::strtoull(Get(key).c_str(), nullptr, 10);
}

double Args::Number(const std::string& key) const { return std::strtod(Get(key).c_str(), nullptr); }

const std::vector<std::string>& Args::All(const std::string& key) const {
  static const std::vector<std::string> kNone;
  auto it = values_.find(key);
  return it == values_.end() ? kNone : it->second;
}

}  // namespace pocket::cli
