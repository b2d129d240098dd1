// A small flag parser shared by the subcommands: --name VALUE, -n VALUE,
// --name=VALUE, boolean --flag, and positional arguments. Unknown flags are
// usage errors.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace pocket::cli {

class Args {
 public:
  // `value_flags` take a value, `bool_flags` do not. Each entry may list
  // aliases separated by '|', e.g. "-n|--n-predict"; the first is the key.
  Args(std::vector<std::string> value_flags, std::vector<std::string> bool_flags);

  // Parses argv[1..argc). On failure returns false and sets error().
  bool Parse(int argc, char** argv);
  const std::string& error() const { return error_; }

  bool Has(const std::string& key) const;
  std::string Get(const std::string& key, const std::string& def = "") const;
  // Numeric getters record an error (and return false) on a malformed value.
  bool GetInt(const std::string& key, int64_t* out);
  // Any integer in [0, 2^64 - 1], such as a seed.
  bool GetUint64(const std::string& key, uint64_t* out);
  bool GetDouble(const std::string& key, double* out);
  const std::vector<std::string>& positional() const { return positional_; }

 private:
  std::string Canonical(const std::string& flag, bool* takes_value) const;
  std::map<std::string, std::string> alias_;  // alias -> key
  std::set<std::string> value_keys_;
  std::map<std::string, std::string> values_;
  std::vector<std::string> positional_;
  std::string error_;
};

}  // namespace pocket::cli
