// The C ABI of include/pocket/pocket.h over the runtime's C++ classes.
// Everything crossing the boundary is checked here: null pointers, struct
// sizes, enum values. Errors set the calling thread's last-error string.
#include "pocket/pocket.h"

#include <atomic>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "convert/gguf_import.h"
#include "convert/gguf_reader.h"
#include "grammar/gbnf.h"
#include "grammar/json_schema.h"
#include "grammar/regex.h"
#include "runtime/cpu_kernels.h"
#include "runtime/devices.h"
#include "runtime/drafters.h"
#include "runtime/generate.h"
#include "runtime/model.h"
#include "runtime/session.h"
#include "util/log.h"
#include "util/status.h"

struct pocket_model {
  std::unique_ptr<pocket::Model> model;
};

// Every call on a session holds it for its whole length (SessionCall), so a
// call that arrives meanwhile, from the running call's callback or from
// another thread, is refused with POCKET_BUSY instead of changing the
// session under the call in progress.
struct pocket_session {
  // kFreeRequested: pocket_session_free came while a call held the session,
  // and that call frees it when it ends.
  enum State { kIdle, kBusy, kFreeRequested };

  std::unique_ptr<pocket::Session> session;
  mutable std::atomic<int> state{kIdle};
  // The API function holding the session, for the POCKET_BUSY message.
  mutable std::atomic<const char*> busy_in{nullptr};
  // Set by pocket_session_cancel (and a deferred free) from any thread;
  // generate and chat clear it as they start and stop at the next token
  // once it is set.
  std::atomic<bool> cancel{false};
  // Set by pocket_session_trim(POCKET_TRIM_SUSPEND): the state file holding
  // the session's tokens, KV cache and transcript, restored by the next call
  // that needs them, and the position it holds meanwhile. Mutable: restoring
  // changes no state a caller sees.
  mutable std::string suspended_path;
  mutable size_t suspended_position = 0;
  // The tool calls of the last chat reply, which pocket_generation points
  // into until the next call.
  std::vector<pocket::grammar::ToolCall> tool_calls;
  std::vector<pocket_tool_call> raw_tool_calls;

  ~pocket_session() {
    if (!suspended_path.empty()) std::remove(suspended_path.c_str());
  }
};

namespace {

thread_local std::string g_last_error;

pocket_status Fail(const pocket::Status& status) {
  g_last_error = status.message();
  return static_cast<pocket_status>(status.code());
}

pocket_status Fail(pocket_status code, const char* message) {
  g_last_error = message;
  return code;
}

pocket_status Ok() {
  g_last_error.clear();
  return POCKET_OK;
}

// A versioned struct is usable when the caller's copy holds at least the
// fields of version 1 (older callers never pass smaller ones).
template <typename T>
bool SizeOk(const T* s, size_t v1_size) {
  return s == nullptr || s->struct_size >= v1_size;
}

// Whether the caller's versioned struct (of its struct_size) has `field`;
// fields it lacks keep their defaults.
#define POCKET_HAS(s, field) \
  ((s)->struct_size >= offsetof(std::remove_pointer_t<decltype(s)>, field) + sizeof((s)->field))

// Holds `session` for one API call (see pocket_session). status() is
// InvalidArgument for a NULL session and Busy when another call holds it.
// A pocket_session_free that came during the call frees the session when
// the call ends.
class SessionCall {
 public:
  SessionCall(const pocket_session* session, const char* function) : session_(session) {
    if (session == nullptr) {
      status_ =
          pocket::Errorf(pocket::StatusCode::kInvalidArgument, "%s: session is NULL", function);
      return;
    }
    int idle = pocket_session::kIdle;
    if (session->state.compare_exchange_strong(idle, pocket_session::kBusy)) {
      session->busy_in.store(function);
      held_ = true;
      return;
    }
    const char* holder = session->busy_in.load();
    status_ = pocket::Errorf(pocket::StatusCode::kBusy,
                             "%s: the session is busy in %s (this call came from its callback "
                             "or from another thread); a session takes one call at a time: call "
                             "again after %s returns",
                             function, holder != nullptr ? holder : "another call",
                             holder != nullptr ? holder : "it");
  }
  ~SessionCall() {
    if (!held_) return;
    session_->busy_in.store(nullptr);
    int busy = pocket_session::kBusy;
    // Fails only when pocket_session_free came during the call.
    if (!session_->state.compare_exchange_strong(busy, pocket_session::kIdle)) delete session_;
  }
  SessionCall(const SessionCall&) = delete;
  SessionCall& operator=(const SessionCall&) = delete;

  const pocket::Status& status() const { return status_; }
  bool ok() const { return status_.ok(); }

 private:
  const pocket_session* session_;
  bool held_ = false;
  pocket::Status status_;
};

// Before a call that needs the cache, restores a session that
// pocket_session_trim suspended (and deletes its state file).
pocket::Status Resume(const pocket_session* session, const char* function) {
  if (session->suspended_path.empty()) return pocket::Status::Ok();
  const pocket::Status s = session->session->Load(session->suspended_path);
  if (!s.ok()) {
    return pocket::Errorf(s.code(),
                          "%s: the session, suspended by pocket_session_trim, cannot be restored "
                          "(%s); pocket_session_reset starts it over",
                          function, s.message().c_str());
  }
  std::remove(session->suspended_path.c_str());
  session->suspended_path.clear();
  return pocket::Status::Ok();
}

// A call that replaces the whole session forgets a suspended state.
void DropSuspended(const pocket_session* session) {
  if (session->suspended_path.empty()) return;
  std::remove(session->suspended_path.c_str());
  session->suspended_path.clear();
}

// GenerateResult::stop as the C enum; empty when the call failed before the
// runtime ran.
pocket_stop_reason StopReason(const std::string& stop) {
  if (stop == "eos") return POCKET_STOP_EOS;
  if (stop == "length") return POCKET_STOP_LENGTH;
  if (stop == "stop_string") return POCKET_STOP_STRING;
  if (stop == "cancelled") return POCKET_STOP_CANCELLED;
  if (stop == "budget") return POCKET_STOP_BUDGET;
  return POCKET_STOP_ERROR;
}

// The grammar of pocket_sampling's grammar / json_schema / regex (at most
// one), compiled for this call.
pocket::Status CompileConstraint(const pocket_sampling* s, pocket::GenerateOptions* out) {
  const char* grammar = POCKET_HAS(s, grammar) ? s->grammar : nullptr;
  const char* schema = POCKET_HAS(s, json_schema) ? s->json_schema : nullptr;
  const char* regex = POCKET_HAS(s, regex) ? s->regex : nullptr;
  if ((grammar != nullptr) + (schema != nullptr) + (regex != nullptr) > 1) {
    return pocket::Status(pocket::StatusCode::kInvalidArgument,
                          "pocket_sampling: set at most one of grammar, json_schema and regex");
  }
  pocket::StatusOr<std::shared_ptr<const pocket::grammar::Grammar>> g =
      std::shared_ptr<const pocket::grammar::Grammar>();
  if (grammar != nullptr) g = pocket::grammar::CompileGbnf(grammar);
  if (schema != nullptr) g = pocket::grammar::CompileJsonSchema(schema);
  if (regex != nullptr) g = pocket::grammar::CompileRegex(regex);
  if (!g.ok()) return g.status();
  out->grammar = std::move(g).value();
  return pocket::Status::Ok();
}

// pocket_sampling's tools (checked and compiled by GenerateChat).
pocket::Status ToTools(const pocket_sampling* s, pocket::GenerateOptions* out) {
  using pocket::StatusCode;
  if (!POCKET_HAS(s, tool_choice) || (s->tools == nullptr && s->n_tools == 0)) {
    return pocket::Status::Ok();
  }
  if (s->tools == nullptr || s->n_tools == 0) {
    return pocket::Status(StatusCode::kInvalidArgument,
                          "pocket_sampling: tools is NULL but n_tools > 0, or the reverse");
  }
  if (s->tool_choice != POCKET_TOOL_CHOICE_AUTO && s->tool_choice != POCKET_TOOL_CHOICE_REQUIRED) {
    return pocket::Errorf(StatusCode::kInvalidArgument,
                          "pocket_sampling: tool_choice %d is not POCKET_TOOL_CHOICE_AUTO (0) or "
                          "POCKET_TOOL_CHOICE_REQUIRED (1)",
                          s->tool_choice);
  }
  out->tool_choice = s->tool_choice == POCKET_TOOL_CHOICE_REQUIRED
                         ? pocket::grammar::ToolChoice::kRequired
                         : pocket::grammar::ToolChoice::kAuto;
  for (size_t i = 0; i < s->n_tools; ++i) {
    const pocket_tool& t = s->tools[i];
    if (t.name == nullptr) {
      return pocket::Errorf(StatusCode::kInvalidArgument,
                            "pocket_sampling: tool %zu has a NULL name", i);
    }
    out->tools.push_back({t.name, t.description != nullptr ? t.description : "",
                          t.parameters != nullptr ? t.parameters : ""});
  }
  return pocket::Status::Ok();
}

// pocket_sampling's speculation fields (since version 10; AUTO since 11).
// The draft session is held by the caller (DraftCall).
pocket::Status ToSpeculation(const pocket_sampling* s, pocket::GenerateOptions* out) {
  pocket::SpeculationOptions& spec = out->speculation;
  if (!POCKET_HAS(s, draft_session) || s->speculation == POCKET_SPECULATION_OFF) {
    spec = pocket::SpeculationOptions::Off();
    return pocket::Status::Ok();
  }
  switch (s->speculation) {
    case POCKET_SPECULATION_AUTO:
      break;
    case POCKET_SPECULATION_NGRAM:
      spec.exact_backends_only = false;
      break;
    case POCKET_SPECULATION_MODEL:
      if (s->draft_session == nullptr) {
        return pocket::Status(pocket::StatusCode::kInvalidArgument,
                              "pocket_sampling: POCKET_SPECULATION_MODEL needs a draft_session");
      }
      spec.draft_session = s->draft_session->session.get();
      spec.exact_backends_only = false;
      break;
    default:
      return pocket::Errorf(pocket::StatusCode::kInvalidArgument,
                            "pocket_sampling: speculation %d is not POCKET_SPECULATION_OFF (0), "
                            "POCKET_SPECULATION_NGRAM (1), POCKET_SPECULATION_MODEL (2) or "
                            "POCKET_SPECULATION_AUTO (3)",
                            s->speculation);
  }
  if (s->max_draft != 0) spec.max_draft = s->max_draft;
  if (s->lookup_text != nullptr) spec.lookup_text = s->lookup_text;
  return pocket::Status::Ok();
}

// Holds the draft session of `sampling` (POCKET_SPECULATION_MODEL) for a
// generate or chat call on `session`: busy to other calls meanwhile, and
// restored first when pocket_session_trim suspended it.
class DraftCall {
 public:
  DraftCall(const pocket_session* session, const pocket_sampling* sampling, const char* function) {
    if (sampling == nullptr || !POCKET_HAS(sampling, draft_session) ||
        sampling->speculation != POCKET_SPECULATION_MODEL || sampling->draft_session == nullptr) {
      return;
    }
    if (sampling->draft_session == session) {
      status_ = pocket::Errorf(pocket::StatusCode::kInvalidArgument,
                               "%s: the draft_session is the session generating", function);
      return;
    }
    call_.emplace(sampling->draft_session, function);
    status_ = call_->status();
    if (status_.ok()) status_ = Resume(sampling->draft_session, function);
  }
  const pocket::Status& status() const { return status_; }

 private:
  std::optional<SessionCall> call_;
  pocket::Status status_;
};

pocket::Status ToGenerateOptions(const pocket_sampling* s, pocket::GenerateOptions* out) {
  using pocket::StatusCode;
  pocket_sampling defaults;
  pocket_sampling_init(&defaults);
  if (s == nullptr) s = &defaults;
  if (!SizeOk(s, offsetof(pocket_sampling, grammar))) {
    return pocket::Status(
        StatusCode::kInvalidArgument,
        "pocket_sampling.struct_size is too small: call pocket_sampling_init() first");
  }
  out->sampling.temperature = s->temperature;
  out->sampling.top_k = s->top_k;
  out->sampling.top_p = s->top_p;
  out->sampling.min_p = s->min_p;
  out->sampling.repeat_penalty = s->repeat_penalty;
  out->sampling.repeat_last_n = s->repeat_last_n;
  out->sampling.frequency_penalty = s->frequency_penalty;
  out->sampling.presence_penalty = s->presence_penalty;
  out->sampling.seed = s->seed;
  out->max_new_tokens = s->max_new_tokens > 0 ? s->max_new_tokens : -1;
  out->ignore_eos = s->ignore_eos != 0;
  if (s->n_stop_strings > 0 && s->stop_strings == nullptr) {
    return pocket::Status(StatusCode::kInvalidArgument,
                          "stop_strings is NULL but n_stop_strings > 0");
  }
  for (size_t i = 0; i < s->n_stop_strings; ++i) {
    if (s->stop_strings[i] == nullptr || s->stop_strings[i][0] == '\0') {
      return pocket::Status(StatusCode::kInvalidArgument,
                            "stop_strings contains a NULL or empty string");
    }
    out->stop_strings.emplace_back(s->stop_strings[i]);
  }
  POCKET_RETURN_IF_ERROR(ToTools(s, out));
  POCKET_RETURN_IF_ERROR(ToSpeculation(s, out));
  return CompileConstraint(s, out);
}

// A pocket_session_free from the callback stops the generation at once, as
// a cancel does, and the session is freed when the call returns.
pocket::TextCallback WrapCallback(const pocket_session* session, pocket_text_fn fn,
                                  void* user_data) {
  return [session, fn, user_data](std::string_view piece, int32_t id) {
    const bool go_on = fn == nullptr || fn(piece.data(), piece.size(), id, user_data) == 0;
    return go_on && session->state.load() != pocket_session::kFreeRequested;
  };
}

// Fills `result` whatever the status: what the call did before it ended
// (nothing when it failed before generating) and why it ended.
// The tool calls are kept in `session` (null: the call does not hold it),
// which `result` points into.
pocket_status Finish(const pocket::Status& status, pocket::GenerateResult* r,
                     pocket_session* session, pocket_generation* result) {
  if (session != nullptr) {
    session->tool_calls = std::move(r->tool_calls);
    session->raw_tool_calls.clear();
    for (const pocket::grammar::ToolCall& c : session->tool_calls) {
      session->raw_tool_calls.push_back({c.name.c_str(), c.arguments.c_str()});
    }
  }
  if (result != nullptr) {
    result->n_prompt_tokens = static_cast<int32_t>(r->prompt_ids.size());
    result->n_generated = static_cast<int32_t>(r->ids.size());
    result->stop_reason = StopReason(r->stop);
    result->prefill_seconds = r->prefill_seconds;
    result->decode_seconds = r->decode_seconds;
    if (POCKET_HAS(result, n_tool_calls)) {
      const bool any = session != nullptr && !session->raw_tool_calls.empty();
      result->tool_calls = any ? session->raw_tool_calls.data() : nullptr;
      result->n_tool_calls = any ? session->raw_tool_calls.size() : 0;
    }
    if (POCKET_HAS(result, n_accepted)) {
      const pocket::SpeculationStats& spec = r->speculation;
      result->n_decode_steps = static_cast<int32_t>(spec.batched_steps + spec.single_steps);
      result->n_drafted = static_cast<int32_t>(spec.drafted);
      result->n_accepted = static_cast<int32_t>(spec.accepted);
    }
  }
  return status.ok() ? Ok() : Fail(status);
}

}  // namespace

extern "C" {

const char* pocket_version(void) { return POCKET_VERSION_STRING; }

const char* pocket_status_name(pocket_status status) {
  return pocket::StatusCodeName(static_cast<pocket::StatusCode>(status));
}

const char* pocket_last_error(void) { return g_last_error.c_str(); }

void pocket_set_log_callback(pocket_log_fn fn, void* user_data) {
  if (fn == nullptr) {
    pocket::SetLogCallback(nullptr);
    return;
  }
  pocket::SetLogCallback([fn, user_data](pocket::LogLevel level, const std::string& msg) {
    fn(static_cast<pocket_log_level>(level), msg.c_str(), user_data);
  });
}

void pocket_set_cpu_matrix_extension(int32_t allow) { pocket::AllowCpuMatrixExtension(allow != 0); }

void pocket_model_options_init(pocket_model_options* options) {
  if (options == nullptr) return;
  std::memset(options, 0, sizeof(*options));
  options->struct_size = sizeof(*options);
}

pocket_status pocket_model_load(const char* path, const pocket_model_options* options,
                                pocket_model** out) {
  if (out == nullptr) return Fail(POCKET_INVALID_ARGUMENT, "pocket_model_load: out is NULL");
  *out = nullptr;
  if (path == nullptr) return Fail(POCKET_INVALID_ARGUMENT, "pocket_model_load: path is NULL");
  if (!SizeOk(options, offsetof(pocket_model_options, backend) + sizeof(options->backend))) {
    return Fail(POCKET_INVALID_ARGUMENT,
                "pocket_model_options.struct_size is too small: call "
                "pocket_model_options_init() first");
  }
  pocket::ModelOptions opts;
  if (options != nullptr) {
    if (options->threads < 0 || static_cast<size_t>(options->threads) > pocket::MaxCpuThreads()) {
      return Fail(pocket::Errorf(pocket::StatusCode::kInvalidArgument,
                                 "pocket_model_options.threads must be in [0, %zu] (0 = one per "
                                 "fast core), got %d",
                                 pocket::MaxCpuThreads(), options->threads));
    }
    opts.threads = options->threads;
    if (options->backend != nullptr) opts.backend = options->backend;
    if (POCKET_HAS(options, quant_math)) {
      if (options->quant_math != POCKET_QUANT_MATH_INT8 &&
          options->quant_math != POCKET_QUANT_MATH_F32) {
        return Fail(POCKET_INVALID_ARGUMENT,
                    "pocket_model_options.quant_math must be POCKET_QUANT_MATH_INT8 or "
                    "POCKET_QUANT_MATH_F32");
      }
      opts.quant_math = options->quant_math == POCKET_QUANT_MATH_F32 ? pocket::QuantMath::kF32
                                                                     : pocket::QuantMath::kInt8;
    }
    if (POCKET_HAS(options, pin_threads)) opts.pin_threads = options->pin_threads != 0;
    if (POCKET_HAS(options, huge_pages)) opts.huge_pages = options->huge_pages != 0;
  }
  std::string converted;  // a GGUF's temporary .pocket file
  if (pocket::GgufFile::HasMagic(path)) {
    auto tmp = pocket::ConvertGgufToTemporaryFile(path);
    if (!tmp.ok()) return Fail(tmp.status());
    converted = std::move(tmp).value();
  }
  auto model = pocket::Model::Load(converted.empty() ? path : converted.c_str(), opts);
  // The model maps its file, which stays readable once unlinked.
  if (!converted.empty()) std::remove(converted.c_str());
  if (!model.ok()) return Fail(model.status());
  *out = new pocket_model{std::move(model).value()};
  return Ok();
}

void pocket_model_free(pocket_model* model) { delete model; }

int32_t pocket_model_vocab_size(const pocket_model* model) {
  return model == nullptr ? 0 : model->model->config().vocab;
}

int32_t pocket_model_context_length(const pocket_model* model) {
  return model == nullptr ? 0 : model->model->config().context;
}

const char* pocket_model_architecture(const pocket_model* model) {
  return model == nullptr ? "" : model->model->config().architecture.c_str();
}

pocket_status pocket_tokenize(const pocket_model* model, const char* text, size_t text_len,
                              int32_t* ids, size_t capacity, size_t* n_ids) {
  if (model == nullptr || (text == nullptr && text_len > 0) || n_ids == nullptr ||
      (ids == nullptr && capacity > 0)) {
    return Fail(POCKET_INVALID_ARGUMENT, "pocket_tokenize: NULL model, text, ids or n_ids");
  }
  auto encoded = model->model->tokenizer().Encode(std::string_view(text, text_len));
  if (!encoded.ok()) return Fail(encoded.status());
  *n_ids = encoded->size();
  if (encoded->size() > capacity) {
    return Fail(POCKET_OUT_OF_RANGE,
                "pocket_tokenize: ids buffer too small; *n_ids holds the size needed");
  }
  if (!encoded->empty()) std::memcpy(ids, encoded->data(), encoded->size() * sizeof(int32_t));
  return Ok();
}

pocket_status pocket_detokenize(const pocket_model* model, const int32_t* ids, size_t n_ids,
                                char* text, size_t capacity, size_t* text_len) {
  if (model == nullptr || (ids == nullptr && n_ids > 0) || text_len == nullptr ||
      (text == nullptr && capacity > 0)) {
    return Fail(POCKET_INVALID_ARGUMENT, "pocket_detokenize: NULL model, ids, text or text_len");
  }
  const int32_t vocab = model->model->tokenizer().vocab_size();
  for (size_t i = 0; i < n_ids; ++i) {
    if (ids[i] < 0 || ids[i] >= vocab) {
      return Fail(pocket::Errorf(pocket::StatusCode::kInvalidArgument,
                                 "pocket_detokenize: id %d at index %zu is outside the "
                                 "vocabulary [0, %d)",
                                 ids[i], i, vocab));
    }
  }
  const std::string s = model->model->tokenizer().Decode(std::vector<int32_t>(ids, ids + n_ids));
  *text_len = s.size();
  if (s.size() + 1 > capacity) {
    return Fail(POCKET_OUT_OF_RANGE,
                "pocket_detokenize: text buffer too small; *text_len + 1 bytes are needed");
  }
  std::memcpy(text, s.data(), s.size());
  text[s.size()] = '\0';
  return Ok();
}

void pocket_session_options_init(pocket_session_options* options) {
  if (options == nullptr) return;
  std::memset(options, 0, sizeof(*options));
  options->struct_size = sizeof(*options);
  const pocket::SessionOptions defaults;
  options->budget_bytes = defaults.budget_bytes;
  options->kv_policy = 0;
  options->sink_tokens = static_cast<int32_t>(defaults.sink_tokens);
}

pocket_status pocket_session_new(pocket_model* model, const pocket_session_options* options,
                                 pocket_session** out) {
  if (out == nullptr) return Fail(POCKET_INVALID_ARGUMENT, "pocket_session_new: out is NULL");
  *out = nullptr;
  if (model == nullptr) return Fail(POCKET_INVALID_ARGUMENT, "pocket_session_new: model is NULL");
  if (!SizeOk(options, offsetof(pocket_session_options, budget_bytes))) {
    return Fail(POCKET_INVALID_ARGUMENT,
                "pocket_session_options.struct_size is too small: call "
                "pocket_session_options_init() first");
  }
  pocket::SessionOptions opts;
  opts.kv_type = model->model->default_kv_type();
  if (options != nullptr) {
    // 0 is the model's default (bf16 or f16), set above.
    const pocket::KvType kTypes[] = {opts.kv_type, pocket::KvType::kF32, pocket::KvType::kQ8,
                                     pocket::KvType::kBf16, pocket::KvType::kF16};
    if (options->kv_type < 0 || options->kv_type > 4) {
      return Fail(POCKET_INVALID_ARGUMENT,
                  "pocket_session_options.kv_type must be 0 (default), 1 (f32), 2 (q8), 3 (bf16) "
                  "or 4 (f16)");
    }
    opts.kv_type = kTypes[options->kv_type];
    if (POCKET_HAS(options, budget_bytes)) opts.budget_bytes = options->budget_bytes;
    if (POCKET_HAS(options, kv_policy)) {
      if (options->kv_policy != 0 && options->kv_policy != 1) {
        return Fail(POCKET_INVALID_ARGUMENT,
                    "pocket_session_options.kv_policy must be 0 (error) or 1 (slide)");
      }
      opts.kv_policy =
          options->kv_policy == 1 ? pocket::KvPolicy::kSlide : pocket::KvPolicy::kError;
    }
    if (POCKET_HAS(options, sink_tokens)) {
      if (options->sink_tokens < 0) {
        return Fail(POCKET_INVALID_ARGUMENT, "pocket_session_options.sink_tokens must be >= 0");
      }
      opts.sink_tokens = static_cast<size_t>(options->sink_tokens);
    }
  }
  auto session = pocket::Session::Create(model->model.get(), opts);
  if (!session.ok()) return Fail(session.status());
  *out = new pocket_session{std::move(session).value()};
  return Ok();
}

pocket_status pocket_session_new_draft(pocket_session* target, pocket_model* draft_model,
                                       pocket_session** out) {
  if (out == nullptr) return Fail(POCKET_INVALID_ARGUMENT, "pocket_session_new_draft: out is NULL");
  *out = nullptr;
  if (draft_model == nullptr) {
    return Fail(POCKET_INVALID_ARGUMENT, "pocket_session_new_draft: draft_model is NULL");
  }
  const SessionCall call(target, "pocket_session_new_draft");
  if (!call.ok()) return Fail(call.status());
  pocket::Status s = Resume(target, "pocket_session_new_draft");
  if (!s.ok()) return Fail(s);
  const pocket::Model* draft = draft_model->model.get();
  auto session = pocket::CreateDraftSession(target->session.get(), draft, draft->default_kv_type());
  if (!session.ok()) return Fail(session.status());
  *out = new pocket_session{std::move(session).value()};
  return Ok();
}

void pocket_session_free(pocket_session* session) {
  if (session == nullptr) return;
  while (true) {
    int state = pocket_session::kIdle;
    if (session->state.compare_exchange_strong(state, pocket_session::kFreeRequested)) {
      delete session;
      return;
    }
    // A call holds the session (or was asked to free it already): it frees
    // the session when it ends, unless it ended just now, then try again.
    // A generation stops at its next token.
    if (state == pocket_session::kFreeRequested) return;
    session->cancel.store(true);
    if (session->state.compare_exchange_strong(state, pocket_session::kFreeRequested)) return;
  }
}

pocket_status pocket_session_reset(pocket_session* session) {
  const SessionCall call(session, "pocket_session_reset");
  if (!call.ok()) return Fail(call.status());
  DropSuspended(session);
  session->session->Reset();
  return Ok();
}

pocket_status pocket_session_trim(pocket_session* session, int32_t level, const char* state_path) {
  const SessionCall call(session, "pocket_session_trim");
  if (!call.ok()) return Fail(call.status());
  if (level != POCKET_TRIM_SCRATCH && level != POCKET_TRIM_SUSPEND) {
    return Fail(pocket::Errorf(pocket::StatusCode::kInvalidArgument,
                               "pocket_session_trim: level must be POCKET_TRIM_SCRATCH (%d) or "
                               "POCKET_TRIM_SUSPEND (%d), got %d",
                               POCKET_TRIM_SCRATCH, POCKET_TRIM_SUSPEND, level));
  }
  if (level == POCKET_TRIM_SUSPEND && session->suspended_path.empty()) {
    if (state_path == nullptr || state_path[0] == '\0') {
      return Fail(POCKET_INVALID_ARGUMENT,
                  "pocket_session_trim: POCKET_TRIM_SUSPEND needs a state_path to write the "
                  "session to (a file in the app's cache folder)");
    }
    const pocket::Status s = session->session->Save(state_path);
    if (!s.ok()) return Fail(s);
    session->suspended_path = state_path;
    session->suspended_position = session->session->position();
    session->session->Reset();
  }
  session->session->ReleaseScratch();
  return Ok();
}

pocket_status pocket_session_cancel(pocket_session* session) {
  if (session == nullptr) {
    return Fail(POCKET_INVALID_ARGUMENT, "pocket_session_cancel: session is NULL");
  }
  session->cancel.store(true);
  return Ok();
}

int32_t pocket_session_position(const pocket_session* session) {
  if (session == nullptr) return 0;
  const SessionCall call(session, "pocket_session_position");
  if (!call.ok()) return -1;
  if (!session->suspended_path.empty()) return static_cast<int32_t>(session->suspended_position);
  return static_cast<int32_t>(session->session->position());
}

void pocket_memory_usage_init(pocket_memory_usage* usage) {
  if (usage == nullptr) return;
  std::memset(usage, 0, sizeof(*usage));
  usage->struct_size = sizeof(*usage);
}

pocket_status pocket_session_memory(const pocket_session* session, pocket_memory_usage* usage) {
  if (session == nullptr || usage == nullptr) {
    return Fail(POCKET_INVALID_ARGUMENT, "pocket_session_memory: NULL session or usage");
  }
  if (!SizeOk(usage, sizeof(pocket_memory_usage))) {
    return Fail(POCKET_INVALID_ARGUMENT,
                "pocket_memory_usage.struct_size is too small: call "
                "pocket_memory_usage_init() first");
  }
  const SessionCall call(session, "pocket_session_memory");
  if (!call.ok()) return Fail(call.status());
  const pocket::MemoryUsage m = session->session->memory();
  usage->weights = m.weights;
  usage->weights_resident = m.weights_resident;
  usage->model = m.model;
  usage->kv = m.kv;
  usage->scratch = m.scratch;
  usage->logits = m.logits;
  usage->total = m.total();
  usage->budget = m.budget;
  usage->max_tokens = m.max_tokens;
  usage->tokens = m.tokens;
  return Ok();
}

pocket_status pocket_session_save(const pocket_session* session, const char* path) {
  if (session == nullptr || path == nullptr) {
    return Fail(POCKET_INVALID_ARGUMENT, "pocket_session_save: NULL session or path");
  }
  const SessionCall call(session, "pocket_session_save");
  if (!call.ok()) return Fail(call.status());
  pocket::Status s = Resume(session, "pocket_session_save");
  if (s.ok()) s = session->session->Save(path);
  return s.ok() ? Ok() : Fail(s);
}

pocket_status pocket_session_load(pocket_session* session, const char* path) {
  if (session == nullptr || path == nullptr) {
    return Fail(POCKET_INVALID_ARGUMENT, "pocket_session_load: NULL session or path");
  }
  const SessionCall call(session, "pocket_session_load");
  if (!call.ok()) return Fail(call.status());
  const pocket::Status s = session->session->Load(path);
  if (!s.ok()) return Fail(s);
  DropSuspended(session);
  return Ok();
}

pocket_status pocket_session_move(pocket_session* session, pocket_model* target) {
  if (session == nullptr || target == nullptr) {
    return Fail(POCKET_INVALID_ARGUMENT, "pocket_session_move: NULL session or target model");
  }
  const SessionCall call(session, "pocket_session_move");
  if (!call.ok()) return Fail(call.status());
  // A suspended session holds no KV rows: it moves without them, and the
  // next call restores its state file on the new backend.
  const pocket::Status s = session->session->MoveTo(target->model.get());
  return s.ok() ? Ok() : Fail(s);
}

pocket_status pocket_session_eval(pocket_session* session, const int32_t* tokens, size_t n_tokens,
                                  float* logits) {
  if (session == nullptr || (tokens == nullptr && n_tokens > 0)) {
    return Fail(POCKET_INVALID_ARGUMENT, "pocket_session_eval: NULL session or tokens");
  }
  const SessionCall call(session, "pocket_session_eval");
  if (!call.ok()) return Fail(call.status());
  pocket::Status resumed = Resume(session, "pocket_session_eval");
  if (!resumed.ok()) return Fail(resumed);
  std::vector<float> out;
  const pocket::Status s = session->session->Eval(std::vector<int32_t>(tokens, tokens + n_tokens),
                                                  pocket::LogitsMode::kLast, &out);
  if (!s.ok()) return Fail(s);
  if (logits != nullptr) std::memcpy(logits, out.data(), out.size() * sizeof(float));
  return Ok();
}

void pocket_sampling_init(pocket_sampling* sampling) {
  if (sampling == nullptr) return;
  std::memset(sampling, 0, sizeof(*sampling));
  sampling->struct_size = sizeof(*sampling);
  sampling->temperature = 0.0f;
  sampling->top_p = 1.0f;
  sampling->repeat_penalty = 1.0f;
  sampling->repeat_last_n = 64;
  sampling->speculation = POCKET_SPECULATION_AUTO;
}

void pocket_generation_init(pocket_generation* result) {
  if (result == nullptr) return;
  std::memset(result, 0, sizeof(*result));
  result->struct_size = sizeof(*result);
}

pocket_status pocket_generate(pocket_session* session, const char* prompt,
                              const pocket_sampling* sampling, pocket_text_fn callback,
                              void* user_data, pocket_generation* result) {
  pocket::GenerateResult r;
  const SessionCall call(session, "pocket_generate");
  pocket::Status s = call.status();
  if (s.ok()) s = Resume(session, "pocket_generate");
  const DraftCall draft(session, sampling, "pocket_generate");
  if (s.ok()) s = draft.status();
  if (s.ok() && prompt == nullptr) {
    s = pocket::Status(pocket::StatusCode::kInvalidArgument, "pocket_generate: prompt is NULL");
  }
  pocket::GenerateOptions options;
  if (s.ok()) s = ToGenerateOptions(sampling, &options);
  if (s.ok()) {
    session->cancel.store(false);
    options.cancel = &session->cancel;
    s = pocket::Generate(session->session.get(), prompt, options,
                         WrapCallback(session, callback, user_data), &r);
  }
  return Finish(s, &r, call.status().ok() ? session : nullptr, result);
}

pocket_status pocket_chat(pocket_session* session, const pocket_message* messages,
                          size_t n_messages, int enable_thinking, const pocket_sampling* sampling,
                          pocket_text_fn callback, void* user_data, pocket_generation* result) {
  pocket::GenerateResult r;
  const SessionCall call(session, "pocket_chat");
  pocket::Status s = call.status();
  if (s.ok()) s = Resume(session, "pocket_chat");
  const DraftCall draft(session, sampling, "pocket_chat");
  if (s.ok()) s = draft.status();
  if (s.ok() && (messages == nullptr || n_messages == 0)) {
    s = pocket::Status(pocket::StatusCode::kInvalidArgument, "pocket_chat: no messages");
  }
  std::vector<pocket::ChatMessage> msgs;
  for (size_t i = 0; s.ok() && i < n_messages; ++i) {
    if (messages[i].role == nullptr || messages[i].content == nullptr) {
      s = pocket::Errorf(pocket::StatusCode::kInvalidArgument,
                         "pocket_chat: message %zu has a NULL role or content", i);
    } else {
      msgs.push_back({messages[i].role, messages[i].content});
    }
  }
  pocket::GenerateOptions options;
  if (s.ok()) s = ToGenerateOptions(sampling, &options);
  if (s.ok()) {
    session->cancel.store(false);
    options.cancel = &session->cancel;
    pocket::ChatOptions chat;
    chat.enable_thinking = enable_thinking != 0;
    s = pocket::GenerateChat(session->session.get(), msgs, chat, options,
                             WrapCallback(session, callback, user_data), &r);
  }
  return Finish(s, &r, call.status().ok() ? session : nullptr, result);
}

}  // extern "C"
