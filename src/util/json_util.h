// Exception-free access to nlohmann::json. The library is built with
// JSON_NOEXCEPTION (a throw would abort the host app), so every access to
// untrusted JSON goes through these helpers, which check the type first and
// return a Status naming the key. Never call .at(), .get<T>() or operator[]
// on a const json whose shape is not already checked. Always dump with
// DumpJson (invalid UTF-8 in a string would otherwise abort).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/status.h"

namespace pocket {

using Json = nlohmann::json;

// Parses text; on failure names `what` (e.g. "config section") and the
// byte position of the error.
StatusOr<Json> ParseJson(std::string_view text, const char* what);
// Serializes with invalid UTF-8 replaced by U+FFFD instead of aborting.
std::string DumpJson(const Json& j, int indent = -1);

// Required members: an error names `where` and `key` when missing or wrong.
Status GetInt(const Json& obj, const char* key, int64_t* out, const char* where);
Status GetDouble(const Json& obj, const char* key, double* out, const char* where);
Status GetBool(const Json& obj, const char* key, bool* out, const char* where);
Status GetString(const Json& obj, const char* key, std::string* out, const char* where);
Status GetIntArray(const Json& obj, const char* key, std::vector<int64_t>* out,
                   const char* where);

// Optional members: leave *out unchanged when the key is absent or null;
// an error only when present with the wrong type.
Status GetOptInt(const Json& obj, const char* key, int64_t* out, const char* where);
Status GetOptDouble(const Json& obj, const char* key, double* out, const char* where);
Status GetOptBool(const Json& obj, const char* key, bool* out, const char* where);
Status GetOptString(const Json& obj, const char* key, std::string* out, const char* where);

// Returns the member or nullptr when absent (obj must be an object).
const Json* FindMember(const Json& obj, const char* key);

}  // namespace pocket
