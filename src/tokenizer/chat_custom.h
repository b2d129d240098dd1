// The "custom" chat template kind: a small template language for models
// whose template is not one of the built-in kinds (specified in docs/chat.md).
//
//   {% system %}<|system|>\n{{content}}\n{% end %}
//   {% user %}<|user|>\n{{content}}\n{% end %}
//   {% assistant %}<|assistant|>\n{{content}}\n{% end %}
//   {% generation %}<|assistant|>\n{% end %}
#pragma once

#include <string>
#include <vector>

#include "tokenizer/chat_template.h"
#include "util/status.h"

namespace pocket {

// Parses template_text and renders messages with it. A malformed template is
// an InvalidArgument naming the byte offset, line and column; a message whose
// role has no section is an InvalidArgument naming the role.
StatusOr<std::string> RenderCustomChat(const std::string& template_text,
                                       const std::vector<ChatMessage>& messages,
                                       const ChatOptions& options);

}  // namespace pocket
