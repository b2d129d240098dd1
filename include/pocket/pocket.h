/*
 * Pocket — on-device LLM inference. The stable C ABI.
 *
 * This header is the whole public face of the library: opaque handles,
 * status codes, a per-thread last-error string, and a streaming callback.
 * Swift, Kotlin/JNI and other FFIs bind to it; include/pocket/pocket.hpp is
 * a header-only C++ wrapper over it.
 *
 * Errors: every fallible call returns a pocket_status. On anything but
 * POCKET_OK, pocket_last_error() returns a message saying what is wrong and
 * what to do; it stays valid until the next Pocket call on the same thread.
 * The library never prints to stdout/stderr and never aborts on bad input;
 * install a log callback to see its diagnostics.
 *
 * Threads: a pocket_model is immutable after loading and may be shared by
 * any number of sessions on any threads. A pocket_session takes one call at
 * a time (different sessions may run concurrently): since API version 6 a
 * call on a session that is in another call, from that call's streaming
 * callback or from another thread, changes nothing and returns POCKET_BUSY
 * (pocket_session_position returns -1); pocket_session_free then frees the
 * session when the call in progress returns, and a generation in progress
 * stops at its next piece of text (POCKET_CANCELLED). Free every session
 * before its model.
 *
 * Structs with a `struct_size` member are versioned: call the matching
 * *_init() function first, then change the fields you need; new fields are
 * only ever appended.
 */
#ifndef POCKET_POCKET_H_
#define POCKET_POCKET_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define POCKET_API_VERSION 11

typedef enum pocket_status {
  POCKET_OK = 0,
  POCKET_INVALID_ARGUMENT = 1, /* the caller passed something wrong */
  POCKET_NOT_FOUND = 2,        /* a file, tensor or key does not exist */
  POCKET_IO_ERROR = 3,         /* the OS refused a read, write or map */
  POCKET_CORRUPT_FILE = 4,     /* a file failed validation, or its model computed NaN */
  POCKET_UNSUPPORTED = 5,      /* valid, but this build cannot handle it */
  POCKET_BUDGET_EXCEEDED = 6,  /* the memory budget would be exceeded */
  POCKET_CANCELLED = 7,        /* the callback asked to stop */
  POCKET_OUT_OF_RANGE = 8,     /* e.g. a prompt longer than the context */
  POCKET_INTERNAL = 9,         /* a bug in Pocket: please report it */
  POCKET_BUSY = 10             /* since API version 6: the session is in another call */
} pocket_status;

typedef enum pocket_stop_reason {
  POCKET_STOP_EOS = 0,       /* the model produced a stop token */
  POCKET_STOP_LENGTH = 1,    /* max_new_tokens reached */
  POCKET_STOP_STRING = 2,    /* a stop string was produced */
  POCKET_STOP_CANCELLED = 3, /* the callback returned non-zero */
  /* Since API version 6: the call failed; its status says why. */
  POCKET_STOP_BUDGET = 4, /* POCKET_BUDGET_EXCEEDED: the next token did not fit the budget */
  POCKET_STOP_ERROR = 5   /* any other error */
} pocket_stop_reason;

typedef enum pocket_log_level {
  POCKET_LOG_DEBUG = 0,
  POCKET_LOG_INFO = 1,
  POCKET_LOG_WARNING = 2,
  POCKET_LOG_ERROR = 3
} pocket_log_level;

typedef struct pocket_model pocket_model;
typedef struct pocket_session pocket_session;

/* ---- library ---------------------------------------------------------- */

/* The library's version, "MAJOR.MINOR.PATCH" (the CMake project version). */
const char* pocket_version(void);
/* A short name for a status, e.g. "CorruptFile". */
const char* pocket_status_name(pocket_status status);
/* The message of the last failed call on this thread ("" if none). */
const char* pocket_last_error(void);

typedef void (*pocket_log_fn)(pocket_log_level level, const char* message, void* user_data);
/* Routes library diagnostics to `fn` (NULL silences them). Thread-safe. */
void pocket_set_log_callback(pocket_log_fn fn, void* user_data);

/* Since API version 5. Whether the CPU backend may multiply prompts with the
 * CPU's matrix unit where this build and the CPU have one: Arm's int8 matrix
 * multiply (I8MM), or x86's AMX tiles, for which Linux gives the process
 * 8 KiB more state per thread the first time a prompt runs (signal frames
 * grow by as much, and a later sigaltstack smaller than that fails). Nonzero
 * (the default) allows it; 0 keeps the dot-product kernels, and then the
 * process never asks for the tile state. The Linears' outputs are the same
 * bits either way; attention over a bf16 cache, which also takes AMX's bf16
 * tiles where the CPU has them, sums its products in another order (the
 * same bf16 roundings). Process-wide: call it before loading models, not
 * while one runs. */
void pocket_set_cpu_matrix_extension(int32_t allow);

/* ---- models ------------------------------------------------------------ */

typedef struct pocket_model_options {
  uint32_t struct_size;
  int32_t threads; /* compute threads, at most 1024; 0 = one per fast physical core */
  /* A backend this build has: "cpu" (default when NULL); "reference", the
   * scalar reference ops on one thread (slow: for checking results); "opencl"
   * in builds with it. Another name is POCKET_INVALID_ARGUMENT listing the
   * names this build has (pocket inspect --devices lists them too). */
  const char* backend;
  /* Since API version 3. How the CPU multiplies q4/q8 weights:
   * POCKET_QUANT_MATH_INT8 (default) quantizes activations to int8 per weight
   * group and uses the int8 dot instructions (VNNI, sdot), and on x86 CPUs
   * with AVX512_BF16 and 64-bit ARM CPUs with BF16 multiplies
   * attention's q.k and weighted V in bf16,
   * adding errors bounded in docs/kernels.md; POCKET_QUANT_MATH_F32 keeps
   * f32 maths throughout (the reference-accurate path, slower). Models with
   * f32/f16/bf16 weights always use f32 maths. */
  int32_t quant_math;
  /* Since API version 3. Nonzero pins compute worker i to the i-th core of
   * the fast-first core order (docs/cli.md, `--pin-threads`; Linux and
   * Android, ignored elsewhere); the calling thread is not pinned. Default 0. */
  int32_t pin_threads;
  /* Since API version 4. Nonzero copies the weights out of the file mapping
   * into memory backed by transparent huge pages (CPU backend; ordinary
   * memory where the OS has none): decode as fast whatever state the page
   * cache is in (up to 1.26x faster, docs/performance.md), a slower load,
   * and the copy is not page cache other processes can share. Default 0. */
  int32_t huge_pages;
} pocket_model_options;
#define POCKET_QUANT_MATH_INT8 0
#define POCKET_QUANT_MATH_F32 1
void pocket_model_options_init(pocket_model_options* options);

/* Maps and validates a .pocket file. A GGUF file (llama, qwen2, qwen3;
 * docs/convert.md) is first converted into a temporary .pocket file, which
 * is removed once mapped: `pocket convert` does it once instead. *out is
 * NULL on failure. */
pocket_status pocket_model_load(const char* path, const pocket_model_options* options,
                                pocket_model** out);
void pocket_model_free(pocket_model* model);

int32_t pocket_model_vocab_size(const pocket_model* model);
int32_t pocket_model_context_length(const pocket_model* model);
/* "qwen3", "qwen2", "llama" */
const char* pocket_model_architecture(const pocket_model* model);

/* Text to token ids (no BOS added). Writes up to `capacity` ids and sets
 * *n_ids to the full count; POCKET_OUT_OF_RANGE when capacity is too small
 * (call again with *n_ids). Invalid UTF-8 is POCKET_INVALID_ARGUMENT. */
pocket_status pocket_tokenize(const pocket_model* model, const char* text, size_t text_len,
                              int32_t* ids, size_t capacity, size_t* n_ids);
/* Token ids to UTF-8 text, NUL-terminated; *text_len is the full length
 * without the NUL; POCKET_OUT_OF_RANGE when capacity is too small. */
pocket_status pocket_detokenize(const pocket_model* model, const int32_t* ids, size_t n_ids,
                                char* text, size_t capacity, size_t* text_len);

/* ---- sessions ----------------------------------------------------------- */

typedef struct pocket_session_options {
  uint32_t struct_size;
  int32_t kv_type; /* 0 = default: bf16 where the CPU backend's attention multiplies
                      in bf16 (x86 with AVX512_BF16, ARM with BF16), f16 elsewhere;
                      1 = f32, 2 = q8 (int8 + a scale per head), 3 = bf16,
                      4 = f16 */
  /* Since API version 2. */
  uint64_t budget_bytes; /* everything the session holds, weights included;
                            default 300 MiB, 0 = unlimited */
  int32_t kv_policy;     /* at the budget: 0 = fail with POCKET_BUDGET_EXCEEDED
                            (default), 1 = slide: keep the first sink tokens and
                            the newest ones, dropping the oldest in between */
  int32_t sink_tokens;   /* slide: tokens at the start never dropped (default 4) */
} pocket_session_options;
void pocket_session_options_init(pocket_session_options* options);

/* POCKET_BUDGET_EXCEEDED when the budget cannot hold the weights, scratch
 * buffers and logits plus one KV page; the message names the numbers. */
pocket_status pocket_session_new(pocket_model* model, const pocket_session_options* options,
                                 pocket_session** out);
/* Since API version 11. A session on `draft_model` (the same tokenizer) to
 * pass as pocket_sampling.draft_session for `target`, sharing target's
 * budget: the bytes left after both models' weights, scratch and logits
 * are split so both KV caches hold the same number of tokens, and target's
 * budget is lowered by the new session's share for good. The new session
 * slides its window, so drafting never fails where target does not.
 * Errors change nothing: POCKET_INVALID_ARGUMENT for another tokenizer,
 * POCKET_BUDGET_EXCEEDED when the budget cannot hold both models with a
 * window of sink tokens plus a prefill chunk in both caches, or target's
 * tokens no longer fit; POCKET_BUSY while a call runs on target. */
pocket_status pocket_session_new_draft(pocket_session* target, pocket_model* draft_model,
                                       pocket_session** out);
/* Called while a call on the session is in progress (from its callback or
 * another thread), frees the session when that call returns. */
void pocket_session_free(pocket_session* session);
/* Since API version 7. Asks the generate or chat call running on the session
 * (on another thread, or from its callback) to stop: it returns
 * POCKET_CANCELLED (stop reason POCKET_STOP_CANCELLED) after the token it is
 * computing, or once its prompt's prefill ends, and the session holds every
 * token generated so far, ready for the next call. With no such call running
 * it does nothing: a later call is not cancelled. Safe from any thread while
 * the session exists; POCKET_INVALID_ARGUMENT for NULL. */
pocket_status pocket_session_cancel(pocket_session* session);
/* Since API version 7. Gives memory back under pressure (iOS's memory
 * warning, Android's onTrimMemory) without losing the conversation:
 * - POCKET_TRIM_SCRATCH frees the activation buffers and any KV pages past
 *   the position; the next call allocates what it needs again.
 * - POCKET_TRIM_SUSPEND also writes the tokens, KV cache and chat transcript
 *   to `state_path` (a file in the app's cache folder) and frees the KV
 *   cache. The next generate, chat, eval or save restores it first, exactly
 *   (then deletes the file); reset, load and free delete it instead;
 *   position and memory do not restore it. Suspending a suspended session
 *   only frees scratch again.
 * A trim while another call runs is POCKET_BUSY (cancel it first); an error
 * (the file cannot be written) leaves the session as it was. */
#define POCKET_TRIM_SCRATCH 1
#define POCKET_TRIM_SUSPEND 2
pocket_status pocket_session_trim(pocket_session* session, int32_t level, const char* state_path);
/* Forgets the conversation (KV cache and position). */
pocket_status pocket_session_reset(pocket_session* session);
/* Tokens held in the session's KV cache; -1 while the session is in another
 * call. */
int32_t pocket_session_position(const pocket_session* session);

/* What a session holds, in bytes, by category (since API version 2). */
typedef struct pocket_memory_usage {
  uint32_t struct_size;
  uint64_t weights;          /* mapped weight pages the model reads (counted in full) */
  uint64_t weights_resident; /* of the mapped file, resident right now */
  uint64_t model;            /* tokenizer, plan, the file's other sections */
  uint64_t kv;               /* KV cache pages */
  uint64_t scratch;          /* activation buffers */
  uint64_t logits;           /* logits row and sampling candidates */
  uint64_t total;            /* weights + model + kv + scratch + logits */
  uint64_t budget;           /* 0 = unlimited */
  uint64_t max_tokens;       /* tokens the budget and the context allow */
  uint64_t tokens;           /* tokens held */
} pocket_memory_usage;
void pocket_memory_usage_init(pocket_memory_usage* usage);
pocket_status pocket_session_memory(const pocket_session* session, pocket_memory_usage* usage);

/* Saves the session's tokens and KV cache to `path`; loading restores them
 * into a session of the same model file and KV type (anything else is an
 * error, and a failed load leaves the session as it was). */
pocket_status pocket_session_save(const pocket_session* session, const char* path);
pocket_status pocket_session_load(pocket_session* session, const char* path);

/* Since API version 10. Moves the session to `target`, the same model file
 * loaded with another backend, keeping its conversation: the KV cache goes
 * from one backend to the other through host memory, the tokens and chat
 * transcript stay, and the next call runs on target's backend (e.g. off the
 * GPU while an iOS app is in the background, and back when it returns). A
 * session suspended by pocket_session_trim moves as it is and restores on
 * the new backend. The session keeps its options; it then uses `target`,
 * which must outlive it, and no longer its old model. POCKET_INVALID_ARGUMENT
 * for NULL or a model of another file or KV type it cannot hold,
 * POCKET_UNSUPPORTED for a backend that cannot export or import KV rows,
 * POCKET_BUDGET_EXCEEDED when the tokens do not fit the session's budget on
 * target (which may count other bytes, e.g. a GPU's copy of the weights); on
 * any error the session stays on its model, unchanged. */
pocket_status pocket_session_move(pocket_session* session, pocket_model* target);

/* Teacher-forced evaluation: appends `tokens` to the session and, when
 * `logits` is not NULL, writes the next-token logits of the last one
 * (vocab_size floats). Logits that come out NaN or infinite (a damaged model
 * file, or activations that overflow) are POCKET_CORRUPT_FILE, naming the
 * position, and the tokens are not kept. */
pocket_status pocket_session_eval(pocket_session* session, const int32_t* tokens, size_t n_tokens,
                                  float* logits);

/* Since API version 9: a tool the model may call in pocket_chat (Qwen3's
 * chat template; docs/structured-output.md). */
typedef struct pocket_tool {
  const char* name;        /* 1 to 64 of A-Z a-z 0-9 _ - . */
  const char* description; /* NULL: none */
  const char* parameters;  /* a JSON Schema of the arguments; NULL: any JSON object */
} pocket_tool;
#define POCKET_TOOL_CHOICE_AUTO 0     /* free text, with any number of tool calls */
#define POCKET_TOOL_CHOICE_REQUIRED 1 /* one or more tool calls only */

/* Since API version 9: a tool call of the reply. */
typedef struct pocket_tool_call {
  const char* name;      /* one of the tools' names */
  const char* arguments; /* the arguments object as compact JSON text, valid under the
                            tool's parameters */
} pocket_tool_call;

typedef struct pocket_sampling {
  uint32_t struct_size;
  float temperature;       /* 0 = greedy */
  int32_t top_k;           /* 0 = off */
  float top_p;             /* 1 = off */
  float min_p;             /* 0 = off */
  float repeat_penalty;    /* 1 = off */
  int32_t repeat_last_n;   /* window for the penalties; -1 = all */
  float frequency_penalty; /* 0 = off */
  float presence_penalty;  /* 0 = off */
  uint64_t seed;
  int32_t max_new_tokens; /* <= 0: the model's default */
  int32_t ignore_eos;     /* non-zero: do not stop on stop tokens */
  const char* const* stop_strings;
  size_t n_stop_strings;
  /* Since API version 8: constrained output (docs/structured-output.md).
   * At most one of these may be set (non-NULL); every token the constraint
   * forbids is masked before sampling, and end-of-sequence is allowed only
   * where the output is complete. One that does not compile is
   * POCKET_INVALID_ARGUMENT with a message naming the problem. */
  const char* grammar;     /* GBNF text as llama.cpp writes it; starts at "root" */
  const char* json_schema; /* a JSON Schema: the output is one JSON value it accepts */
  const char* regex;       /* the whole output matches this regular expression */
  /* Since API version 9: pocket_chat only. The template lists the tools
   * and the reply is constrained: outside tool calls text is free
   * (POCKET_TOOL_CHOICE_AUTO), and each <tool_call>{"name": ...,
   * "arguments": ...}</tool_call> names one of the tools with arguments its
   * parameters accept. Excludes grammar, json_schema and regex. Pass the
   * same tools on every turn of a conversation. */
  const pocket_tool* tools;
  size_t n_tools;
  int32_t tool_choice; /* POCKET_TOOL_CHOICE_* */
  /* Since API version 10: speculative decoding (docs/performance.md).
   * Guessed tokens are verified in one batched step; the output is the
   * same token for token (with a seed, the same as without speculation),
   * only the number of passes over the weights changes. Since API version
   * 11 pocket_sampling_init sets POCKET_SPECULATION_AUTO. */
  int32_t speculation;     /* POCKET_SPECULATION_* */
  int32_t max_draft;       /* most tokens guessed per step, 1..15; 0: 8 */
  const char* lookup_text; /* also searched by prompt lookup (a document the
                              output quotes); NULL: none */
  /* POCKET_SPECULATION_MODEL: a session on a draft model with the same
   * tokenizer (another session than the one generating), held for the
   * call like any session call (POCKET_BUSY to others meanwhile); it keeps
   * its own KV cache, within the generating session's budget when made by
   * pocket_session_new_draft, else under its own. */
  pocket_session* draft_session;
} pocket_sampling;
#define POCKET_SPECULATION_OFF 0
/* Prompt lookup: guesses from n-grams of the session's own tokens and of
 * lookup_text, verified only where the measured costs and acceptance
 * promise a gain. On backends whose batched steps round differently from
 * single ones (OpenCL, Metal) the output can differ from decoding without
 * speculation where two tokens' logits nearly tie. */
#define POCKET_SPECULATION_NGRAM 1
/* A draft model's greedy guesses (draft_session); as NGRAM otherwise. */
#define POCKET_SPECULATION_MODEL 2
/* Since API version 11, the default: prompt lookup (as NGRAM) only on a
 * backend whose batched steps give each token its single step's logits bit
 * for bit (the CPU), so the output never depends on it; plain decoding
 * elsewhere. */
#define POCKET_SPECULATION_AUTO 3
/* Greedy decoding with the model's default length, prompt lookup where it
 * is exact (POCKET_SPECULATION_AUTO). */
void pocket_sampling_init(pocket_sampling* sampling);

/* Receives each piece of generated text (whole UTF-8 characters, not
 * NUL-terminated) and the token that completed it. Return 0 to continue,
 * non-zero to stop generation after this token (POCKET_CANCELLED). */
typedef int (*pocket_text_fn)(const char* text, size_t len, int32_t token_id, void* user_data);

/* Filled by pocket_generate and pocket_chat whatever they return: what the
 * call did before it ended (zeros when it failed before generating) and why
 * it ended. */
typedef struct pocket_generation {
  uint32_t struct_size;
  int32_t n_prompt_tokens; /* tokens prefilled by this call */
  int32_t n_generated;     /* tokens generated */
  pocket_stop_reason stop_reason;
  double prefill_seconds;
  double decode_seconds;
  /* Since API version 9: the complete tool calls of a pocket_chat reply with
   * tools, in order (NULL and 0 otherwise). The strings belong to the
   * session and stay valid until its next generate or chat call or its
   * free. */
  const pocket_tool_call* tool_calls;
  size_t n_tool_calls;
  /* Since API version 10: how speculation ran the decoded tokens. */
  int32_t n_decode_steps; /* passes over the weights after the prefill */
  int32_t n_drafted;      /* guessed tokens verified */
  int32_t n_accepted;     /* guesses that were the chosen token */
} pocket_generation;
void pocket_generation_init(pocket_generation* result);

/* Continues the session with `prompt` (BOS is added at the start of a
 * session when the model wants it) and generates. `callback` and `result`
 * may be NULL. An error while generating keeps what was generated
 * (POCKET_BUDGET_EXCEEDED when the next token does not fit the budget,
 * stop reason POCKET_STOP_BUDGET; POCKET_CORRUPT_FILE when the model's
 * logits come out NaN or infinite, POCKET_STOP_ERROR); any other failure
 * leaves the session as it was. */
pocket_status pocket_generate(pocket_session* session, const char* prompt,
                              const pocket_sampling* sampling, pocket_text_fn callback,
                              void* user_data, pocket_generation* result);

typedef struct pocket_message {
  const char* role; /* "system", "user", "assistant" or (since API version 9, Qwen3) "tool":
                       a tool's result, content the text the tool returned */
  const char* content;
} pocket_message;

/* Renders the new messages with the model's chat template and generates the
 * assistant's reply. Later calls on the same session pass only the new
 * messages: earlier turns stay in the KV cache and are not recomputed.
 * enable_thinking: Qwen3's thinking switch (0 renders the empty think block). */
pocket_status pocket_chat(pocket_session* session, const pocket_message* messages,
                          size_t n_messages, int enable_thinking, const pocket_sampling* sampling,
                          pocket_text_fn callback, void* user_data, pocket_generation* result);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* POCKET_POCKET_H_ */
