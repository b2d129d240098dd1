package dev.pocket;

/**
 * A loaded .pocket model: immutable, shared by any number of sessions on any threads.
 *
 * <p>close() makes the Model unusable for new calls at once; the native model is freed once every
 * session created from it is closed too (a session holds its model), so closing in any order is
 * safe.
 */
public final class Model implements AutoCloseable {
  // Package-private: a session holds it while it runs on this model (Session.moveTo).
  final Handle handle;
  private final int vocabSize;
  private final int contextLength;
  private final String architecture;

  private Model(long ptr) {
    handle = new Handle("Model", ptr, Native::modelFree);
    vocabSize = Native.modelVocabSize(ptr);
    contextLength = Native.modelContextLength(ptr);
    architecture = Native.string(Native.modelArchitecture(ptr));
  }

  /** Maps and validates a .pocket file with the default options. */
  public static Model load(String path) {
    return load(path, null);
  }

  /**
   * Maps and validates a .pocket file; PocketException (NOT_FOUND, IO_ERROR, CORRUPT_FILE,
   * UNSUPPORTED, INVALID_ARGUMENT) naming the file and what is wrong.
   */
  public static Model load(String path, ModelOptions options) {
    byte[] p = Native.cString("path", path);
    ModelOptions o = options != null ? options : new ModelOptions();
    byte[] backend = o.backend == null ? null : Native.cString("ModelOptions.backend", o.backend);
    int quantMath = o.quantMath == ModelOptions.QuantMath.F32 ? 1 : 0;
    return new Model(Native.modelLoad(p, o.threads, backend, quantMath, o.pinThreads, o.hugePages));
  }

  /** The library's version, "MAJOR.MINOR.PATCH". */
  public static String libraryVersion() {
    return Native.string(Native.version());
  }

  public int vocabSize() {
    handle.checkOpen();
    return vocabSize;
  }

  public int contextLength() {
    handle.checkOpen();
    return contextLength;
  }

  /** "qwen3", "qwen2" or "llama". */
  public String architecture() {
    handle.checkOpen();
    return architecture;
  }

  /** Text to token ids (no BOS added). */
  public int[] tokenize(String text) {
    if (text == null) throw PocketException.invalid("text is null");
    byte[] utf8 = Native.utf8(text);
    long m = handle.acquire();
    try {
      return Native.tokenize(m, utf8);
    } finally {
      handle.release();
    }
  }

  /** Token ids to text; INVALID_ARGUMENT names an id outside the vocabulary. */
  public String detokenize(int[] ids) {
    if (ids == null) throw PocketException.invalid("ids is null");
    long m = handle.acquire();
    try {
      return Native.string(Native.detokenize(m, ids));
    } finally {
      handle.release();
    }
  }

  /** A new conversation with the default options. */
  public Session newSession() {
    return newSession(null);
  }

  /**
   * A new conversation; BUDGET_EXCEEDED when the budget cannot hold the weights, scratch and one
   * KV page (the message names the numbers).
   */
  public Session newSession(SessionOptions options) {
    SessionOptions o = options != null ? options : new SessionOptions();
    if (o.kvType == null || o.kvPolicy == null) {
      throw PocketException.invalid("SessionOptions.kvType and kvPolicy must not be null");
    }
    long m = handle.acquire();
    boolean kept = false;
    try {
      long s = Native.sessionNew(m, o.kvType.ordinal(), o.budgetBytes, o.kvPolicy.ordinal(),
          o.sinkTokens);
      // The session keeps this hold on the model until it is freed.
      Session session = new Session(s, handle, vocabSize);
      kept = true;
      return session;
    } finally {
      if (!kept) handle.release();
    }
  }

  /** Idempotent; see the class comment for sessions still open. */
  @Override
  public void close() {
    handle.close(null);
  }
}
