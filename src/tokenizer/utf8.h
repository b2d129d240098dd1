// UTF-8 helpers shared by the tokenizers: validation with byte offsets,
// incremental completeness checks for streaming, and NFC through utf8proc.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "util/status.h"

namespace pocket::tok {

// Classifies the sequence starting at s[i]. Returns its length (1..4) when it
// is a complete, valid sequence; 0 when invalid. *truncated is set when the
// bytes that are there form a valid prefix cut off by the end of `s`.
int Utf8SequenceAt(std::string_view s, size_t i, bool* truncated);

// InvalidArgument "invalid UTF-8 at byte N" (N relative to `s`), or Ok.
Status CheckUtf8(std::string_view s);

// Turns a growing byte stream into valid UTF-8. Appends to *out every
// complete character at the front of *pending (invalid bytes become U+FFFD)
// and removes them from *pending. An incomplete but valid tail stays in
// *pending unless `final`, in which case it too becomes U+FFFD.
void DrainUtf8(std::string* pending, bool final, std::string* out);

// Unicode NFC of valid UTF-8 text (embedded NULs allowed).
StatusOr<std::string> NfcNormalize(std::string_view s);

// Appends the UTF-8 encoding of a code point (assumed valid).
void AppendUtf8(uint32_t cp, std::string* out);

}  // namespace pocket::tok
