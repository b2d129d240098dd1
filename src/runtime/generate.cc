#include "runtime/generate.h"

#include <algorithm>
#include <chrono>
#include <utility>

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
void PrimeDecoder(const std::vector<std::vector<int32_t>*>& context, const Tokenizer& tok,
                  StreamDecoder* decoder) {
  for (auto part = context.rbegin(); part != context.rend(); ++part) {
    for (auto it = (*part)->rbegin(); it != (*part)->rend(); ++it) {
      if (!tok.TokenBytes(*it).empty()) {
        decoder->Push(*it);
        decoder->Flush();
        return;
      }
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

// Prefill `input` (after any pending tokens), then decode.
Status RunGeneration(Run* run, std::vector<int32_t> input, GenerateResult* result) {
  Session* session = run->session;
  const ModelConfig& config = session->model().config();
  const Tokenizer& tok = session->model().tokenizer();
  const GenerateOptions& opt = *run->options;
  POCKET_RETURN_IF_ERROR(ValidateSamplingParams(opt.sampling, config.vocab));
  const int32_t max_new =
      opt.max_new_tokens >= 0 ? opt.max_new_tokens : config.generation.max_new_tokens;

  Session::Continuation* cont = session->continuation();
  std::vector<int32_t> feed = cont->pending;
  feed.insert(feed.end(), input.begin(), input.end());
  if (feed.empty()) {
    return Errorf(StatusCode::kInvalidArgument,
                  "nothing to generate from: the prompt is empty and the session holds no "
                  "tokens (give a prompt, or a model that adds BOS)");
  }
  StreamDecoder decoder(&tok);
  std::vector<int32_t> history = session->tokens();
  PrimeDecoder({&history, &feed}, tok, &decoder);

  std::vector<float> logits;
  auto t0 = std::chrono::steady_clock::now();
  POCKET_RETURN_IF_ERROR(session->Eval(feed, LogitsMode::kLast, &logits));
  result->prefill_seconds = Seconds(t0);
  result->prefill_tokens = static_cast<int>(feed.size());
  cont->pending.clear();

  Sampler sampler(opt.sampling);
  history = session->tokens();
  StopStringFilter filter(opt.stop_strings);
  bool cancelled = false;
  auto emit = [&](const std::string& text, int32_t id) {
    if (text.empty() || cancelled) return;
    result->text += text;
    if (*run->on_text && !(*run->on_text)(text, id)) cancelled = true;
  };

  t0 = std::chrono::steady_clock::now();
  int32_t last = -1;
  while (true) {
    if (static_cast<int32_t>(result->ids.size()) >= max_new) {
      result->stop = "length";
      break;
    }
    last = sampler.Sample(logits.data(), config.vocab, history);
    if (!opt.ignore_eos && IsStopToken(config, last)) {
      result->stop = "eos";
      run->stop_token = last;
      break;
    }
    result->ids.push_back(last);
    history.push_back(last);
    emit(filter.Push(decoder.Push(last)), last);
    if (cancelled) {
      result->stop = "cancelled";
      break;
    }
    if (filter.matched()) {
      result->stop = "stop_string";
      break;
    }
    if (static_cast<int32_t>(result->ids.size()) >= max_new ||
        session->position() >= session->context()) {
      result->stop = "length";
      break;
    }
    Status s = session->Eval({last}, LogitsMode::kLast, &logits);
    if (!s.ok()) {
      cont->pending = {last};
      return s;
    }
    ++result->decode_tokens;
  }
  if (result->stop == "length" || result->stop == "eos") {
    emit(filter.Push(decoder.Flush()), last);
    emit(filter.Finish(), last);
  }
  if (result->stop == "eos") {
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
  return cancelled ? Errorf(StatusCode::kCancelled,
                            "generation cancelled by the callback after "
                            "%zu tokens",
                            result->ids.size())
                   : Status::Ok();
}

}  // namespace

Status Generate(Session* session, const std::string& prompt, const GenerateOptions& options,
                const TextCallback& on_text, GenerateResult* result) {
  *result = GenerateResult();
  POCKET_RETURN_IF_ERROR(CheckUtf8(prompt, "prompt"));
  const ModelConfig& config = session->model().config();
  POCKET_ASSIGN_OR_RETURN(std::vector<int32_t> ids,
                          session->model().tokenizer().Encode(prompt, true));
  Session::Continuation* cont = session->continuation();
  if (session->position() == 0 && cont->pending.empty() && config.add_bos && config.bos_id >= 0) {
    ids.insert(ids.begin(), config.bos_id);
  }
  result->prompt_ids = ids;
  Run run{session, &options, &on_text, false};
  Status s = RunGeneration(&run, std::move(ids), result);
  // Plain text breaks the chat transcript: a later chat turn starts afresh.
  if (s.ok() || s.code() == StatusCode::kCancelled) cont->in_chat = false;
  return s;
}

Status GenerateChat(Session* session, const std::vector<ChatMessage>& new_messages,
                    const ChatOptions& chat_options, const GenerateOptions& options,
                    const TextCallback& on_text, GenerateResult* result) {
  *result = GenerateResult();
  const ModelConfig& config = session->model().config();
  const Tokenizer& tok = session->model().tokenizer();
  if (new_messages.empty()) {
    return Errorf(StatusCode::kInvalidArgument, "chat: no new messages given");
  }
  for (size_t i = 0; i < new_messages.size(); ++i) {
    const std::string what = StringPrintf("chat message %zu (%s)", i, new_messages[i].role.c_str());
    POCKET_RETURN_IF_ERROR(CheckUtf8(new_messages[i].content, what.c_str()));
  }
  Session::Continuation* cont = session->continuation();
  std::vector<ChatMessage> messages = cont->in_chat ? cont->messages : std::vector<ChatMessage>();
  messages.insert(messages.end(), new_messages.begin(), new_messages.end());
  POCKET_ASSIGN_OR_RETURN(
      std::string full,
      RenderChat(config.chat_template_kind, config.chat_template, messages, chat_options));
  // Feed only what the template appends to the cached conversation. When
  // the cache does not spell a prefix of the new rendering (the template
  // rewrites earlier turns, a reply was cut short, or plain text came
  // before), the conversation is re-run from the start.
  const bool continues = cont->in_chat && cont->pending.empty() && session->position() > 0 &&
                         full.compare(0, cont->chat_text.size(), cont->chat_text) == 0;
  std::string delta = continues ? full.substr(cont->chat_text.size()) : full;
  POCKET_ASSIGN_OR_RETURN(std::vector<int32_t> ids, tok.Encode(delta, true));
  if (!continues) {
    if (config.add_bos && config.bos_id >= 0 && (ids.empty() || ids[0] != config.bos_id)) {
      ids.insert(ids.begin(), config.bos_id);
    }
    // Checked before Reset so a chat that cannot fit leaves the session as is.
    if (ids.size() > session->context()) {
      return Errorf(StatusCode::kOutOfRange,
                    "chat of %zu tokens does not fit: context is %zu tokens; start a new chat "
                    "or shorten the messages",
                    ids.size(), session->context());
    }
    session->Reset();
    cont = session->continuation();
  }
  result->prompt_ids = ids;
  Run run{session, &options, &on_text, true};
  Status s = RunGeneration(&run, std::move(ids), result);
  if (!s.ok() && s.code() != StatusCode::kCancelled) return s;

  std::string reply = tok.Decode(result->ids);
  cont->in_chat = true;
  cont->messages = std::move(messages);
  cont->messages.push_back({"assistant", result->text});
  cont->chat_text = full + reply;
  if (run.stop_token >= 0) cont->chat_text += tok.TokenText(run.stop_token);
  return s;
}

}  // namespace pocket
