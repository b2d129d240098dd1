// Text generation on a Session: tokenize the input (a prompt or the new
// turn of a chat), prefill, then sample token by token until a stop token,
// a stop string, the token limit, the context end or the caller cancels.
// Text is streamed in whole UTF-8 characters; text that could still turn
// into a stop string is held back, and the stop string itself is never
// emitted.
//
// Multi-turn: a later call on the same session continues from the cached
// position and feeds only the new tokens (no second BOS). Tokens sampled
// but not yet run through the model (the last one of a call) are fed first.
// A chat turn ending on a stop token (e.g. <|im_end|>) leaves that token in
// the cache, so the next turn's text is exactly what the template appends.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/grammar.h"
#include "grammar/tool_calls.h"
#include "runtime/sampler.h"
#include "runtime/session.h"
#include "runtime/speculative.h"
#include "tokenizer/chat_template.h"
#include "util/status.h"

namespace pocket {

struct GenerateOptions {
  SamplingParams sampling;      // temperature 0 = greedy
  int32_t max_new_tokens = -1;  // -1 = the model's generation default
  bool ignore_eos = false;      // do not stop on eos / stop_token_ids
  std::vector<std::string> stop_strings;
  // Set from any thread to stop the call at its next token boundary, as a
  // callback returning false does (null: nothing to watch). The prompt's
  // prefill runs to its end first, so the session holds whole tokens.
  const std::atomic<bool>* cancel = nullptr;
  // Constrains the generated text to the grammar's language (compiled by
  // grammar/gbnf.h, json_schema.h or regex.h; one grammar may serve any
  // number of calls at once). Before every sampler, greedy included, the
  // tokens the grammar forbids get logit -inf; end-of-sequence tokens are
  // allowed only where the grammar is complete, and end the call there even
  // with ignore_eos. A call that ends for another reason (max_new_tokens,
  // a stop string, cancelling) may leave the text incomplete. Null: free
  // text.
  std::shared_ptr<const grammar::Grammar> grammar;
  // GenerateChat only (Qwen3's template): tools the model may call. The
  // template lists them in the system turn, and the reply is constrained
  // as grammar/tool_calls.h says (`grammar` must then be null): free text
  // with tool calls in it (kAuto), or tool calls only (kRequired), each
  // call's JSON naming a tool and following its parameters' schema. Pass
  // the same tools on every turn of a conversation: the system turn is
  // rendered again each time.
  std::vector<grammar::ToolDefinition> tools;
  grammar::ToolChoice tool_choice = grammar::ToolChoice::kAuto;
  // Speculative decoding (speculative.h): the same tokens, fewer passes
  // over the weights where the drafter guesses well. By default prompt
  // lookup on backends whose batched rows are exact (the CPU).
  SpeculationOptions speculation;
};

struct GenerateResult {
  std::vector<int32_t> prompt_ids;  // tokens of this call's input (with BOS if added)
  std::vector<int32_t> ids;         // generated ids; a stop token is not included
  std::string text;                 // exactly the text passed to the callback
  // Why the call ended: "eos" | "length" | "stop_string" | "cancelled", or on
  // an error "budget" (kBudgetExceeded) | "error" (any other).
  std::string stop;
  int prefill_tokens = 0;        // tokens run by the prefill (pending + prompt)
  int decode_tokens = 0;         // tokens run after the prefill
  SpeculationStats speculation;  // how speculation ran them
  double prefill_seconds = 0;
  double decode_seconds = 0;
  // With tools: the complete tool calls in `text`, in order (a call cut
  // short by the token limit or a stop string is not included).
  std::vector<grammar::ToolCall> tool_calls;
};

// Receives each new piece of text and the id of the token that completed
// it; returning false cancels (generation stops before the next token).
using TextCallback = std::function<bool(std::string_view piece, int32_t token_id)>;

// Continues the session with `prompt`. BOS is prepended (per the config)
// only at the start of a session. `result` is filled on every return with
// what the call did before it ended. Cancellation returns kCancelled (stop
// "cancelled"); the session remains usable. An error while decoding (the
// budget's end under policy kError: kBudgetExceeded, stop "budget";
// non-finite logits: kCorruptFile, stop "error") keeps what was generated,
// the last sampled token pending; an error before decoding leaves the
// session as it was.
Status Generate(Session* session, const std::string& prompt, const GenerateOptions& options,
                const TextCallback& on_text, GenerateResult* result);

// Adds `new_messages` (usually one user message, optionally preceded by a
// system message on the first turn) to the session's chat and generates the
// assistant's reply, rendered with the model's chat template. The reply is
// recorded as an assistant message for the next turn.
Status GenerateChat(Session* session, const std::vector<ChatMessage>& new_messages,
                    const ChatOptions& chat_options, const GenerateOptions& options,
                    const TextCallback& on_text, GenerateResult* result);

}  // namespace pocket
