// String helpers with the exact semantics of the Python str methods that
// Hugging Face chat templates call (strip, lstrip, rstrip, split), so the
// native renderers produce byte-identical prompts.
#pragma once

#include <string>
#include <string_view>

namespace pocket {
namespace chat_text {

// Python's str.strip() with no argument: removes leading and trailing
// Unicode whitespace (str.isspace() code points) from UTF-8 text.
std::string_view StripWhitespace(std::string_view s);

// Python's str.strip(c) / lstrip(c) / rstrip(c) for one ASCII character.
std::string_view StripChar(std::string_view s, char c);
std::string_view LstripChar(std::string_view s, char c);
std::string_view RstripChar(std::string_view s, char c);

// s.split(sep)[0] and s.split(sep)[-1]: the text before the first and after
// the last occurrence of sep (all of s when sep does not occur).
std::string_view BeforeFirst(std::string_view s, std::string_view sep);
std::string_view AfterLast(std::string_view s, std::string_view sep);

bool StartsWith(std::string_view s, std::string_view prefix);
bool EndsWith(std::string_view s, std::string_view suffix);

}  // namespace chat_text
}  // namespace pocket
