// Chat prompts: messages rendered with the model's template. Known templates
// (recognised by the converter from tokenizer_config.json) are implemented
// natively and render exactly as Hugging Face's Jinja does; a user-supplied
// template uses the small "{{content}}" template language in docs/chat.md.
#pragma once

#include <string>
#include <vector>

#include "util/status.h"

namespace pocket {

struct ChatMessage {
  // "system" | "user" | "assistant" | "tool" (a tool's result; qwen3 only)
  std::string role;
  std::string content;
};

struct ChatOptions {
  bool add_generation_prompt = true;
  // Qwen3: false renders the empty think block ("<think>\n\n</think>\n\n")
  // after the generation prompt, as enable_thinking=False does in HF.
  bool enable_thinking = true;
  // Qwen3: the tools the model may call, each as the JSON text the template
  // prints for it (grammar/tool_calls.h, ToolSignatureJson); rendered in
  // the system turn's "# Tools" section. Other kinds take no tools.
  std::vector<std::string> tools;
};

// Kinds: "qwen3", "chatml" (Qwen2), "llama2", "llama3", "custom" (template
// text in our template language), "none" (plain concatenation).
StatusOr<std::string> RenderChat(const std::string& kind, const std::string& template_text,
                                 const std::vector<ChatMessage>& messages,
                                 const ChatOptions& options);

// Maps a Jinja chat template from tokenizer_config.json to a kind above;
// "none" when it is not recognised.
std::string DetectChatTemplateKind(const std::string& jinja_template);

}  // namespace pocket
