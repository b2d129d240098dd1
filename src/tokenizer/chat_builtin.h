// Native renderers of the known Hugging Face chat templates. Each reproduces
// its Jinja template byte for byte for system/user/assistant conversations
// (Qwen3 also with tools and tool results); RenderChat has already checked
// that the list is non-empty and every role is one the kind renders.
#pragma once

#include <string>
#include <vector>

#include "tokenizer/chat_template.h"
#include "util/status.h"

namespace pocket {

// Qwen3 (tokenizer_config.json of the Qwen3 family), including the <think>
// handling of assistant turns and the enable_thinking switch.
std::string RenderQwen3Chat(const std::vector<ChatMessage>& messages, const ChatOptions& options);
// Plain ChatML: <|im_start|>role\ncontent<|im_end|>\n, no injected system turn.
std::string RenderChatMlChat(const std::vector<ChatMessage>& messages, const ChatOptions& options);
// Meta's Llama 2 chat format; InvalidArgument unless the roles are
// [system] user (assistant user)* [assistant].
StatusOr<std::string> RenderLlama2Chat(const std::vector<ChatMessage>& messages);
// Meta's Llama 3 instruct format, <|begin_of_text|> included.
std::string RenderLlama3Chat(const std::vector<ChatMessage>& messages, const ChatOptions& options);
// Base models: the contents concatenated, nothing added.
std::string RenderPlainChat(const std::vector<ChatMessage>& messages);

}  // namespace pocket
