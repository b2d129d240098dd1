#include "tokenizer/chat_template.h"

#include "tokenizer/chat_builtin.h"
#include "tokenizer/chat_custom.h"

namespace pocket {
namespace {

Status ValidateMessages(const std::string& kind, const std::vector<ChatMessage>& messages,
                        const ChatOptions& options) {
  if (messages.empty()) {
    return Status(StatusCode::kInvalidArgument,
                  "chat template: the message list is empty; pass at least one message");
  }
  const bool takes_tools = kind == "qwen3";
  if (!options.tools.empty() && !takes_tools) {
    return Errorf(StatusCode::kUnsupported,
                  "chat template: tool calling needs the qwen3 template; this model's is '%s'",
                  kind.c_str());
  }
  for (size_t i = 0; i < messages.size(); ++i) {
    const std::string& role = messages[i].role;
    if (role == "tool" && !takes_tools) {
      return Errorf(StatusCode::kUnsupported,
                    "chat template: message %zu is a tool result, which only the qwen3 "
                    "template renders; this model's is '%s'",
                    i, kind.c_str());
    }
    if (role != "system" && role != "user" && role != "assistant" && role != "tool") {
      return Errorf(StatusCode::kInvalidArgument,
                    "chat template: message %zu has unknown role '%s' (expected system, user, "
                    "assistant or tool)",
                    i, role.c_str());
    }
  }
  return Status::Ok();
}

bool Contains(const std::string& haystack, const char* needle) {
  return haystack.find(needle) != std::string::npos;
}

}  // namespace

StatusOr<std::string> RenderChat(const std::string& kind, const std::string& template_text,
                                 const std::vector<ChatMessage>& messages,
                                 const ChatOptions& options) {
  POCKET_RETURN_IF_ERROR(ValidateMessages(kind, messages, options));
  if (kind == "qwen3") return RenderQwen3Chat(messages, options);
  if (kind == "chatml") return RenderChatMlChat(messages, options);
  if (kind == "llama2") return RenderLlama2Chat(messages);
  if (kind == "llama3") return RenderLlama3Chat(messages, options);
  if (kind == "none") return RenderPlainChat(messages);
  if (kind == "custom") return RenderCustomChat(template_text, messages, options);
  return Errorf(StatusCode::kInvalidArgument,
                "unknown chat template kind '%s' (expected qwen3, chatml, llama2, llama3, "
                "custom or none)",
                kind.c_str());
}

std::string DetectChatTemplateKind(const std::string& jinja_template) {
  if (Contains(jinja_template, "<|im_start|>")) {
    const bool thinking =
        Contains(jinja_template, "enable_thinking") || Contains(jinja_template, "<think>");
    return thinking ? "qwen3" : "chatml";
  }
  if (Contains(jinja_template, "<|start_header_id|>")) return "llama3";
  if (Contains(jinja_template, "[INST]")) return "llama2";
  return "none";
}

}  // namespace pocket
