#include "tools/pocket/args.h"

#include <cerrno>
#include <cstdlib>

namespace pocket::cli {

Args::Args(std::vector<std::string> value_flags, std::vector<std::string> bool_flags) {
  auto add = [this](const std::string& spec, bool takes_value) {
    std::string key;
    size_t start = 0;
    while (start <= spec.size()) {
      size_t bar = spec.find('|', start);
      if (bar == std::string::npos) bar = spec.size();
      const std::string name = spec.substr(start, bar - start);
      if (key.empty()) key = name;
      alias_[name] = key;
      start = bar + 1;
    }
    if (takes_value) value_keys_.insert(key);
  };
  for (const auto& f : value_flags) add(f, true);
  for (const auto& f : bool_flags) add(f, false);
}

std::string Args::Canonical(const std::string& flag, bool* takes_value) const {
  auto it = alias_.find(flag);
  if (it == alias_.end()) return std::string();
  *takes_value = value_keys_.count(it->second) != 0;
  return it->second;
}

bool Args::Parse(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.size() < 2 || a[0] != '-' || a == "--") {
      if (a == "--") {
        for (++i; i < argc; ++i) positional_.push_back(argv[i]);
        break;
      }
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
    bool takes_value = false;
    const std::string key = Canonical(a, &takes_value);
    if (key.empty()) {
      error_ = "unknown option '" + a + "'";
      return false;
    }
    if (takes_value) {
      if (!inline_value) {
        if (i + 1 >= argc) {
          error_ = "option '" + a + "' needs a value";
          return false;
        }
        value = argv[++i];
      }
      values_[key] = value;
    } else {
      if (inline_value) {
        error_ = "option '" + a + "' takes no value";
        return false;
      }
      values_[key] = "1";
    }
  }
  return true;
}

bool Args::Has(const std::string& key) const { return values_.count(key) != 0; }

std::string Args::Get(const std::string& key, const std::string& def) const {
  auto it = values_.find(key);
  return it == values_.end() ? def : it->second;
}

bool Args::GetInt(const std::string& key, int64_t* out) {
  auto it = values_.find(key);
  if (it == values_.end()) return true;
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(it->second.c_str(), &end, 10);
  if (end == it->second.c_str() || *end != '\0') {
    error_ = "option '" + key + "' needs an integer, got '" + it->second + "'";
    return false;
  }
  if (errno == ERANGE) {
    error_ = "option '" + key + "' got " + it->second +
             ", outside the integers it takes ([-2^63, 2^63 - 1])";
    return false;
  }
  *out = v;
  return true;
}

bool Args::GetUint64(const std::string& key, uint64_t* out) {
  auto it = values_.find(key);
  if (it == values_.end()) return true;
  const std::string& text = it->second;
  // strtoull would take "-1" as 2^64 - 1.
  const bool digits = !text.empty() && text[0] >= '0' && text[0] <= '9';
  errno = 0;
  char* end = nullptr;
  const unsigned long long v = digits ? std::strtoull(text.c_str(), &end, 10) : 0;
  if (!digits || *end != '\0') {
    error_ = "option '" + key + "' needs an integer in [0, 2^64 - 1], got '" + text + "'";
    return false;
  }
  if (errno == ERANGE) {
    error_ = "option '" + key + "' got " + text +
             ", larger than 2^64 - 1 = 18446744073709551615; give a smaller number";
    return false;
  }
  *out = v;
  return true;
}

bool Args::GetDouble(const std::string& key, double* out) {
  auto it = values_.find(key);
  if (it == values_.end()) return true;
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(it->second.c_str(), &end);
  if (errno != 0 || end == it->second.c_str() || *end != '\0') {
    error_ = "option '" + key + "' needs a number, got '" + it->second + "'";
    return false;
  }
  *out = v;
  return true;
}

}  // namespace pocket::cli
