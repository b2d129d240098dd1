// The JNI glue of the Java API (src/bindings/java/dev/pocket): one native
// method of dev.pocket.Native per C call of include/pocket/pocket.h.
//
// What crosses: handles as jlong (the Java classes never pass a freed one:
// dev.pocket.Handle), text as UTF-8 byte arrays (the Java side converts with
// the standard charset; JNI's modified UTF-8 would garble characters beyond
// the Basic Multilingual Plane), numbers as primitive arrays in layouts
// documented beside the Java code that packs them.
//
// Failures become a dev.pocket.PocketException carrying the status and
// pocket_last_error(), thrown when the native method returns. No C++
// exception leaves this file: each entry point catches everything (the
// engine under it is built without exceptions, so nothing may unwind through
// it either: the streaming callback catches its own). Once a Java exception
// is pending, only the JNI calls the specification allows then are made.
#include <jni.h>

#include <cstdint>
#include <cstring>
#include <new>
#include <string>
#include <vector>

// Written by javac -h from Native.java: the declarations these definitions
// must match.
#include "dev_pocket_Native.h"
#include "pocket/pocket.h"

namespace {

// Global references and ids resolved once in JNI_OnLoad, where the class
// loader that loaded dev.pocket.Native is the one FindClass uses (on Android,
// a native thread's FindClass sees only the system classes).
jclass g_exception_class = nullptr;  // dev.pocket.PocketException
jmethodID g_exception_from_native = nullptr;
jmethodID g_call_piece = nullptr;     // dev.pocket.Call.piece(byte[])
jmethodID g_call_finish = nullptr;    // dev.pocket.Call.finish(...)
jclass g_byte_array_class = nullptr;  // byte[]

pocket_model* AsModel(jlong h) { return reinterpret_cast<pocket_model*>(static_cast<intptr_t>(h)); }
pocket_session* AsSession(jlong h) {
  return reinterpret_cast<pocket_session*>(static_cast<intptr_t>(h));
}

// A new byte[] holding `len` bytes; null with an OutOfMemoryError pending.
jbyteArray Bytes(JNIEnv* env, const char* data, size_t len) {
  if (len > static_cast<size_t>(INT32_MAX)) {
    env->ThrowNew(env->FindClass("java/lang/OutOfMemoryError"), "text longer than 2 GiB");
    return nullptr;
  }
  jbyteArray out = env->NewByteArray(static_cast<jsize>(len));
  if (out != nullptr && len > 0) {
    env->SetByteArrayRegion(out, 0, static_cast<jsize>(len), reinterpret_cast<const jbyte*>(data));
  }
  return out;
}

// Throws PocketException(status, message) unless an exception is pending
// already (it then wins: it says what went wrong first).
void ThrowPocket(JNIEnv* env, int status, const char* message) {
  if (env->ExceptionCheck()) return;
  jbyteArray text = Bytes(env, message, std::strlen(message));
  if (text == nullptr) return;
  jobject e = env->CallStaticObjectMethod(g_exception_class, g_exception_from_native,
                                          static_cast<jint>(status), text);
  env->DeleteLocalRef(text);
  if (e == nullptr || env->ExceptionCheck()) return;
  env->Throw(static_cast<jthrowable>(e));
  env->DeleteLocalRef(e);
}

// Throws for a failed C call: its status and the thread's last error, read
// before any other Pocket call on this thread can replace it.
bool Check(JNIEnv* env, pocket_status status) {
  if (status == POCKET_OK) return true;
  ThrowPocket(env, status, pocket_last_error());
  return false;
}

void ThrowInvalid(JNIEnv* env, const char* message) {
  ThrowPocket(env, POCKET_INVALID_ARGUMENT, message);
}

// Converts a C++ exception thrown in this file (std::bad_alloc from a
// vector, at worst) into a Java one.
void ThrowFromCpp(JNIEnv* env) {
  if (env->ExceptionCheck()) return;
  try {
    throw;
  } catch (const std::bad_alloc&) {
    jclass oom = env->FindClass("java/lang/OutOfMemoryError");
    if (oom != nullptr) env->ThrowNew(oom, "out of native memory in the Pocket JNI glue");
  } catch (...) {
    ThrowPocket(env, POCKET_INTERNAL, "unexpected C++ exception in the Pocket JNI glue");
  }
}

// The bytes of a byte[] as a std::string (the C API's strings are
// NUL-terminated; the Java side refuses strings with NULs in them). False,
// with an exception pending, for null.
bool ReadString(JNIEnv* env, jbyteArray bytes, const char* what, std::string* out) {
  if (bytes == nullptr) {
    ThrowInvalid(env, (std::string(what) + " is null").c_str());
    return false;
  }
  const jsize n = env->GetArrayLength(bytes);
  out->assign(static_cast<size_t>(n), '\0');
  if (n > 0) env->GetByteArrayRegion(bytes, 0, n, reinterpret_cast<jbyte*>(&(*out)[0]));
  return !env->ExceptionCheck();
}

bool ReadInts(JNIEnv* env, jintArray a, const char* what, std::vector<int32_t>* out) {
  if (a == nullptr) {
    ThrowInvalid(env, (std::string(what) + " is null").c_str());
    return false;
  }
  const jsize n = env->GetArrayLength(a);
  out->resize(static_cast<size_t>(n));
  static_assert(sizeof(jint) == sizeof(int32_t), "jint is 32 bits");
  if (n > 0) env->GetIntArrayRegion(a, 0, n, reinterpret_cast<jint*>(out->data()));
  return !env->ExceptionCheck();
}

// An array of byte[] as strings (stop strings, chat roles and contents).
bool ReadStrings(JNIEnv* env, jobjectArray a, const char* what, std::vector<std::string>* out) {
  if (a == nullptr) {
    ThrowInvalid(env, (std::string(what) + " is null").c_str());
    return false;
  }
  const jsize n = env->GetArrayLength(a);
  out->resize(static_cast<size_t>(n));
  for (jsize i = 0; i < n; ++i) {
    jbyteArray item = static_cast<jbyteArray>(env->GetObjectArrayElement(a, i));
    if (env->ExceptionCheck()) return false;
    const bool ok = ReadString(env, item, what, &(*out)[static_cast<size_t>(i)]);
    env->DeleteLocalRef(item);
    if (!ok) return false;
  }
  return true;
}

// Sampling as dev.pocket.Sampling packs it: floats {temperature, top_p,
// min_p, repeat_penalty, frequency_penalty, presence_penalty}, ints {top_k,
// repeat_last_n, max_new_tokens, ignore_eos, speculation, max_draft}, then
// the seed, the stop strings and the lookup text (or null). `stops` and
// `lookup` keep the strings `raw` points into.
struct SamplingArgs {
  pocket_sampling raw;
  std::vector<std::string> stops;
  std::vector<const char*> pointers;
  std::string lookup;
};

bool ReadSampling(JNIEnv* env, jfloatArray floats, jintArray ints, jlong seed, jobjectArray stops,
                  jbyteArray lookup, SamplingArgs* out) {
  pocket_sampling_init(&out->raw);
  if (floats == nullptr || ints == nullptr || env->GetArrayLength(floats) != 6 ||
      env->GetArrayLength(ints) != 6) {
    ThrowPocket(env, POCKET_INTERNAL, "sampling arrays of the wrong size");
    return false;
  }
  jfloat f[6];
  jint i[6];
  env->GetFloatArrayRegion(floats, 0, 6, f);
  env->GetIntArrayRegion(ints, 0, 6, i);
  if (!ReadStrings(env, stops, "Sampling.stopStrings", &out->stops)) return false;
  if (lookup != nullptr && !ReadString(env, lookup, "Sampling.lookupText", &out->lookup)) {
    return false;
  }
  pocket_sampling& s = out->raw;
  s.temperature = f[0];
  s.top_p = f[1];
  s.min_p = f[2];
  s.repeat_penalty = f[3];
  s.frequency_penalty = f[4];
  s.presence_penalty = f[5];
  s.top_k = i[0];
  s.repeat_last_n = i[1];
  s.max_new_tokens = i[2];
  s.ignore_eos = i[3];
  s.speculation = i[4];
  s.max_draft = i[5];
  s.lookup_text = lookup != nullptr ? out->lookup.c_str() : nullptr;
  s.seed = static_cast<uint64_t>(seed);
  for (const std::string& stop : out->stops) out->pointers.push_back(stop.c_str());
  s.stop_strings = out->pointers.empty() ? nullptr : out->pointers.data();
  s.n_stop_strings = out->pointers.size();
  return true;
}

// Tools as dev.pocket.Session packs them: each tool's name, description and
// parameters, the last two null where the tool has none (NULL for the C
// API). `strings` keeps the text `raw` points into.
struct ToolArgs {
  std::vector<std::string> strings;
  std::vector<pocket_tool> raw;
};

bool ReadTools(JNIEnv* env, jobjectArray tools, ToolArgs* out) {
  if (tools == nullptr || env->GetArrayLength(tools) % 3 != 0) {
    ThrowPocket(env, POCKET_INTERNAL, "tools array of the wrong size");
    return false;
  }
  const size_t n = static_cast<size_t>(env->GetArrayLength(tools));
  out->strings.resize(n);
  std::vector<bool> present(n, false);
  for (size_t i = 0; i < n; ++i) {
    jbyteArray item =
        static_cast<jbyteArray>(env->GetObjectArrayElement(tools, static_cast<jsize>(i)));
    if (env->ExceptionCheck()) return false;
    if (item == nullptr) continue;
    present[i] = true;
    const bool ok = ReadString(env, item, "tool", &out->strings[i]);
    env->DeleteLocalRef(item);
    if (!ok) return false;
  }
  const auto at = [&](size_t i) { return present[i] ? out->strings[i].c_str() : nullptr; };
  for (size_t i = 0; i < n; i += 3) out->raw.push_back({at(i), at(i + 1), at(i + 2)});
  return true;
}

// The streaming callback's state: the Java Call object on the calling thread.
struct Stream {
  JNIEnv* env;
  jobject call;
};

// Hands one piece to Call.piece on the thread that called generate or chat
// (the C API calls back on it). Each piece's local references live in their
// own frame, so a long generation does not exhaust the local reference
// table. A pending Java exception (the callback's own are caught in Java;
// this is an OutOfMemoryError or a StackOverflowError) stops the generation
// and stays pending until the native method returns.
int OnText(const char* text, size_t len, int32_t /*token_id*/, void* user_data) noexcept {
  Stream* stream = static_cast<Stream*>(user_data);
  JNIEnv* env = stream->env;
  if (env->ExceptionCheck()) return 1;
  if (env->PushLocalFrame(4) != 0) return 1;
  jboolean go_on = JNI_FALSE;
  jbyteArray piece = Bytes(env, text, len);
  if (piece != nullptr) go_on = env->CallBooleanMethod(stream->call, g_call_piece, piece);
  const bool failed = env->ExceptionCheck();
  env->PopLocalFrame(nullptr);
  return failed || go_on == JNI_FALSE ? 1 : 0;
}

// The tool calls of `g` as Call.finish takes them: each call's name, then its
// arguments. Null with an exception pending when memory runs out.
jobjectArray ToolCalls(JNIEnv* env, const pocket_generation& g) {
  jobjectArray out =
      env->NewObjectArray(static_cast<jsize>(2 * g.n_tool_calls), g_byte_array_class, nullptr);
  for (size_t i = 0; out != nullptr && i < 2 * g.n_tool_calls; ++i) {
    const pocket_tool_call& c = g.tool_calls[i / 2];
    const char* text = i % 2 == 0 ? c.name : c.arguments;
    jbyteArray item = Bytes(env, text, std::strlen(text));
    if (item == nullptr) return nullptr;
    env->SetObjectArrayElement(out, static_cast<jsize>(i), item);
    env->DeleteLocalRef(item);
  }
  return out;
}

// Reports the C call's outcome to Call.finish, message and tool calls
// included, unless a Java exception is pending (the native method then
// returns into it).
void Finish(JNIEnv* env, jobject call, pocket_status status, const pocket_generation& g) {
  if (env->ExceptionCheck()) return;
  const char* message = status == POCKET_OK ? "" : pocket_last_error();
  jbyteArray text = Bytes(env, message, std::strlen(message));
  if (text == nullptr) return;
  jobjectArray calls = ToolCalls(env, g);
  if (calls != nullptr) {
    env->CallVoidMethod(call, g_call_finish, static_cast<jint>(status),
                        static_cast<jint>(g.n_prompt_tokens), static_cast<jint>(g.n_generated),
                        static_cast<jint>(g.stop_reason), static_cast<jdouble>(g.prefill_seconds),
                        static_cast<jdouble>(g.decode_seconds), text, calls);
    env->DeleteLocalRef(calls);
  }
  env->DeleteLocalRef(text);
}

}  // namespace

extern "C" {

JNIEXPORT jint JNI_OnLoad(JavaVM* vm, void* /*reserved*/) {
  JNIEnv* env = nullptr;
  if (vm->GetEnv(reinterpret_cast<void**>(&env), JNI_VERSION_1_6) != JNI_OK) return JNI_ERR;
  jclass exception = env->FindClass("dev/pocket/PocketException");
  if (exception == nullptr) return JNI_ERR;
  g_exception_class = static_cast<jclass>(env->NewGlobalRef(exception));
  env->DeleteLocalRef(exception);
  g_exception_from_native =
      env->GetStaticMethodID(g_exception_class, "fromNative", "(I[B)Ldev/pocket/PocketException;");
  jclass call = env->FindClass("dev/pocket/Call");
  if (g_exception_class == nullptr || g_exception_from_native == nullptr || call == nullptr) {
    return JNI_ERR;
  }
  g_call_piece = env->GetMethodID(call, "piece", "([B)Z");
  g_call_finish = env->GetMethodID(call, "finish", "(IIIIDD[B[[B)V");
  env->DeleteLocalRef(call);
  jclass bytes = env->FindClass("[B");
  if (g_call_piece == nullptr || g_call_finish == nullptr || bytes == nullptr) return JNI_ERR;
  g_byte_array_class = static_cast<jclass>(env->NewGlobalRef(bytes));
  env->DeleteLocalRef(bytes);
  if (g_byte_array_class == nullptr) return JNI_ERR;
  return JNI_VERSION_1_6;
}

JNIEXPORT jbyteArray JNICALL Java_dev_pocket_Native_version(JNIEnv* env, jclass) {
  const char* v = pocket_version();
  return Bytes(env, v, std::strlen(v));
}

JNIEXPORT void JNICALL Java_dev_pocket_Native_modelDefaults(JNIEnv* env, jclass, jintArray out) {
  pocket_model_options o;
  pocket_model_options_init(&o);
  const jint v[4] = {o.threads, o.quant_math, o.pin_threads, o.huge_pages};
  env->SetIntArrayRegion(out, 0, 4, v);
}

JNIEXPORT void JNICALL Java_dev_pocket_Native_sessionDefaults(JNIEnv* env, jclass, jlongArray out) {
  pocket_session_options o;
  pocket_session_options_init(&o);
  const jlong v[4] = {o.kv_type, static_cast<jlong>(o.budget_bytes), o.kv_policy, o.sink_tokens};
  env->SetLongArrayRegion(out, 0, 4, v);
}

JNIEXPORT void JNICALL Java_dev_pocket_Native_samplingDefaults(JNIEnv* env, jclass,
                                                               jfloatArray floats, jintArray ints,
                                                               jlongArray longs) {
  pocket_sampling s;
  pocket_sampling_init(&s);
  const jfloat f[6] = {s.temperature,       s.top_p,           s.min_p, s.repeat_penalty,
                       s.frequency_penalty, s.presence_penalty};
  const jint i[6] = {s.top_k,      s.repeat_last_n, s.max_new_tokens,
                     s.ignore_eos, s.speculation,   s.max_draft};
  const jlong l[1] = {static_cast<jlong>(s.seed)};
  env->SetFloatArrayRegion(floats, 0, 6, f);
  env->SetIntArrayRegion(ints, 0, 6, i);
  env->SetLongArrayRegion(longs, 0, 1, l);
}

JNIEXPORT jlong JNICALL Java_dev_pocket_Native_modelLoad(JNIEnv* env, jclass, jbyteArray path,
                                                         jint threads, jbyteArray backend,
                                                         jint quant_math, jboolean pin_threads,
                                                         jboolean huge_pages) {
  try {
    std::string p, b;
    if (!ReadString(env, path, "path", &p)) return 0;
    if (backend != nullptr && !ReadString(env, backend, "backend", &b)) return 0;
    pocket_model_options options;
    pocket_model_options_init(&options);
    options.threads = threads;
    options.backend = backend != nullptr ? b.c_str() : nullptr;
    options.quant_math = quant_math;
    options.pin_threads = pin_threads ? 1 : 0;
    options.huge_pages = huge_pages ? 1 : 0;
    pocket_model* model = nullptr;
    if (!Check(env, pocket_model_load(p.c_str(), &options, &model))) return 0;
    return static_cast<jlong>(reinterpret_cast<intptr_t>(model));
  } catch (...) {
    ThrowFromCpp(env);
    return 0;
  }
}

JNIEXPORT void JNICALL Java_dev_pocket_Native_modelFree(JNIEnv*, jclass, jlong model) {
  pocket_model_free(AsModel(model));
}

JNIEXPORT jint JNICALL Java_dev_pocket_Native_modelVocabSize(JNIEnv*, jclass, jlong model) {
  return pocket_model_vocab_size(AsModel(model));
}

JNIEXPORT jint JNICALL Java_dev_pocket_Native_modelContextLength(JNIEnv*, jclass, jlong model) {
  return pocket_model_context_length(AsModel(model));
}

JNIEXPORT jbyteArray JNICALL Java_dev_pocket_Native_modelArchitecture(JNIEnv* env, jclass,
                                                                      jlong model) {
  const char* a = pocket_model_architecture(AsModel(model));
  return Bytes(env, a, std::strlen(a));
}

JNIEXPORT jintArray JNICALL Java_dev_pocket_Native_tokenize(JNIEnv* env, jclass, jlong model,
                                                            jbyteArray text) {
  try {
    std::string t;
    if (!ReadString(env, text, "text", &t)) return nullptr;
    std::vector<int32_t> ids(t.size() + 16);
    size_t n = 0;
    pocket_status s =
        pocket_tokenize(AsModel(model), t.data(), t.size(), ids.data(), ids.size(), &n);
    if (s == POCKET_OUT_OF_RANGE) {
      ids.resize(n);
      s = pocket_tokenize(AsModel(model), t.data(), t.size(), ids.data(), ids.size(), &n);
    }
    if (!Check(env, s)) return nullptr;
    jintArray out = env->NewIntArray(static_cast<jsize>(n));
    if (out != nullptr && n > 0) {
      env->SetIntArrayRegion(out, 0, static_cast<jsize>(n),
                             reinterpret_cast<const jint*>(ids.data()));
    }
    return out;
  } catch (...) {
    ThrowFromCpp(env);
    return nullptr;
  }
}

JNIEXPORT jbyteArray JNICALL Java_dev_pocket_Native_detokenize(JNIEnv* env, jclass, jlong model,
                                                               jintArray ids) {
  try {
    std::vector<int32_t> in;
    if (!ReadInts(env, ids, "ids", &in)) return nullptr;
    std::string text(in.size() * 8 + 16, '\0');
    size_t n = 0;
    pocket_status s =
        pocket_detokenize(AsModel(model), in.data(), in.size(), &text[0], text.size(), &n);
    if (s == POCKET_OUT_OF_RANGE) {
      text.assign(n + 1, '\0');
      s = pocket_detokenize(AsModel(model), in.data(), in.size(), &text[0], text.size(), &n);
    }
    if (!Check(env, s)) return nullptr;
    return Bytes(env, text.data(), n);
  } catch (...) {
    ThrowFromCpp(env);
    return nullptr;
  }
}

JNIEXPORT jlong JNICALL Java_dev_pocket_Native_sessionNew(JNIEnv* env, jclass, jlong model,
                                                          jint kv_type, jlong budget_bytes,
                                                          jint kv_policy, jint sink_tokens) {
  pocket_session_options options;
  pocket_session_options_init(&options);
  options.kv_type = kv_type;
  if (budget_bytes < 0) {
    ThrowInvalid(env, "SessionOptions.budgetBytes must be >= 0 (0 = unlimited)");
    return 0;
  }
  options.budget_bytes = static_cast<uint64_t>(budget_bytes);
  options.kv_policy = kv_policy;
  options.sink_tokens = sink_tokens;
  pocket_session* session = nullptr;
  if (!Check(env, pocket_session_new(AsModel(model), &options, &session))) return 0;
  return static_cast<jlong>(reinterpret_cast<intptr_t>(session));
}

JNIEXPORT void JNICALL Java_dev_pocket_Native_sessionFree(JNIEnv*, jclass, jlong session) {
  pocket_session_free(AsSession(session));
}

JNIEXPORT void JNICALL Java_dev_pocket_Native_sessionCancel(JNIEnv* env, jclass, jlong session) {
  Check(env, pocket_session_cancel(AsSession(session)));
}

JNIEXPORT void JNICALL Java_dev_pocket_Native_sessionTrim(JNIEnv* env, jclass, jlong session,
                                                          jint level, jbyteArray state_path) {
  try {
    std::string p;
    if (state_path != nullptr && !ReadString(env, state_path, "statePath", &p)) return;
    Check(env, pocket_session_trim(AsSession(session), level,
                                   state_path != nullptr ? p.c_str() : nullptr));
  } catch (...) {
    ThrowFromCpp(env);
  }
}

JNIEXPORT void JNICALL Java_dev_pocket_Native_sessionMove(JNIEnv* env, jclass, jlong session,
                                                          jlong model) {
  Check(env, pocket_session_move(AsSession(session), AsModel(model)));
}

JNIEXPORT void JNICALL Java_dev_pocket_Native_sessionReset(JNIEnv* env, jclass, jlong session) {
  Check(env, pocket_session_reset(AsSession(session)));
}

JNIEXPORT jint JNICALL Java_dev_pocket_Native_sessionPosition(JNIEnv*, jclass, jlong session) {
  return pocket_session_position(AsSession(session));
}

JNIEXPORT void JNICALL Java_dev_pocket_Native_sessionMemory(JNIEnv* env, jclass, jlong session,
                                                            jlongArray out) {
  pocket_memory_usage u;
  pocket_memory_usage_init(&u);
  if (!Check(env, pocket_session_memory(AsSession(session), &u))) return;
  const jlong v[10] = {static_cast<jlong>(u.weights),    static_cast<jlong>(u.weights_resident),
                       static_cast<jlong>(u.model),      static_cast<jlong>(u.kv),
                       static_cast<jlong>(u.scratch),    static_cast<jlong>(u.logits),
                       static_cast<jlong>(u.total),      static_cast<jlong>(u.budget),
                       static_cast<jlong>(u.max_tokens), static_cast<jlong>(u.tokens)};
  env->SetLongArrayRegion(out, 0, 10, v);
}

JNIEXPORT void JNICALL Java_dev_pocket_Native_sessionSave(JNIEnv* env, jclass, jlong session,
                                                          jbyteArray path) {
  try {
    std::string p;
    if (!ReadString(env, path, "path", &p)) return;
    Check(env, pocket_session_save(AsSession(session), p.c_str()));
  } catch (...) {
    ThrowFromCpp(env);
  }
}

JNIEXPORT void JNICALL Java_dev_pocket_Native_sessionLoad(JNIEnv* env, jclass, jlong session,
                                                          jbyteArray path) {
  try {
    std::string p;
    if (!ReadString(env, path, "path", &p)) return;
    Check(env, pocket_session_load(AsSession(session), p.c_str()));
  } catch (...) {
    ThrowFromCpp(env);
  }
}

JNIEXPORT void JNICALL Java_dev_pocket_Native_sessionEval(JNIEnv* env, jclass, jlong session,
                                                          jintArray tokens, jfloatArray logits) {
  try {
    std::vector<int32_t> ids;
    if (!ReadInts(env, tokens, "tokens", &ids)) return;
    if (logits == nullptr) {
      ThrowPocket(env, POCKET_INTERNAL, "eval: no logits array");
      return;
    }
    if (ids.empty()) {
      ThrowInvalid(env, "eval: tokens is empty");
      return;
    }
    // The Java side sizes `logits` to the model's vocabulary, which is what
    // pocket_session_eval writes.
    std::vector<float> out(static_cast<size_t>(env->GetArrayLength(logits)));
    if (!Check(env, pocket_session_eval(AsSession(session), ids.data(), ids.size(), out.data()))) {
      return;
    }
    env->SetFloatArrayRegion(logits, 0, static_cast<jsize>(out.size()), out.data());
  } catch (...) {
    ThrowFromCpp(env);
  }
}

JNIEXPORT void JNICALL Java_dev_pocket_Native_generate(JNIEnv* env, jclass, jlong session,
                                                       jbyteArray prompt, jfloatArray floats,
                                                       jintArray ints, jlong seed,
                                                       jobjectArray stops, jbyteArray lookup,
                                                       jobject call) {
  try {
    std::string p;
    SamplingArgs sampling;
    if (!ReadString(env, prompt, "prompt", &p)) return;
    if (!ReadSampling(env, floats, ints, seed, stops, lookup, &sampling)) return;
    Stream stream{env, call};
    pocket_generation g;
    pocket_generation_init(&g);
    const pocket_status s =
        pocket_generate(AsSession(session), p.c_str(), &sampling.raw, &OnText, &stream, &g);
    Finish(env, call, s, g);
  } catch (...) {
    ThrowFromCpp(env);
  }
}

JNIEXPORT void JNICALL Java_dev_pocket_Native_chat(JNIEnv* env, jclass, jlong session,
                                                   jobjectArray roles, jobjectArray contents,
                                                   jboolean thinking, jfloatArray floats,
                                                   jintArray ints, jlong seed, jobjectArray stops,
                                                   jbyteArray lookup, jobjectArray tools,
                                                   jint tool_choice, jobject call) {
  try {
    std::vector<std::string> r, c;
    SamplingArgs sampling;
    ToolArgs tool_args;
    if (!ReadStrings(env, roles, "role", &r) || !ReadStrings(env, contents, "content", &c)) return;
    if (r.size() != c.size()) {
      ThrowPocket(env, POCKET_INTERNAL, "chat: as many roles as contents expected");
      return;
    }
    if (!ReadSampling(env, floats, ints, seed, stops, lookup, &sampling)) return;
    if (!ReadTools(env, tools, &tool_args)) return;
    sampling.raw.tools = tool_args.raw.empty() ? nullptr : tool_args.raw.data();
    sampling.raw.n_tools = tool_args.raw.size();
    sampling.raw.tool_choice = tool_choice;
    std::vector<pocket_message> messages(r.size());
    for (size_t i = 0; i < r.size(); ++i) messages[i] = {r[i].c_str(), c[i].c_str()};
    Stream stream{env, call};
    pocket_generation g;
    pocket_generation_init(&g);
    const pocket_status s = pocket_chat(AsSession(session), messages.data(), messages.size(),
                                        thinking ? 1 : 0, &sampling.raw, &OnText, &stream, &g);
    Finish(env, call, s, g);
  } catch (...) {
    ThrowFromCpp(env);
  }
}

}  // extern "C"
