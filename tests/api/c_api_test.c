/* Drives the C ABI end to end, compiled as C (not C++), on the bundled
 * stories260K model converted at f32. Expected text is llama2.c run.c's
 * greedy output (tests/data/stories260K-golden.txt). Prints
 * "N passed, M failed" and exits non-zero on any failure. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pocket/pocket.h"

static int g_passed = 0;
static int g_failed = 0;

#define CHECK(cond)                                                                            \
  do {                                                                                         \
    if (cond) {                                                                                \
      ++g_passed;                                                                              \
    } else {                                                                                   \
      ++g_failed;                                                                              \
      fprintf(stderr, "%s:%d: CHECK failed: %s (last error: %s)\n", __FILE__, __LINE__, #cond, \
              pocket_last_error());                                                            \
    }                                                                                          \
  } while (0)

/* run.c's stdout for "Once upon a time", without the prompt. */
static const char kGoldenContinuation[] =
    ", there was a little girl named Lily. She loved to play outside in the park. One day, "
    "she saw a big, red ball. She wanted to play with it, but it was too high.\n"
    "Lily's mom said, \"Lily, let's go to the park.\"";

typedef struct {
  char text[8192];
  size_t len;
  int calls;
  int cancel_after;
} Collector;

static int Collect(const char* text, size_t len, int32_t token_id, void* user_data) {
  Collector* c = (Collector*)user_data;
  (void)token_id;
  if (c->len + len < sizeof(c->text)) {
    memcpy(c->text + c->len, text, len);
    c->len += len;
    c->text[c->len] = '\0';
  }
  c->calls++;
  return c->cancel_after > 0 && c->calls >= c->cancel_after;
}

/* Calls every session function on the session whose generation is running,
 * from its callback (once); each must be refused with POCKET_BUSY. */
typedef struct {
  pocket_session* session;
  int calls;
  pocket_status generate, chat, reset, eval, save, load, memory;
  int32_t position;
  int message_names_the_call;
} Reentry;

static int Reenter(const char* text, size_t len, int32_t token_id, void* user_data) {
  Reentry* r = (Reentry*)user_data;
  pocket_message message;
  pocket_memory_usage usage;
  const int32_t bos = 1;
  (void)text;
  (void)len;
  (void)token_id;
  if (r->calls++ > 0) return 0;
  message.role = "user";
  message.content = "hi";
  pocket_memory_usage_init(&usage);
  r->generate = pocket_generate(r->session, "x", NULL, NULL, NULL, NULL);
  r->message_names_the_call = strstr(pocket_last_error(), "busy in pocket_generate") != NULL;
  r->chat = pocket_chat(r->session, &message, 1, 0, NULL, NULL, NULL, NULL);
  r->reset = pocket_session_reset(r->session);
  r->eval = pocket_session_eval(r->session, &bos, 1, NULL);
  r->save = pocket_session_save(r->session, "c_api_test_reentry.bin");
  r->load = pocket_session_load(r->session, "c_api_test_reentry.bin");
  r->memory = pocket_session_memory(r->session, &usage);
  r->position = pocket_session_position(r->session);
  return 0;
}

/* Frees the session whose generation is running, from its callback. */
static int FreeFromCallback(const char* text, size_t len, int32_t token_id, void* user_data) {
  (void)text;
  (void)len;
  (void)token_id;
  pocket_session_free((pocket_session*)user_data);
  return 0;
}

static int g_log_calls = 0;
static void OnLog(pocket_log_level level, const char* message, void* user_data) {
  (void)level;
  (void)message;
  (void)user_data;
  g_log_calls++;
}

int main(int argc, char** argv) {
  pocket_model* model = NULL;
  pocket_session* session = NULL;
  pocket_model_options mopts;
  pocket_sampling sampling;
  pocket_generation gen;
  Collector col;
  int32_t ids[64];
  size_t n_ids = 0;
  char text[256];
  size_t text_len = 0;
  pocket_status st;
  const int32_t kPromptIds[] = {403, 407, 261, 378}; /* sentencepiece ids, golden */

  if (argc != 2) {
    fprintf(stderr, "usage: c_api_test stories260K.pocket\n");
    return 2;
  }
  pocket_set_log_callback(OnLog, NULL);

  /* Wrong use: clear statuses and messages, never a crash. */
  CHECK(pocket_model_load(NULL, NULL, &model) == POCKET_INVALID_ARGUMENT);
  CHECK(strlen(pocket_last_error()) > 0);
  st = pocket_model_load("/nonexistent/model.pocket", NULL, &model);
  CHECK(st != POCKET_OK && model == NULL);
  CHECK(strstr(pocket_last_error(), "/nonexistent/model.pocket") != NULL);
  CHECK(pocket_session_new(NULL, NULL, &session) == POCKET_INVALID_ARGUMENT);

  pocket_model_options_init(&mopts);
  mopts.quant_math = 7;
  CHECK(pocket_model_load(argv[1], &mopts, &model) == POCKET_INVALID_ARGUMENT && model == NULL);
  CHECK(strstr(pocket_last_error(), "quant_math") != NULL);
  /* A version 3 caller (no huge_pages field) still has quant_math checked. */
  mopts.struct_size = (uint32_t)offsetof(pocket_model_options, huge_pages);
  CHECK(pocket_model_load(argv[1], &mopts, &model) == POCKET_INVALID_ARGUMENT && model == NULL);
  CHECK(strstr(pocket_last_error(), "quant_math") != NULL);
  /* A version 2 caller (no quant_math field) still loads, with the default. */
  mopts.struct_size = (uint32_t)offsetof(pocket_model_options, quant_math);
  CHECK(pocket_model_load(argv[1], &mopts, &model) == POCKET_OK && model != NULL);
  pocket_model_free(model);
  model = NULL;

  pocket_model_options_init(&mopts);
  mopts.threads = 2;
  mopts.quant_math = POCKET_QUANT_MATH_F32;
  mopts.pin_threads = 1; /* the golden text below must not depend on it */
  mopts.huge_pages = 1;  /* nor on where the weights live */
  st = pocket_model_load(argv[1], &mopts, &model);
  CHECK(st == POCKET_OK);
  if (st != POCKET_OK) {
    printf("%d passed, %d failed\n", g_passed, g_failed);
    return 1;
  }
  CHECK(pocket_model_vocab_size(model) == 512);
  CHECK(pocket_model_context_length(model) == 512);
  CHECK(strcmp(pocket_model_architecture(model), "llama") == 0);

  /* Tokenizer round trip against the sentencepiece library's ids. */
  CHECK(pocket_tokenize(model, "Once upon a time", 16, ids, 64, &n_ids) == POCKET_OK);
  CHECK(n_ids == 4 && memcmp(ids, kPromptIds, sizeof(kPromptIds)) == 0);
  CHECK(pocket_tokenize(model, "Once upon a time", 16, ids, 2, &n_ids) == POCKET_OUT_OF_RANGE);
  CHECK(n_ids == 4);
  CHECK(pocket_tokenize(model, "bad \xff utf8", 10, ids, 64, &n_ids) == POCKET_INVALID_ARGUMENT);
  CHECK(pocket_detokenize(model, kPromptIds, 4, text, sizeof(text), &text_len) == POCKET_OK);
  CHECK(strcmp(text, "Once upon a time") == 0 && text_len == 16);
  ids[0] = 512;
  CHECK(pocket_detokenize(model, ids, 1, text, sizeof(text), &text_len) == POCKET_INVALID_ARGUMENT);
  CHECK(strstr(pocket_last_error(), "512") != NULL);

  CHECK(pocket_session_new(model, NULL, &session) == POCKET_OK);

  /* Greedy generation reproduces llama2.c. */
  pocket_sampling_init(&sampling);
  sampling.max_new_tokens = 40;
  pocket_generation_init(&gen);
  memset(&col, 0, sizeof(col));
  st = pocket_generate(session, "Once upon a time", &sampling, Collect, &col, &gen);
  CHECK(st == POCKET_OK);
  CHECK(gen.n_prompt_tokens == 5); /* BOS + 4 */
  CHECK(gen.n_generated == 40);
  CHECK(gen.stop_reason == POCKET_STOP_LENGTH);
  CHECK(col.len > 100 && strncmp(col.text, kGoldenContinuation, col.len) == 0);
  CHECK(pocket_session_position(session) >= 44);

  /* Invalid UTF-8 is rejected and the session stays usable. */
  CHECK(pocket_session_reset(session) == POCKET_OK);
  CHECK(pocket_session_position(session) == 0);
  gen.n_generated = 77; /* a failed call still fills the result */
  gen.stop_reason = POCKET_STOP_LENGTH;
  CHECK(pocket_generate(session, "caf\xc3", &sampling, Collect, &col, &gen) ==
        POCKET_INVALID_ARGUMENT);
  CHECK(strstr(pocket_last_error(), "UTF-8") != NULL);
  CHECK(pocket_session_position(session) == 0);
  CHECK(gen.n_generated == 0 && gen.n_prompt_tokens == 0);
  CHECK(gen.stop_reason == POCKET_STOP_ERROR);
  gen.n_generated = 77;
  CHECK(pocket_generate(NULL, "x", &sampling, NULL, NULL, &gen) == POCKET_INVALID_ARGUMENT);
  CHECK(gen.n_generated == 0 && gen.stop_reason == POCKET_STOP_ERROR);
  {
    pocket_message no_content;
    no_content.role = "user";
    no_content.content = NULL;
    gen.n_generated = 77;
    gen.stop_reason = POCKET_STOP_LENGTH;
    CHECK(pocket_chat(session, &no_content, 1, 0, &sampling, NULL, NULL, &gen) ==
          POCKET_INVALID_ARGUMENT);
    CHECK(gen.n_generated == 0 && gen.stop_reason == POCKET_STOP_ERROR);
  }

  /* Cancelling from the callback stops within one token. */
  memset(&col, 0, sizeof(col));
  col.cancel_after = 3;
  pocket_generation_init(&gen);
  st = pocket_generate(session, "Once upon a time", &sampling, Collect, &col, &gen);
  CHECK(st == POCKET_CANCELLED);
  CHECK(gen.stop_reason == POCKET_STOP_CANCELLED);
  CHECK(col.calls == 3);
  CHECK(gen.n_generated <= 4);

  /* After the failures, a fresh run is still exact. */
  CHECK(pocket_session_reset(session) == POCKET_OK);
  memset(&col, 0, sizeof(col));
  CHECK(pocket_generate(session, "Once upon a time", &sampling, Collect, &col, &gen) == POCKET_OK);
  CHECK(col.len > 100 && strncmp(col.text, kGoldenContinuation, col.len) == 0);

  /* Calls on the session from inside its callback are refused, and the
   * outer generation goes on as if they had not been made. */
  {
    Reentry reentry;
    FILE* saved;
    memset(&reentry, 0, sizeof(reentry));
    reentry.session = session;
    CHECK(pocket_session_reset(session) == POCKET_OK);
    pocket_generation_init(&gen);
    CHECK(pocket_generate(session, "Once upon a time", &sampling, Reenter, &reentry, &gen) ==
          POCKET_OK);
    CHECK(reentry.calls > 1);
    CHECK(reentry.generate == POCKET_BUSY && reentry.message_names_the_call);
    CHECK(reentry.chat == POCKET_BUSY && reentry.reset == POCKET_BUSY);
    CHECK(reentry.eval == POCKET_BUSY && reentry.save == POCKET_BUSY);
    CHECK(reentry.load == POCKET_BUSY && reentry.memory == POCKET_BUSY);
    CHECK(reentry.position == -1);
    CHECK(gen.n_generated == 40 && gen.stop_reason == POCKET_STOP_LENGTH);
    CHECK(pocket_session_position(session) == 44); /* BOS + 4 + 40 - the pending one */
    CHECK(strcmp(pocket_status_name(POCKET_BUSY), "Busy") == 0);
    /* Nothing was saved. */
    saved = fopen("c_api_test_reentry.bin", "rb");
    CHECK(saved == NULL);
    if (saved != NULL) {
      fclose(saved);
      remove("c_api_test_reentry.bin");
    }
    /* Afterwards the session takes calls again. */
    CHECK(pocket_session_reset(session) == POCKET_OK);
  }

  /* Freeing the session from its callback stops the generation, and the
   * session is freed when pocket_generate returns. */
  {
    pocket_session* doomed = NULL;
    CHECK(pocket_session_new(model, NULL, &doomed) == POCKET_OK);
    pocket_generation_init(&gen);
    CHECK(pocket_generate(doomed, "Once upon a time", &sampling, FreeFromCallback, doomed, &gen) ==
          POCKET_CANCELLED);
    CHECK(gen.n_generated == 1 && gen.stop_reason == POCKET_STOP_CANCELLED);
  }

  /* A generation that stops on the budget reports what it generated and
   * why it stopped. The budget is the smallest (in 64 KiB steps, never a
   * whole MiB) that holds a KV page: fewer tokens than the context. */
  {
    pocket_session_options opts;
    pocket_session* small = NULL;
    pocket_memory_usage usage;
    uint64_t budget = (1u << 20) + 1;
    char exact[64];
    pocket_session_options_init(&opts);
    for (; budget < (64u << 20); budget += 64u << 10) {
      opts.budget_bytes = budget;
      if (pocket_session_new(model, &opts, &small) == POCKET_OK) break;
    }
    CHECK(small != NULL);
    if (small != NULL) {
      pocket_memory_usage_init(&usage);
      CHECK(pocket_session_memory(small, &usage) == POCKET_OK);
      CHECK(usage.max_tokens >= 64 && usage.max_tokens < 512);
      sampling.max_new_tokens = 600;
      sampling.ignore_eos = 1;
      memset(&col, 0, sizeof(col));
      pocket_generation_init(&gen);
      st = pocket_generate(small, "Once upon a time", &sampling, Collect, &col, &gen);
      CHECK(st == POCKET_BUDGET_EXCEEDED);
      /* The message prints the budget exactly, not rounded to whole MiB. */
      sprintf(exact, "memory budget of %llu bytes (", (unsigned long long)budget);
      CHECK(strstr(pocket_last_error(), exact) != NULL);
      CHECK(gen.stop_reason == POCKET_STOP_BUDGET);
      CHECK(gen.n_prompt_tokens == 5);
      /* Every token that fit, and the one that did not (kept pending). */
      CHECK(gen.n_generated == (int32_t)usage.max_tokens - 5 + 1);
      CHECK(col.calls > 0 && col.calls <= gen.n_generated);
      CHECK(gen.prefill_seconds > 0 && gen.decode_seconds > 0);
      CHECK(pocket_session_position(small) == (int32_t)usage.max_tokens);
      sampling.max_new_tokens = 40;
      sampling.ignore_eos = 0;
      pocket_session_free(small);
    }
  }

  /* A prompt longer than the context names both lengths. */
  {
    size_t big = 4000, i;
    char* prompt = (char*)malloc(big * 4 + 1);
    for (i = 0; i < big; ++i) memcpy(prompt + i * 4, " dog", 4);
    prompt[big * 4] = '\0';
    CHECK(pocket_session_reset(session) == POCKET_OK);
    CHECK(pocket_generate(session, prompt, &sampling, NULL, NULL, NULL) == POCKET_OUT_OF_RANGE);
    CHECK(strstr(pocket_last_error(), "512") != NULL);
    free(prompt);
  }

  /* Teacher-forced eval writes vocab-size logits. */
  {
    float* logits = (float*)malloc(512 * sizeof(float));
    const int32_t bos = 1;
    int best = 0, i;
    CHECK(pocket_session_reset(session) == POCKET_OK);
    CHECK(pocket_session_eval(session, &bos, 1, logits) == POCKET_OK);
    for (i = 1; i < 512; ++i)
      if (logits[i] > logits[best]) best = i;
    CHECK(best == 403); /* golden: the first greedy token after BOS is "Once" */
    free(logits);
  }

  /* Memory by category; the budget and KV type options; save and load. */
  {
    pocket_memory_usage usage;
    pocket_session_options opts;
    pocket_session* q8 = NULL;
    float a[512], b[512];
    const int32_t next = 403;
    const char* path = "c_api_test_state.bin";
    pocket_memory_usage_init(&usage);
    CHECK(pocket_session_memory(session, &usage) == POCKET_OK);
    CHECK(usage.weights > 1000000 && usage.kv > 0 && usage.tokens == 1);
    CHECK(usage.total == usage.weights + usage.model + usage.kv + usage.scratch + usage.logits);
    CHECK(usage.budget == 300u << 20 && usage.max_tokens == 512);
    usage.struct_size = 4;
    CHECK(pocket_session_memory(session, &usage) == POCKET_INVALID_ARGUMENT);

    pocket_session_options_init(&opts);
    CHECK(opts.budget_bytes == 300u << 20 && opts.kv_policy == 0 && opts.sink_tokens == 4);
    opts.budget_bytes = 1000;
    CHECK(pocket_session_new(model, &opts, &q8) == POCKET_BUDGET_EXCEEDED && q8 == NULL);
    CHECK(strstr(pocket_last_error(), "too small") != NULL);
    opts.budget_bytes = 0;
    opts.kv_type = 5;
    CHECK(pocket_session_new(model, &opts, &q8) == POCKET_INVALID_ARGUMENT);
    CHECK(strstr(pocket_last_error(), "3 (bf16) or 4 (f16)") != NULL);
    opts.kv_type = 2;
    opts.kv_policy = 1;
    CHECK(pocket_session_new(model, &opts, &q8) == POCKET_OK);

    CHECK(pocket_session_save(session, path) == POCKET_OK);
    CHECK(pocket_session_load(q8, path) == POCKET_INVALID_ARGUMENT); /* f16 state, q8 session */
    CHECK(strstr(pocket_last_error(), "q8") != NULL);
    CHECK(pocket_session_eval(session, &next, 1, a) == POCKET_OK);
    CHECK(pocket_session_load(session, path) == POCKET_OK);
    CHECK(pocket_session_position(session) == 1);
    CHECK(pocket_session_eval(session, &next, 1, b) == POCKET_OK);
    CHECK(memcmp(a, b, sizeof(a)) == 0);
    remove(path);
    pocket_session_free(q8);
  }

  pocket_session_free(session);
  pocket_model_free(model);
  pocket_set_log_callback(NULL, NULL);
  printf("%d passed, %d failed\n", g_passed, g_failed);
  return g_failed == 0 ? 0 : 1;
}
