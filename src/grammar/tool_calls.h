// Tool calling in Qwen3's format: the tools' signatures as the chat
// template writes them, the grammar that constrains a reply to free text
// and tool calls whose JSON follows one tool's parameter schema, and the
// tool calls read back from a reply.
//
// A tool call is `<tool_call>` (one added token in Qwen3's vocabulary, or
// the same text spelled by ordinary tokens: the grammar works on bytes, so
// either way), then `{"name": NAME, "arguments": ARGS}` with JSON's
// whitespace around it, then `</tool_call>`.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/grammar.h"
#include "util/status.h"

namespace pocket {
namespace grammar {

struct ToolDefinition {
  std::string name;         // [A-Za-z0-9_.-], 1 to 64 characters
  std::string description;  // free text
  // A JSON Schema of the arguments (the supported subset of json_schema.h);
  // empty: any JSON object.
  std::string parameters;
};

struct ToolCall {
  std::string name;
  std::string arguments;  // the arguments object as compact JSON text
};

enum class ToolChoice {
  kAuto,      // free text, with any number of tool calls in it
  kRequired,  // one or more tool calls, after an optional think block
};

// The checks every entry point makes: names well formed and distinct,
// parameters valid JSON.
Status ValidateTools(const std::vector<ToolDefinition>& tools);

// Tools from a JSON array whose elements are OpenAI-style definitions
// ({"type": "function", "function": {"name", "description", "parameters"}})
// or the inner object alone; parameters keep their members' order.
StatusOr<std::vector<ToolDefinition>> ParseToolDefinitions(std::string_view json_array);

// The tool as the Qwen3 template's `tool | tojson` prints it through Hugging
// Face transformers: {"type": "function", "function": {"name": ...,
// "description": ..., "parameters": ...}}, with Python's json.dumps
// separators (", " and ": "), non-ASCII characters as they are, and the
// parameters' members in the order written.
StatusOr<std::string> ToolSignatureJson(const ToolDefinition& tool);

// Replies with tool calls to `tools` (at least one). Outside tool calls
// (kAuto) any text but `<tool_call>` itself is free.
StatusOr<std::shared_ptr<const Grammar>> CompileToolCallGrammar(
    const std::vector<ToolDefinition>& tools, ToolChoice choice);

// The complete tool calls in `text`, in order; a call whose JSON is not an
// object with a string "name" and an "arguments" member, or that is not
// closed, is left out.
std::vector<ToolCall> ParseToolCalls(std::string_view text);

}  // namespace grammar
}  // namespace pocket
