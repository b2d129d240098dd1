#include "util/json_util.h"

namespace pocket {

StatusOr<Json> ParseJson(std::string_view text, const char* what) {
  // allow_exceptions=false: a parse error yields a "discarded" value.
  Json j = Json::parse(text.begin(), text.end(), nullptr, false);
  if (j.is_discarded()) {
    return Errorf(StatusCode::kCorruptFile, "%s is not valid JSON (%zu bytes)", what,
                  text.size());
  }
  return j;
}

std::string DumpJson(const Json& j, int indent) {
  return j.dump(indent, ' ', false, Json::error_handler_t::replace);
}

const Json* FindMember(const Json& obj, const char* key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}

namespace {

Status Missing(const char* key, const char* where) {
  return Errorf(StatusCode::kCorruptFile, "%s: missing required key '%s'", where, key);
}
Status WrongType(const char* key, const char* want, const char* where) {
  return Errorf(StatusCode::kCorruptFile, "%s: key '%s' must be %s", where, key, want);
}

}  // namespace

Status GetOptInt(const Json& obj, const char* key, int64_t* out, const char* where) {
  const Json* m = FindMember(obj, key);
  if (m == nullptr || m->is_null()) return Status::Ok();
  if (m->is_number_integer()) {
    *out = m->get<int64_t>();
    return Status::Ok();
  }
  if (m->is_number_float()) {  // 1e6 style integers written by Python tools
    const double d = m->get<double>();
    if (d >= -9.0e15 && d <= 9.0e15 && static_cast<double>(static_cast<int64_t>(d)) == d) {
      *out = static_cast<int64_t>(d);
      return Status::Ok();
    }
  }
  return WrongType(key, "an integer", where);
}

Status GetOptDouble(const Json& obj, const char* key, double* out, const char* where) {
  const Json* m = FindMember(obj, key);
  if (m == nullptr || m->is_null()) return Status::Ok();
  if (!m->is_number()) return WrongType(key, "a number", where);
  *out = m->get<double>();
  return Status::Ok();
}

Status GetOptBool(const Json& obj, const char* key, bool* out, const char* where) {
  const Json* m = FindMember(obj, key);
  if (m == nullptr || m->is_null()) return Status::Ok();
  if (!m->is_boolean()) return WrongType(key, "a boolean", where);
  *out = m->get<bool>();
  return Status::Ok();
}

Status GetOptString(const Json& obj, const char* key, std::string* out, const char* where) {
  const Json* m = FindMember(obj, key);
  if (m == nullptr || m->is_null()) return Status::Ok();
  if (!m->is_string()) return WrongType(key, "a string", where);
  *out = m->get<std::string>();
  return Status::Ok();
}

Status GetInt(const Json& obj, const char* key, int64_t* out, const char* where) {
  if (FindMember(obj, key) == nullptr) return Missing(key, where);
  return GetOptInt(obj, key, out, where);
}
Status GetDouble(const Json& obj, const char* key, double* out, const char* where) {
  if (FindMember(obj, key) == nullptr) return Missing(key, where);
  return GetOptDouble(obj, key, out, where);
}
Status GetBool(const Json& obj, const char* key, bool* out, const char* where) {
  if (FindMember(obj, key) == nullptr) return Missing(key, where);
  return GetOptBool(obj, key, out, where);
}
Status GetString(const Json& obj, const char* key, std::string* out, const char* where) {
  if (FindMember(obj, key) == nullptr) return Missing(key, where);
  return GetOptString(obj, key, out, where);
}

Status GetIntArray(const Json& obj, const char* key, std::vector<int64_t>* out,
                   const char* where) {
  const Json* m = FindMember(obj, key);
  if (m == nullptr) return Missing(key, where);
  if (!m->is_array()) return WrongType(key, "an array of integers", where);
  out->clear();
  for (const Json& e : *m) {
    if (!e.is_number_integer()) return WrongType(key, "an array of integers", where);
    out->push_back(e.get<int64_t>());
  }
  return Status::Ok();
}

}  // namespace pocket
