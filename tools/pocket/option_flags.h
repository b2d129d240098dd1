// The library names its options as the API spells them (budget_bytes,
// kv_type=q8; include/pocket/pocket.h); the CLI prints its errors with the
// flags that set them instead (--budget MIB, --kv q8).
#pragma once

#include <string>

#include "util/status.h"

namespace pocket::cli {

// `message` with each option of the mapping table written as its flag:
// "NAME=VALUE" becomes "FLAG VALUE", and a bare NAME with an underscore
// becomes "FLAG VALUE_NAME" (names that are also words, such as backend,
// are mapped only with their "=VALUE").
std::string InFlagTerms(const std::string& message);
// The status as "Code: message", in flag terms.
std::string InFlagTerms(const Status& status);

}  // namespace pocket::cli
