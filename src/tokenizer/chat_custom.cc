#include "tokenizer/chat_custom.h"

#include <array>
#include <string_view>

#include "tokenizer/chat_text.h"

namespace pocket {
namespace {

enum Section : int { kPrefix = 0, kSystem, kUser, kAssistant, kGeneration, kNumSections };
constexpr std::array<const char*, kNumSections> kSectionNames = {"prefix", "system", "user",
                                                                 "assistant", "generation"};

struct Piece {
  enum Kind { kText, kContent, kRole } kind;
  std::string_view text;  // kText only
};

struct ParsedTemplate {
  std::array<bool, kNumSections> present = {};
  std::array<std::vector<Piece>, kNumSections> body;
};

bool IsAsciiSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

std::string_view TrimAscii(std::string_view s) {
  while (!s.empty() && IsAsciiSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsAsciiSpace(s.back())) s.remove_suffix(1);
  return s;
}

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  Status Parse(ParsedTemplate* out) {
    size_t pos = 0;
    while (true) {
      while (pos < text_.size() && IsAsciiSpace(text_[pos])) ++pos;
      if (pos == text_.size()) return Status::Ok();
      if (text_.compare(pos, 2, "{%") != 0) {
        return Error(pos,
                     "text outside a section (only whitespace may appear between "
                     "'{% name %}' ... '{% end %}' sections)");
      }
      std::string_view name;
      size_t after = 0;
      POCKET_RETURN_IF_ERROR(ReadTag(pos, "{%", "%}", &name, &after));
      int section = -1;
      for (int s = 0; s < kNumSections; ++s) {
        if (name == kSectionNames[s]) section = s;
      }
      if (name == "end") return Error(pos, "'{% end %}' without an open section");
      if (section < 0) {
        return Error(pos, "unknown section '" + std::string(name) +
                              "' (expected prefix, system, user, assistant or generation)");
      }
      if (out->present[section]) {
        return Error(pos, "section '" + std::string(name) + "' appears twice");
      }
      out->present[section] = true;
      POCKET_RETURN_IF_ERROR(
          ParseBody(static_cast<Section>(section), pos, after, &out->body[section], &pos));
    }
  }

 private:
  // Reads "{%" name "%}" (or "{{" name "}}") starting at `open_pos`.
  Status ReadTag(size_t open_pos, const char* open, const char* close, std::string_view* name,
                 size_t* after) {
    const size_t close_pos = text_.find(close, open_pos + 2);
    if (close_pos == std::string_view::npos) {
      return Error(open_pos, std::string("'") + open + "' is never closed by '" + close + "'");
    }
    *name = TrimAscii(text_.substr(open_pos + 2, close_pos - open_pos - 2));
    *after = close_pos + 2;
    return Status::Ok();
  }

  // Reads a section body from `pos` up to and including its "{% end %}".
  Status ParseBody(Section section, size_t section_pos, size_t pos, std::vector<Piece>* pieces,
                   size_t* end) {
    const bool message_section = section == kSystem || section == kUser || section == kAssistant;
    while (true) {
      const size_t tag = FindTag(pos);
      if (tag == std::string_view::npos) {
        return Error(section_pos,
                     std::string("section '") + kSectionNames[section] + "' has no '{% end %}'");
      }
      if (tag > pos) pieces->push_back({Piece::kText, text_.substr(pos, tag - pos)});
      std::string_view name;
      size_t after = 0;
      if (text_.compare(tag, 2, "{{") == 0) {
        POCKET_RETURN_IF_ERROR(ReadTag(tag, "{{", "}}", &name, &after));
        if (name != "content" && name != "role") {
          return Error(tag, "unknown variable '{{" + std::string(name) +
                                "}}' (expected {{content}} or {{role}})");
        }
        if (!message_section) {
          return Error(tag, std::string("variable '{{") + std::string(name) +
                                "}}' is only allowed in system, user and assistant sections");
        }
        pieces->push_back({name == "content" ? Piece::kContent : Piece::kRole, {}});
      } else {
        POCKET_RETURN_IF_ERROR(ReadTag(tag, "{%", "%}", &name, &after));
        if (name != "end") {
          return Error(tag, "section tag '{% " + std::string(name) + " %}' inside section '" +
                                kSectionNames[section] + "' (close it with '{% end %}' first)");
        }
        *end = after;
        return Status::Ok();
      }
      pos = after;
    }
  }

  size_t FindTag(size_t pos) const {
    const size_t a = text_.find("{{", pos);
    const size_t b = text_.find("{%", pos);
    return a < b ? a : b;
  }

  Status Error(size_t offset, const std::string& what) const {
    size_t line = 1, column = 1;
    for (size_t i = 0; i < offset; ++i) {
      if (text_[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    return Errorf(StatusCode::kInvalidArgument,
                  "custom chat template: %s at byte %zu (line %zu, column %zu)", what.c_str(),
                  offset, line, column);
  }

  std::string_view text_;
};

void AppendPieces(const std::vector<Piece>& pieces, const ChatMessage* message, std::string* out) {
  for (const Piece& p : pieces) {
    switch (p.kind) {
      case Piece::kText:
        out->append(p.text);
        break;
      case Piece::kContent:
        out->append(message->content);
        break;
      case Piece::kRole:
        out->append(message->role);
        break;
    }
  }
}

}  // namespace

StatusOr<std::string> RenderCustomChat(const std::string& template_text,
                                       const std::vector<ChatMessage>& messages,
                                       const ChatOptions& options) {
  ParsedTemplate parsed;
  POCKET_RETURN_IF_ERROR(Parser(template_text).Parse(&parsed));
  std::string out;
  AppendPieces(parsed.body[kPrefix], nullptr, &out);
  for (size_t i = 0; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
    int section = -1;
    for (int s = kSystem; s <= kAssistant; ++s) {
      if (m.role == kSectionNames[s]) section = s;
    }
    if (section < 0 || !parsed.present[section]) {
      return Errorf(StatusCode::kInvalidArgument,
                    "custom chat template has no '{%% %s %%}' section, but message %zu has role "
                    "'%s'; add that section to the template",
                    m.role.c_str(), i, m.role.c_str());
    }
    AppendPieces(parsed.body[section], &m, &out);
  }
  if (options.add_generation_prompt) AppendPieces(parsed.body[kGeneration], nullptr, &out);
  return out;
}

}  // namespace pocket
