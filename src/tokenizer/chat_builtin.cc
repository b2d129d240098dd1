#include "tokenizer/chat_builtin.h"

#include <string_view>

#include "tokenizer/chat_text.h"

namespace pocket {

using chat_text::AfterLast;
using chat_text::BeforeFirst;
using chat_text::EndsWith;
using chat_text::LstripChar;
using chat_text::RstripChar;
using chat_text::StartsWith;
using chat_text::StripChar;
using chat_text::StripWhitespace;

namespace {

void AppendImTurn(std::string_view role, std::string_view content, std::string* out) {
  out->append("<|im_start|>").append(role).append("\n");
  out->append(content).append("<|im_end|>\n");
}

// Qwen3's last_query_index: the last user message that is not a wrapped tool
// response; messages.size() - 1 when there is none (the Jinja default).
size_t Qwen3LastQueryIndex(const std::vector<ChatMessage>& messages) {
  for (size_t i = messages.size(); i-- > 0;) {
    const ChatMessage& m = messages[i];
    const bool tool_response =
        StartsWith(m.content, "<tool_response>") && EndsWith(m.content, "</tool_response>");
    if (m.role == "user" && !tool_response) return i;
  }
  return messages.size() - 1;
}

void AppendQwen3Assistant(const ChatMessage& m, bool after_last_query, bool is_last,
                          std::string* out) {
  std::string_view content = m.content;
  std::string_view reasoning;
  // The template splits a stored "<think>...</think>answer" turn into its
  // reasoning and its answer; only turns after the last user query (the
  // current agentic step) show the reasoning again.
  if (content.find("</think>") != std::string_view::npos) {
    const std::string_view full = m.content;
    content = LstripChar(AfterLast(full, "</think>"), '\n');
    reasoning =
        LstripChar(AfterLast(RstripChar(BeforeFirst(full, "</think>"), '\n'), "<think>"), '\n');
  }
  out->append("<|im_start|>assistant\n");
  if (after_last_query && (is_last || !reasoning.empty())) {
    out->append("<think>\n").append(StripChar(reasoning, '\n')).append("\n</think>\n\n");
    out->append(LstripChar(content, '\n'));
  } else {
    out->append(content);
  }
  out->append("<|im_end|>\n");
}

// The system turn that lists the tools, after the first message when that
// is a system message.
void AppendQwen3Tools(const std::vector<ChatMessage>& messages,
                      const std::vector<std::string>& tools, std::string* out) {
  out->append("<|im_start|>system\n");
  if (messages[0].role == "system") out->append(messages[0].content).append("\n\n");
  out->append(
      "# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are "
      "provided with function signatures within <tools></tools> XML tags:\n<tools>");
  for (const std::string& tool : tools) out->append("\n").append(tool);
  out->append(
      "\n</tools>\n\nFor each function call, return a json object with function name and "
      "arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": "
      "<function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n");
}

}  // namespace

std::string RenderQwen3Chat(const std::vector<ChatMessage>& messages, const ChatOptions& options) {
  std::string out;
  if (!options.tools.empty()) {
    AppendQwen3Tools(messages, options.tools, &out);
  } else if (messages[0].role == "system") {
    AppendImTurn("system", messages[0].content, &out);
  }
  const size_t last_query = Qwen3LastQueryIndex(messages);
  for (size_t i = 0; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
    if (m.role == "user" || (m.role == "system" && i != 0)) {
      AppendImTurn(m.role, m.content, &out);
    } else if (m.role == "assistant") {
      AppendQwen3Assistant(m, i > last_query, i + 1 == messages.size(), &out);
    } else if (m.role == "tool") {
      // Consecutive tool results share one user turn.
      if (i == 0 || messages[i - 1].role != "tool") out.append("<|im_start|>user");
      out.append("\n<tool_response>\n").append(m.content).append("\n</tool_response>");
      if (i + 1 == messages.size() || messages[i + 1].role != "tool") out.append("<|im_end|>\n");
    }
  }
  if (options.add_generation_prompt) {
    out.append("<|im_start|>assistant\n");
    if (!options.enable_thinking) out.append("<think>\n\n</think>\n\n");
  }
  return out;
}

std::string RenderChatMlChat(const std::vector<ChatMessage>& messages, const ChatOptions& options) {
  std::string out;
  for (const ChatMessage& m : messages) AppendImTurn(m.role, m.content, &out);
  if (options.add_generation_prompt) out.append("<|im_start|>assistant\n");
  return out;
}

StatusOr<std::string> RenderLlama2Chat(const std::vector<ChatMessage>& messages) {
  const bool has_system = messages[0].role == "system";
  const size_t first = has_system ? 1 : 0;
  if (first == messages.size()) {
    return Status(StatusCode::kInvalidArgument,
                  "llama2 chat template: the conversation has only a system message; Llama 2 "
                  "puts the system prompt inside the first user turn, so add a user message");
  }
  std::string out;
  for (size_t i = first; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
    const char* expected = (i - first) % 2 == 0 ? "user" : "assistant";
    if (m.role != expected) {
      return Errorf(StatusCode::kInvalidArgument,
                    "llama2 chat template: message %zu has role '%s' but Llama 2 needs %s here "
                    "(an optional first system message, then user and assistant alternating, "
                    "starting with user)",
                    i, m.role.c_str(), expected);
    }
    std::string content;
    if (i == first && has_system) {
      content = "<<SYS>>\n" + messages[0].content + "\n<</SYS>>\n\n" + m.content;
    } else {
      content = m.content;
    }
    const std::string_view stripped = StripWhitespace(content);
    if (m.role == "user") {
      out.append("<s>[INST] ").append(stripped).append(" [/INST]");
    } else {
      out.append(" ").append(stripped).append(" </s>");
    }
  }
  return out;
}

std::string RenderLlama3Chat(const std::vector<ChatMessage>& messages, const ChatOptions& options) {
  std::string out = "<|begin_of_text|>";
  for (const ChatMessage& m : messages) {
    out.append("<|start_header_id|>").append(m.role).append("<|end_header_id|>\n\n");
    out.append(StripWhitespace(m.content)).append("<|eot_id|>");
  }
  if (options.add_generation_prompt) {
    out.append("<|start_header_id|>assistant<|end_header_id|>\n\n");
  }
  return out;
}

std::string RenderPlainChat(const std::vector<ChatMessage>& messages) {
  std::string out;
  for (const ChatMessage& m : messages) out.append(m.content);
  return out;
}

}  // namespace pocket
