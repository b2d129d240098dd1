#include "metal/harness/signature.h"

#include <cctype>
#include <cstdlib>

namespace pocket::metal::harness {
namespace {

bool IsIdent(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

std::string Trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

// The text between the parenthesis at `open` and the one that closes it.
bool Enclosed(const std::string& text, size_t open, std::string* inside) {
  int depth = 0;
  for (size_t i = open; i < text.size(); ++i) {
    if (text[i] == '(') ++depth;
    if (text[i] == ')' && --depth == 0) {
      *inside = text.substr(open + 1, i - open - 1);
      return true;
    }
  }
  return false;
}

std::vector<std::string> SplitTopLevel(const std::string& list) {
  std::vector<std::string> parts;
  int depth = 0;
  std::string current;
  for (char c : list) {
    if (c == '(' || c == '[' || c == '<') ++depth;
    if (c == ')' || c == ']' || c == '>') --depth;
    if (c == ',' && depth == 0) {
      parts.push_back(Trim(current));
      current.clear();
    } else {
      current += c;
    }
  }
  if (!Trim(current).empty()) parts.push_back(Trim(current));
  return parts;
}

bool RoleOf(const std::string& attribute, KernelParam* p) {
  static const struct {
    const char* name;
    ParamRole role;
  } kRoles[] = {
      {"thread_position_in_grid", ParamRole::kThreadPositionInGrid},
      {"thread_position_in_threadgroup", ParamRole::kThreadPositionInThreadgroup},
      {"threadgroup_position_in_grid", ParamRole::kThreadgroupPositionInGrid},
      {"threads_per_threadgroup", ParamRole::kThreadsPerThreadgroup},
      {"threadgroups_per_grid", ParamRole::kThreadgroupsPerGrid},
      {"thread_index_in_threadgroup", ParamRole::kThreadIndexInThreadgroup},
      {"thread_index_in_simdgroup", ParamRole::kThreadIndexInSimdgroup},
      {"simdgroup_index_in_threadgroup", ParamRole::kSimdgroupIndexInThreadgroup},
      {"simdgroups_per_threadgroup", ParamRole::kSimdgroupsPerThreadgroup},
      {"threads_per_simdgroup", ParamRole::kThreadsPerSimdgroup},
  };
  const std::string buffer = "buffer(";
  if (attribute.compare(0, buffer.size(), buffer) == 0 && attribute.back() == ')') {
    const std::string digits = Trim(attribute.substr(buffer.size(), attribute.size() - 8));
    if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos) {
      return false;
    }
    p->role = ParamRole::kBuffer;
    p->slot = static_cast<uint32_t>(std::strtoul(digits.c_str(), nullptr, 10));
    return true;
  }
  for (const auto& r : kRoles) {
    if (attribute == r.name) {
      p->role = r.role;
      return true;
    }
  }
  return false;
}

}  // namespace

bool ParseKernelParams(const std::string& text, const std::string& kernel,
                       std::vector<KernelParam>* params, std::string* error) {
  const std::string head = "void " + kernel + "(";
  for (size_t at = text.find(head); at != std::string::npos; at = text.find(head, at + 1)) {
    if (at > 0 && IsIdent(text[at - 1])) continue;
    std::string list;
    if (!Enclosed(text, at + head.size() - 1, &list)) break;
    if (list.find("[[") == std::string::npos) continue;  // a declaration without attributes
    params->clear();
    for (const std::string& part : SplitTopLevel(list)) {
      const size_t open = part.find("[[");
      const size_t close = part.rfind("]]");
      if (open == std::string::npos || close == std::string::npos || close < open) {
        *error = kernel + ": parameter '" + part + "' has no attribute";
        return false;
      }
      KernelParam p;
      const std::string decl = Trim(part.substr(0, open));
      size_t name_begin = decl.size();
      while (name_begin > 0 && IsIdent(decl[name_begin - 1])) --name_begin;
      p.name = decl.substr(name_begin);
      const std::string attribute = Trim(part.substr(open + 2, close - open - 2));
      if (!RoleOf(attribute, &p)) {
        *error = kernel + ": parameter " + p.name + " has attribute [[" + attribute +
                 "]], which the harness does not know";
        return false;
      }
      params->push_back(p);
    }
    return true;
  }
  *error = "no definition of kernel " + kernel + " with attributed parameters";
  return false;
}

}  // namespace pocket::metal::harness
