package dev.pocket;

import java.nio.charset.StandardCharsets;

/**
 * The JNI entry points (src/bindings/jni/pocket_jni.cc) and the library's loading. Text crosses as
 * UTF-8 byte arrays, converted here with the standard charset: JNI's own string functions use
 * modified UTF-8, which encodes characters outside the Basic Multilingual Plane (emoji, many CJK
 * extensions) as surrogate pairs that the tokenizer would refuse as invalid UTF-8.
 *
 * <p>Handles are the C pointers as longs; the classes that hold them (Model, Session) make sure a
 * pointer is never used after it is freed (Handle).
 */
final class Native {
  private Native() {}

  static {
    // The system property lets a JVM outside Android (the tests) load the library from a build
    // folder; on Android the AAR's jni/<abi>/libpocket_jni.so is found by name.
    String path = System.getProperty("dev.pocket.library");
    if (path != null && !path.isEmpty()) {
      System.load(path);
    } else {
      System.loadLibrary("pocket_jni");
    }
  }

  static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  static String string(byte[] utf8) {
    return utf8 == null ? "" : new String(utf8, StandardCharsets.UTF_8);
  }

  // A string the C API takes NUL-terminated: null and embedded NULs (which would cut it short)
  // are refused here, with what the string is.
  static byte[] cString(String what, String s) {
    if (s == null) throw PocketException.invalid(what + " is null");
    if (s.indexOf('\0') >= 0) throw PocketException.invalid(what + " contains a NUL character");
    return utf8(s);
  }

  static native byte[] version();

  static native void modelDefaults(int[] out);

  static native void sessionDefaults(long[] out);

  static native void samplingDefaults(float[] floats, int[] ints, long[] longs);

  static native long modelLoad(byte[] path, int threads, byte[] backend, int quantMath,
      boolean pinThreads, boolean hugePages);

  static native void modelFree(long model);

  static native int modelVocabSize(long model);

  static native int modelContextLength(long model);

  static native byte[] modelArchitecture(long model);

  static native int[] tokenize(long model, byte[] text);

  static native byte[] detokenize(long model, int[] ids);

  static native long sessionNew(long model, int kvType, long budgetBytes, int kvPolicy,
      int sinkTokens);

  static native void sessionFree(long session);

  static native void sessionCancel(long session);

  static native void sessionTrim(long session, int level, byte[] statePath);

  static native void sessionReset(long session);

  static native void sessionMove(long session, long model);

  static native int sessionPosition(long session);

  static native void sessionMemory(long session, long[] out);

  static native void sessionSave(long session, byte[] path);

  static native void sessionLoad(long session, byte[] path);

  static native void sessionEval(long session, int[] tokens, float[] logits);

  // lookup: Sampling.lookupText, or null.
  static native void generate(long session, byte[] prompt, float[] floats, int[] ints, long seed,
      byte[][] stops, byte[] lookup, Call call);

  // tools: each tool's name, description and parameters, the last two null where it has none.
  static native void chat(long session, byte[][] roles, byte[][] contents, boolean thinking,
      float[] floats, int[] ints, long seed, byte[][] stops, byte[] lookup, byte[][] tools,
      int toolChoice, Call call);
}
