// Parses a command line against a command's flag tables (flag.h):
// --name VALUE, -n VALUE, --name=VALUE, switches, and positional arguments.
// Every value is checked as its flag declares while parsing, so the getters
// cannot fail; an unknown flag or a malformed value is a usage error.
// -h, --help is every command's.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tools/pocket/flag.h"

namespace pocket::cli {

class Args {
 public:
  explicit Args(std::vector<const FlagTable*> tables);

  // Parses argv[1..argc). On failure returns false and sets error().
  bool Parse(int argc, char** argv);
  const std::string& error() const { return error_; }

  // Keys are a flag's first name ("-m", "--kv").
  // Whether the flag was given (or --help, for "-h").
  bool Has(const std::string& key) const;
  // The value given last, else the flag's fallback, else "". A choice is
  // spelled as its flag lists it.
  std::string Get(const std::string& key) const;
  int64_t Int(const std::string& key) const;
  uint64_t Uint64(const std::string& key) const;
  double Number(const std::string& key) const;
  // Every value given for a repeatable flag, in order.
  const std::vector<std::string>& All(const std::string& key) const;
  const std::vector<std::string>& positional() const { return positional_; }

  // The tables' --help lines (FlagHelp).
  std::string Help() const { return FlagHelp(tables_); }

 private:
  const Flag* Find(const std::string& name, std::string* key) const;
  // Checks `text` for the flag given as `name`; a choice becomes its listed spelling.
  bool Check(const Flag& flag, const std::string& name, std::string* text);

  std::vector<const FlagTable*> tables_;
  std::map<std::string, std::vector<std::string>> values_;  // key -> values given
  std::vector<std::string> positional_;
  std::string error_;
};

}  // namespace pocket::cli
