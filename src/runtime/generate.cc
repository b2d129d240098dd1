#include "runtime/generate.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "grammar/token_mask.h"
#include "runtime/stop_strings.h"
#include "tokenizer/tokenizer.h"

namespace pocket {

namespace {

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

Status CheckUtf8(std::string_view text, const char* what) {
  const int64_t bad = FindInvalidUtf8(text);
  if (bad >= 0) {
    return Errorf(StatusCode::kInvalidArgument,
                  "%s is not valid UTF-8: invalid byte 0x%02x at byte offset %lld", what,
                  static_cast<unsigned>(static_cast<uint8_t>(text[static_cast<size_t>(bad)])),
                  static_cast<long long>(bad));
  }
  return Status::Ok();
}

bool IsStopToken(const ModelConfig& config, int32_t id) {
  if (id == config.eos_id) return true;
  return std::find(config.stop_token_ids.begin(), config.stop_token_ids.end(), id) !=
         config.stop_token_ids.end();
}

// A SentencePiece decoder drops the leading space of the text's first token;
// "first" means first of the whole session, so the stream decoder is primed
// with the last token that spells text before the generated ones, and its
// bytes are flushed away (they are not part of the reply).
void PrimeDecoder(const std::vector<int32_t>& context, const Tokenizer& tok,
                  StreamDecoder* decoder) {
  for (auto it = context.rbegin(); it != context.rend(); ++it) {
    if (!tok.TokenBytes(*it).empty()) {
      decoder->Push(*it);
      decoder->Flush();
      return;
    }
  }
}

struct Run {
  Session* session;
  const GenerateOptions* options;
  const TextCallback* on_text;
  bool chat;  // a chat turn: a stop token is fed into the cache
  int32_t stop_token = -1;
};

// Makes the cache hold `target` (reusing its longest common prefix with
// what is cached), then decodes.
Status RunGeneration(Run* run, const std::vector<int32_t>& target, GenerateResult* result) {
  Session* session = run->session;
  const ModelConfig& config = session->model().config();
  const Tokenizer& tok = session->model().tokenizer();
  const GenerateOptions& opt = *run->options;
  POCKET_RETURN_IF_ERROR(ValidateSamplingParams(opt.sampling, config.vocab));
  POCKET_RETURN_IF_ERROR(ValidateSpeculationOptions(opt.speculation, session->model()));
  const int32_t max_new =
      opt.max_new_tokens >= 0 ? opt.max_new_tokens : config.generation.max_new_tokens;

  Session::Continuation* cont = session->continuation();
  if (target.empty()) {
    return Errorf(StatusCode::kInvalidArgument,
                  "nothing to generate from: the prompt is empty and the session holds no "
                  "tokens (give a prompt, or a model that adds BOS)");
  }
  StreamDecoder decoder(&tok);
  PrimeDecoder(target, tok, &decoder);

  std::vector<float> logits;
  auto t0 = std::chrono::steady_clock::now();
  size_t computed = 0;
  POCKET_RETURN_IF_ERROR(session->EvalReusingPrefix(target, LogitsMode::kLast, &logits, &computed));
  result->prefill_seconds = Seconds(t0);
  result->prefill_tokens = static_cast<int>(computed);
  cont->pending.clear();

  Sampler sampler(opt.sampling);
  std::unique_ptr<grammar::TokenMasker> masker;
  if (opt.grammar != nullptr) {
    std::vector<int32_t> end_ids = config.stop_token_ids;
    if (config.eos_id >= 0) end_ids.push_back(config.eos_id);
    masker = std::make_unique<grammar::TokenMasker>(opt.grammar, session->model().token_trie(),
                                                    std::move(end_ids));
  }
  std::vector<int32_t> history = session->tokens();
  StopStringFilter filter(opt.stop_strings);
  bool cancelled = false;
  const char* cancelled_by = "the callback";
  auto emit = [&](const std::string& text, int32_t id) {
    if (text.empty() || cancelled) return;
    result->text += text;
    if (*run->on_text && !(*run->on_text)(text, id)) cancelled = true;
  };
  auto cancel_requested = [&] {
    if (opt.cancel == nullptr || !opt.cancel->load(std::memory_order_relaxed)) return false;
    cancelled_by = "a cancel request";
    return true;
  };

  SpeculativeDecoder spec(session, opt.speculation);
  t0 = std::chrono::steady_clock::now();
  int32_t last = -1;
  cancelled = cancel_requested();  // during the prefill
  if (cancelled) result->stop = "cancelled";
  while (!cancelled) {
    if (static_cast<int32_t>(result->ids.size()) >= max_new) {
      result->stop = "length";
      break;
    }
    if (masker != nullptr) {
      if (masker->IsComplete() && !masker->matcher().CanContinue() &&
          config.stop_token_ids.empty() && config.eos_id < 0) {
        result->stop = "eos";  // complete, and the model has no token to say so
        break;
      }
      masker->Apply(logits.data(), config.vocab);
    }
    last = sampler.Sample(logits.data(), config.vocab, history);
    if ((!opt.ignore_eos || masker != nullptr) && IsStopToken(config, last)) {
      result->stop = "eos";
      run->stop_token = last;
      break;
    }
    if (masker != nullptr && !masker->Accept(last).ok()) {
      // Every token was masked: no token of the vocabulary spells a byte
      // the grammar allows here. The cache holds every earlier token.
      spec.Finish();
      result->speculation = spec.stats();
      result->decode_seconds = Seconds(t0);
      return Errorf(StatusCode::kInvalidArgument,
                    "grammar: no token of the vocabulary can continue the output after %zu "
                    "tokens (%zu bytes)",
                    result->ids.size(), result->text.size());
    }
    result->ids.push_back(last);
    history.push_back(last);
    emit(filter.Push(decoder.Push(last)), last);
    if (!cancelled) cancelled = cancel_requested();
    if (cancelled) {
      result->stop = "cancelled";
      break;
    }
    if (filter.matched()) {
      result->stop = "stop_string";
      break;
    }
    // A sliding cache never fills; otherwise the context end stops here
    // (and the budget's end fails the next Eval).
    const bool context_full =
        session->options().kv_policy == KvPolicy::kError && spec.position() >= session->context();
    if (static_cast<int32_t>(result->ids.size()) >= max_new || context_full) {
      result->stop = "length";
      break;
    }
    Status s = spec.Feed(history, &logits);
    if (!s.ok()) {
      cont->pending = {last};
      result->speculation = spec.stats();
      result->decode_seconds = Seconds(t0);
      return s;
    }
    ++result->decode_tokens;
  }
  spec.Finish();
  result->speculation = spec.stats();
  if (result->stop == "length" || result->stop == "eos") {
    emit(filter.Push(decoder.Flush()), last);
    emit(filter.Finish(), last);
  }
  if (result->stop == "eos" && run->stop_token >= 0) {
    if (run->chat) {
      // The template's turn ends with this token; keep it in the cache so the
      // next turn continues exactly as the rendered conversation would.
      POCKET_RETURN_IF_ERROR(session->Eval({run->stop_token}, LogitsMode::kLast, nullptr));
    } else {
      cont->pending = {run->stop_token};
    }
  } else if (!result->ids.empty()) {
    cont->pending = {result->ids.back()};  // every exit above precedes its Eval
  }
  result->decode_seconds = Seconds(t0);
  return cancelled ? Errorf(StatusCode::kCancelled, "generation cancelled by %s after %zu tokens",
                            cancelled_by, result->ids.size())
                   : Status::Ok();
}

// Records in result->stop why a call that failed with `s` ended.
Status Stopped(Status s, GenerateResult* result) {
  if (!s.ok() && s.code() != StatusCode::kCancelled) {
    result->stop = s.code() == StatusCode::kBudgetExceeded ? "budget" : "error";
  }
  return s;
}

Status GeneratePlain(Session* session, const std::string& prompt, const GenerateOptions& options,
                     const TextCallback& on_text, GenerateResult* result) {
  POCKET_RETURN_IF_ERROR(CheckUtf8(prompt, "prompt"));
  if (!options.tools.empty()) {
    return Status(StatusCode::kInvalidArgument,
                  "tools are for chat: the template renders them (use GenerateChat)");
  }
  const ModelConfig& config = session->model().config();
  POCKET_ASSIGN_OR_RETURN(std::vector<int32_t> ids,
                          session->model().tokenizer().Encode(prompt, true));
  Session::Continuation* cont = session->continuation();
  if (session->position() == 0 && cont->pending.empty() && config.add_bos && config.bos_id >= 0) {
    ids.insert(ids.begin(), config.bos_id);
  }
  result->prompt_ids = ids;
  // Plain text continues the session: everything cached, then the pending
  // token, then the prompt.
  std::vector<int32_t> target = session->tokens();
  target.insert(target.end(), cont->pending.begin(), cont->pending.end());
  target.insert(target.end(), ids.begin(), ids.end());
  Run run{session, &options, &on_text, false};
  Status s = RunGeneration(&run, target, result);
  // Plain text breaks the chat transcript: a later chat turn starts afresh.
  if (s.ok() || s.code() == StatusCode::kCancelled) cont->in_chat = false;
  return s;
}

Status GenerateChatTurn(Session* session, const std::vector<ChatMessage>& new_messages,
                        const ChatOptions& chat_options, const GenerateOptions& options,
                        const TextCallback& on_text, GenerateResult* result) {
  const ModelConfig& config = session->model().config();
  const Tokenizer& tok = session->model().tokenizer();
  if (new_messages.empty()) {
    return Errorf(StatusCode::kInvalidArgument, "chat: no new messages given");
  }
  for (size_t i = 0; i < new_messages.size(); ++i) {
    const std::string what = StringPrintf("chat message %zu (%s)", i, new_messages[i].role.c_str());
    POCKET_RETURN_IF_ERROR(CheckUtf8(new_messages[i].content, what.c_str()));
  }
  // Tools go into the template and constrain the reply.
  ChatOptions rendering = chat_options;
  GenerateOptions constrained;
  const GenerateOptions* run_options = &options;
  if (!options.tools.empty()) {
    if (options.grammar != nullptr) {
      return Status(StatusCode::kInvalidArgument,
                    "chat: tools and a grammar exclude each other (the tools make the grammar)");
    }
    for (const grammar::ToolDefinition& tool : options.tools) {
      POCKET_ASSIGN_OR_RETURN(std::string signature, grammar::ToolSignatureJson(tool));
      rendering.tools.push_back(std::move(signature));
    }
    constrained = options;
    POCKET_ASSIGN_OR_RETURN(constrained.grammar,
                            grammar::CompileToolCallGrammar(options.tools, options.tool_choice));
    run_options = &constrained;
  }
  Session::Continuation* cont = session->continuation();
  std::vector<ChatMessage> messages = cont->in_chat ? cont->messages : std::vector<ChatMessage>();
  messages.insert(messages.end(), new_messages.begin(), new_messages.end());
  POCKET_ASSIGN_OR_RETURN(std::string full, RenderChat(config.chat_template_kind,
                                                       config.chat_template, messages, rendering));
  // The tokens the cache should hold: when the cached conversation spells a
  // prefix of the new rendering, it is kept token for token (the sampled ids
  // need not be how the tokenizer would spell the reply) and only the text
  // the template appends is tokenized. Otherwise (the template rewrites an
  // earlier turn, such as Qwen3 dropping past think blocks; a reply cut by a
  // stop string; plain text or a new conversation before) the whole
  // rendering is tokenized. Either way only the tokens after the longest
  // common prefix with the cache are computed.
  const bool continues = cont->in_chat && session->position() > 0 &&
                         full.compare(0, cont->chat_text.size(), cont->chat_text) == 0;
  std::vector<int32_t> target;
  if (continues) {
    target = session->tokens();
    target.insert(target.end(), cont->pending.begin(), cont->pending.end());
  }
  POCKET_ASSIGN_OR_RETURN(
      std::vector<int32_t> ids,
      tok.Encode(continues ? std::string_view(full).substr(cont->chat_text.size()) : full, true));
  if (!continues && config.add_bos && config.bos_id >= 0 &&
      (ids.empty() || ids[0] != config.bos_id)) {
    ids.insert(ids.begin(), config.bos_id);
  }
  target.insert(target.end(), ids.begin(), ids.end());
  if (target.size() > session->context() && session->options().kv_policy == KvPolicy::kError) {
    return Errorf(StatusCode::kOutOfRange,
                  "chat of %zu tokens does not fit: context is %zu tokens; start a new chat "
                  "or shorten the messages",
                  target.size(), session->context());
  }
  result->prompt_ids = ids;
  Run run{session, run_options, &on_text, true};
  Status s = RunGeneration(&run, target, result);
  if (!options.tools.empty()) result->tool_calls = grammar::ParseToolCalls(result->text);
  if (!s.ok() && s.code() != StatusCode::kCancelled) return s;

  std::string reply = tok.Decode(result->ids);
  cont->in_chat = true;
  cont->messages = std::move(messages);
  cont->messages.push_back({"assistant", result->text});
  cont->chat_text = full + reply;
  if (run.stop_token >= 0) cont->chat_text += tok.TokenText(run.stop_token);
  return s;
}

}  // namespace

Status Generate(Session* session, const std::string& prompt, const GenerateOptions& options,
                const TextCallback& on_text, GenerateResult* result) {
  *result = GenerateResult();
  return Stopped(GeneratePlain(session, prompt, options, on_text, result), result);
}

Status GenerateChat(Session* session, const std::vector<ChatMessage>& new_messages,
                    const ChatOptions& chat_options, const GenerateOptions& options,
                    const TextCallback& on_text, GenerateResult* result) {
  *result = GenerateResult();
  return Stopped(GenerateChatTurn(session, new_messages, chat_options, options, on_text, result),
                 result);
}

}  // namespace pocket
