// A JSON Schema validator for the tests, written separately from the
// grammar compiler (it checks parsed values, not text) so that the two can
// check each other: every instance the compiled grammar accepts must pass
// here. It covers the keywords docs/structured-output.md lists; patterns go
// through std::regex (ECMAScript, search semantics, as JSON Schema says).
#pragma once

#include <cmath>
#include <regex>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

namespace pocket::testing {

class SchemaValidator {
 public:
  explicit SchemaValidator(nlohmann::json root) : root_(std::move(root)) {}

  bool Valid(const nlohmann::json& value) const { return Check(root_, value); }

 private:
  static size_t CodePoints(const std::string& s) {
    size_t n = 0;
    for (unsigned char c : s) n += (c & 0xC0) != 0x80;
    return n;
  }

  static bool Format(const std::string& format, const std::string& s) {
    static const std::string date = R"(\d\d\d\d-(0[1-9]|1[012])-(0[1-9]|[12]\d|3[01]))";
    static const std::string time =
        R"(([01]\d|2[0-3]):[0-5]\d:([0-5]\d|60)(\.\d+)?([Zz]|[+-]([01]\d|2[0-3]):[0-5]\d))";
    if (format == "date") return std::regex_match(s, std::regex(date));
    if (format == "time") return std::regex_match(s, std::regex(time));
    if (format == "date-time") return std::regex_match(s, std::regex(date + "[Tt]" + time));
    if (format == "uuid") {
      return std::regex_match(s,
                              std::regex("[[:xdigit:]]{8}(-[[:xdigit:]]{4}){3}-[[:xdigit:]]{12}"));
    }
    if (format == "email") {
      const size_t at = s.find('@');
      return at != std::string::npos && at > 0 && s.find('.', at) != std::string::npos &&
             s.back() != '.';
    }
    return false;
  }

  const nlohmann::json& Resolve(const std::string& ref) const {
    return root_.at(nlohmann::json::json_pointer(ref.substr(1)));
  }

  static bool IsType(const std::string& t, const nlohmann::json& v) {
    if (t == "object") return v.is_object();
    if (t == "array") return v.is_array();
    if (t == "string") return v.is_string();
    if (t == "number") return v.is_number();
    if (t == "integer") {
      return v.is_number_integer() ||
             (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>());
    }
    if (t == "boolean") return v.is_boolean();
    if (t == "null") return v.is_null();
    return false;
  }

  bool Check(const nlohmann::json& s, const nlohmann::json& v) const {
    if (s.is_boolean()) return s.get<bool>();
    if (s.contains("$ref")) return Check(Resolve(s["$ref"].get<std::string>()), v);
    if (s.contains("type")) {
      bool any = false;
      if (s["type"].is_string()) {
        any = IsType(s["type"], v);
      } else {
        for (const auto& t : s["type"]) any = any || IsType(t, v);
      }
      if (!any) return false;
    }
    if (s.contains("const") && s["const"] != v) return false;
    if (s.contains("enum")) {
      bool found = false;
      for (const auto& e : s["enum"]) found = found || e == v;
      if (!found) return false;
    }
    if (s.contains("anyOf")) {
      bool any = false;
      for (const auto& sub : s["anyOf"]) any = any || Check(sub, v);
      if (!any) return false;
    }
    if (s.contains("oneOf")) {
      int count = 0;
      for (const auto& sub : s["oneOf"]) count += Check(sub, v);
      if (count != 1) return false;
    }
    if (s.contains("allOf")) {
      for (const auto& sub : s["allOf"]) {
        if (!Check(sub, v)) return false;
      }
    }
    if (v.is_string()) {
      const std::string str = v.get<std::string>();
      if (s.contains("minLength") && CodePoints(str) < s["minLength"].get<size_t>()) return false;
      if (s.contains("maxLength") && CodePoints(str) > s["maxLength"].get<size_t>()) return false;
      if (s.contains("pattern") &&
          !std::regex_search(str, std::regex(s["pattern"].get<std::string>()))) {
        return false;
      }
      if (s.contains("format") && !Format(s["format"], str)) return false;
    }
    if (v.is_number()) {
      const double d = v.get<double>();
      if (s.contains("minimum") && d < s["minimum"].get<double>()) return false;
      if (s.contains("maximum") && d > s["maximum"].get<double>()) return false;
      if (s.contains("exclusiveMinimum") && d <= s["exclusiveMinimum"].get<double>()) return false;
      if (s.contains("exclusiveMaximum") && d >= s["exclusiveMaximum"].get<double>()) return false;
    }
    if (v.is_array()) {
      if (s.contains("minItems") && v.size() < s["minItems"].get<size_t>()) return false;
      if (s.contains("maxItems") && v.size() > s["maxItems"].get<size_t>()) return false;
      size_t prefix = 0;
      if (s.contains("prefixItems")) {
        prefix = s["prefixItems"].size();
        for (size_t i = 0; i < prefix && i < v.size(); ++i) {
          if (!Check(s["prefixItems"][i], v[i])) return false;
        }
      }
      if (s.contains("items")) {
        for (size_t i = prefix; i < v.size(); ++i) {
          if (!Check(s["items"], v[i])) return false;
        }
      }
    }
    if (v.is_object()) {
      if (s.contains("required")) {
        for (const auto& name : s["required"]) {
          if (!v.contains(name.get<std::string>())) return false;
        }
      }
      std::set<std::string> declared;
      if (s.contains("properties")) {
        for (auto it = s["properties"].begin(); it != s["properties"].end(); ++it) {
          declared.insert(it.key());
          if (v.contains(it.key()) && !Check(it.value(), v[it.key()])) return false;
        }
      }
      if (s.contains("additionalProperties")) {
        for (auto it = v.begin(); it != v.end(); ++it) {
          if (!declared.count(it.key()) && !Check(s["additionalProperties"], it.value())) {
            return false;
          }
        }
      }
    }
    return true;
  }

  nlohmann::json root_;
};

}  // namespace pocket::testing
