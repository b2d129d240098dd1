// Pocket's C++ API: a header-only wrapper over the stable C ABI
// (pocket/pocket.h), so C++ hosts get RAII and std::string without giving
// up ABI stability. No exceptions: every fallible call returns a
// pocket::Status (or fills an out-parameter and returns one).
//
//   pocket::Model model;
//   pocket::Status s = pocket::Model::Load("model.pocket", {}, &model);
//   pocket::Session session;
//   s = model.NewSession({}, &session);
//   s = session.Generate("Once upon a time", pocket::Sampling(),
//                        [](std::string_view text, int32_t) {
//                          std::cout << text; return true; });
#ifndef POCKET_POCKET_HPP_
#define POCKET_POCKET_HPP_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pocket/pocket.h"

namespace pocket {
// The wrapper's classes live in an inline namespace: users write
// pocket::Model, but the symbols are pocket::v1::Model, distinct from the
// library's internal classes of the same names (whose inline members would
// otherwise share mangled names with these and break the one-definition
// rule), and a future incompatible wrapper can become v2 side by side.
inline namespace v1 {

class Status {
 public:
  Status() = default;
  explicit Status(pocket_status code)
      : code_(code), message_(code == POCKET_OK ? "" : pocket_last_error()) {}
  bool ok() const { return code_ == POCKET_OK; }
  pocket_status code() const { return code_; }
  const std::string& message() const { return message_; }

 private:
  pocket_status code_ = POCKET_OK;
  std::string message_;
};

// A tool the model may call in Chat (pocket_tool); empty parameters: any
// JSON object.
struct Tool {
  std::string name;
  std::string description;
  std::string parameters;  // a JSON Schema of the arguments
};

struct ToolCall {
  std::string name;
  std::string arguments;  // compact JSON text
};

struct Sampling : pocket_sampling {
  Sampling() { pocket_sampling_init(this); }
  std::vector<std::string> stops;  // stop strings (owned here)
  std::vector<Tool> tool_list;     // Chat's tools (owned here); tool_choice picks how
};

struct ModelOptions : pocket_model_options {
  ModelOptions() { pocket_model_options_init(this); }
};

struct SessionOptions : pocket_session_options {
  SessionOptions() { pocket_session_options_init(this); }
};

struct MemoryUsage : pocket_memory_usage {
  MemoryUsage() { pocket_memory_usage_init(this); }
};

// Filled by Generate and Chat whatever status they return (pocket.h).
struct Generation : pocket_generation {
  Generation() { pocket_generation_init(this); }
  std::string text;             // the text the call streamed
  std::vector<ToolCall> calls;  // Chat with tools: the reply's complete tool calls
};

struct Message {
  std::string role;
  std::string content;
};

// Receives whole UTF-8 characters; return false to stop generating.
using OnText = std::function<bool(std::string_view text, int32_t token_id)>;

class Session;

class Model {
 public:
  Model() = default;
  Model(Model&& other) noexcept : m_(std::exchange(other.m_, nullptr)) {}
  Model& operator=(Model&& other) noexcept {
    std::swap(m_, other.m_);
    return *this;
  }
  ~Model() { pocket_model_free(m_); }

  static Status Load(const std::string& path, const ModelOptions& options, Model* out) {
    pocket_model* m = nullptr;
    Status s(pocket_model_load(path.c_str(), &options, &m));
    if (s.ok()) *out = Model(m);
    return s;
  }

  Status NewSession(const SessionOptions& options, Session* out);

  int32_t vocab_size() const { return pocket_model_vocab_size(m_); }
  int32_t context_length() const { return pocket_model_context_length(m_); }
  std::string architecture() const { return pocket_model_architecture(m_); }

  Status Tokenize(std::string_view text, std::vector<int32_t>* ids) const {
    size_t n = 0;
    ids->resize(text.size() + 16);
    pocket_status c = pocket_tokenize(m_, text.data(), text.size(), ids->data(), ids->size(), &n);
    if (c == POCKET_OUT_OF_RANGE) {
      ids->resize(n);
      c = pocket_tokenize(m_, text.data(), text.size(), ids->data(), ids->size(), &n);
    }
    Status s(c);
    ids->resize(s.ok() ? n : 0);
    return s;
  }

  Status Detokenize(const std::vector<int32_t>& ids, std::string* text) const {
    size_t n = 0;
    std::string buf(ids.size() * 8 + 16, '\0');
    pocket_status c = pocket_detokenize(m_, ids.data(), ids.size(), &buf[0], buf.size(), &n);
    if (c == POCKET_OUT_OF_RANGE) {
      buf.assign(n + 1, '\0');
      c = pocket_detokenize(m_, ids.data(), ids.size(), &buf[0], buf.size(), &n);
    }
    Status s(c);
    text->assign(s.ok() ? buf.substr(0, n) : std::string());
    return s;
  }

  pocket_model* get() const { return m_; }

 private:
  explicit Model(pocket_model* m) : m_(m) {}
  pocket_model* m_ = nullptr;
};

// One call at a time: a call made while another is in progress on the same
// session (from its OnText, or from another thread) returns POCKET_BUSY;
// destroying the Session meanwhile frees it when that call returns.
class Session {
 public:
  Session() = default;
  Session(Session&& other) noexcept : s_(std::exchange(other.s_, nullptr)), model_(other.model_) {}
  Session& operator=(Session&& other) noexcept {
    std::swap(s_, other.s_);
    std::swap(model_, other.model_);
    return *this;
  }
  ~Session() { pocket_session_free(s_); }

  pocket_session* get() const { return s_; }
  Status Reset() { return Status(pocket_session_reset(s_)); }
  // From any thread: the Generate or Chat in progress stops after its
  // current token with POCKET_CANCELLED (pocket_session_cancel).
  Status Cancel() { return Status(pocket_session_cancel(s_)); }
  // Gives memory back under pressure (pocket_session_trim): level
  // POCKET_TRIM_SCRATCH, or POCKET_TRIM_SUSPEND with the file to suspend to.
  Status Trim(int32_t level, const std::string& state_path = "") {
    return Status(
        pocket_session_trim(s_, level, state_path.empty() ? nullptr : state_path.c_str()));
  }
  int32_t position() const { return pocket_session_position(s_); }

  // Bytes held by category, the budget and the tokens it allows.
  Status Memory(MemoryUsage* usage) const { return Status(pocket_session_memory(s_, usage)); }
  // Tokens and KV cache to a file, and back (same model file and KV type).
  Status Save(const std::string& path) const {
    return Status(pocket_session_save(s_, path.c_str()));
  }
  Status Load(const std::string& path) { return Status(pocket_session_load(s_, path.c_str())); }
  // A session on `draft`, a smaller model with the same tokenizer, to set as
  // Sampling::draft_session with POCKET_SPECULATION_MODEL; it shares this
  // session's budget (pocket_session_new_draft).
  Status NewDraft(Model& draft, Session* out) {
    pocket_session* s = nullptr;
    Status status(pocket_session_new_draft(s_, draft.get(), &s));
    if (status.ok()) *out = Session(s, draft.get());
    return status;
  }
  // Moves the conversation to `target`, the same model file loaded with
  // another backend (pocket_session_move); `target` must outlive the session.
  Status MoveTo(Model& target) {
    Status s(pocket_session_move(s_, target.get()));
    if (s.ok()) model_ = target.get();
    return s;
  }

  // Appends tokens; fills the last token's next-token logits when non-null.
  Status Eval(const std::vector<int32_t>& tokens, std::vector<float>* logits) {
    float* out = nullptr;
    if (logits != nullptr) {
      logits->resize(static_cast<size_t>(pocket_model_vocab_size(model_)));
      out = logits->data();
    }
    return Status(pocket_session_eval(s_, tokens.data(), tokens.size(), out));
  }

  Status Generate(const std::string& prompt, const Sampling& sampling, const OnText& on_text,
                  Generation* result = nullptr) {
    Generation local;
    Generation* r = result != nullptr ? result : &local;
    r->text.clear();
    r->calls.clear();
    Call call{&on_text, r};
    std::vector<const char*> stops;
    std::vector<pocket_tool> tools;
    const pocket_sampling raw = Raw(sampling, &stops, &tools);
    return Status(pocket_generate(s_, prompt.c_str(), &raw, &Call::Trampoline, &call, r));
  }

  Status Chat(const std::vector<Message>& messages, bool enable_thinking, const Sampling& sampling,
              const OnText& on_text, Generation* result = nullptr) {
    Generation local;
    Generation* r = result != nullptr ? result : &local;
    r->text.clear();
    Call call{&on_text, r};
    std::vector<pocket_message> raw_messages;
    raw_messages.reserve(messages.size());
    for (const Message& m : messages) raw_messages.push_back({m.role.c_str(), m.content.c_str()});
    std::vector<const char*> stops;
    std::vector<pocket_tool> tools;
    const pocket_sampling raw = Raw(sampling, &stops, &tools);
    Status s(pocket_chat(s_, raw_messages.data(), raw_messages.size(), enable_thinking ? 1 : 0,
                         &raw, &Call::Trampoline, &call, r));
    r->calls.clear();
    for (size_t i = 0; i < r->n_tool_calls; ++i) {
      r->calls.push_back({r->tool_calls[i].name, r->tool_calls[i].arguments});
    }
    return s;
  }

 private:
  friend class Model;
  Session(pocket_session* s, const pocket_model* model) : s_(s), model_(model) {}

  struct Call {
    const OnText* on_text;
    Generation* result;
    static int Trampoline(const char* text, size_t len, int32_t id, void* user) {
      Call* c = static_cast<Call*>(user);
      c->result->text.append(text, len);
      if (!*c->on_text) return 0;
      return (*c->on_text)(std::string_view(text, len), id) ? 0 : 1;
    }
  };

  static pocket_sampling Raw(const Sampling& s, std::vector<const char*>* stops,
                             std::vector<pocket_tool>* tools) {
    pocket_sampling raw = s;
    for (const std::string& stop : s.stops) stops->push_back(stop.c_str());
    raw.stop_strings = stops->empty() ? nullptr : stops->data();
    raw.n_stop_strings = stops->size();
    for (const Tool& t : s.tool_list) {
      tools->push_back({t.name.c_str(), t.description.c_str(), t.parameters.c_str()});
    }
    raw.tools = tools->empty() ? nullptr : tools->data();
    raw.n_tools = tools->size();
    return raw;
  }

  pocket_session* s_ = nullptr;
  const pocket_model* model_ = nullptr;
};

inline Status Model::NewSession(const SessionOptions& options, Session* out) {
  pocket_session* s = nullptr;
  Status status(pocket_session_new(m_, &options, &s));
  if (status.ok()) *out = Session(s, m_);
  return status;
}

inline void SetLogCallback(pocket_log_fn fn, void* user_data) {
  pocket_set_log_callback(fn, user_data);
}

}  // namespace v1
}  // namespace pocket

#endif  // POCKET_POCKET_HPP_
