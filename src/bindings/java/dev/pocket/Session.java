package dev.pocket;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * One conversation: the KV cache and the tokens in it.
 *
 * <p>Threads: a session takes one call at a time. A call made while another runs, from another
 * thread or from the running call's callback, throws PocketException with Status.BUSY and changes
 * nothing. cancel() and close() are the exceptions: safe from any thread at any time (for example
 * the UI thread while a worker generates). close() during a call cancels it and frees the session
 * once it returns. Different sessions, on one model or several, run concurrently.
 */
public final class Session implements AutoCloseable {
  private final Handle handle;
  private final int vocabSize;
  // The generate and chat calls in progress, for cancel(); guarded by itself.
  private final List<Call> running = new ArrayList<>();
  // The model the session runs on, held until the session is freed or moves (moveTo); guarded by
  // this.
  private Handle model;

  Session(long ptr, Handle model, int vocabSize) {
    this.model = model;
    this.handle = new Handle("Session", ptr, p -> {
      Native.sessionFree(p);
      releaseModel();
    });
    this.vocabSize = vocabSize;
  }

  private void releaseModel() {
    Handle m;
    synchronized (this) {
      m = model;
    }
    m.release();
  }

  /** Greedy generation with the model's default length. */
  public Generation generate(String prompt) {
    return generate(prompt, null, null);
  }

  public Generation generate(String prompt, Sampling sampling) {
    return generate(prompt, sampling, null);
  }

  /**
   * Continues the session with prompt (BOS added at the start of a session when the model wants
   * it) and generates, streaming each piece to callback (may be null) on this thread. Returns
   * normally when generation ends, including after cancel() (StopReason.CANCELLED, with the text
   * so far); throws what the callback threw, or PocketException (its generation() holds what was
   * generated when the failure came while generating, e.g. BUDGET_EXCEEDED).
   */
  public Generation generate(String prompt, Sampling sampling, TextCallback callback) {
    byte[] p = Native.cString("prompt", prompt);
    Sampling s = sampling != null ? sampling : new Sampling();
    float[] floats = s.floats();
    int[] ints = s.ints();
    byte[][] stops = s.stops();
    byte[] lookup = s.lookup();
    Call call = new Call(callback);
    long h = handle.acquire();
    try {
      begin(call);
      try {
        Native.generate(h, p, floats, ints, s.seed, stops, lookup, call);
      } finally {
        end(call);
      }
    } finally {
      handle.release();
    }
    return call.result();
  }

  public Generation chat(List<Message> messages, boolean thinking) {
    return chat(messages, thinking, null, null);
  }

  /**
   * Renders the new messages with the model's chat template and generates the assistant's reply.
   * Later calls pass only the new messages: earlier turns stay in the KV cache. thinking is
   * Qwen3's switch. Returns and throws as generate does.
   */
  public Generation chat(List<Message> messages, boolean thinking, Sampling sampling,
      TextCallback callback) {
    return chat(messages, thinking, Collections.emptyList(), ToolChoice.AUTO, sampling, callback);
  }

  /**
   * As chat(messages, thinking, sampling, callback), with tools the model may call (Qwen3's
   * template; pass the same ones on every turn): the template lists them and the reply is
   * constrained to choice. The reply's calls are in the Generation's toolCalls; each result goes
   * back as a Message.tool. Tools on another template are Status.UNSUPPORTED.
   */
  public Generation chat(List<Message> messages, boolean thinking, List<Tool> tools,
      ToolChoice choice, Sampling sampling, TextCallback callback) {
    if (messages == null || messages.isEmpty()) throw PocketException.invalid("no messages");
    byte[][] roles = new byte[messages.size()][];
    byte[][] contents = new byte[messages.size()][];
    for (int i = 0; i < roles.length; ++i) {
      Message m = messages.get(i);
      if (m == null) throw PocketException.invalid("message " + i + " is null");
      roles[i] = Native.cString("message " + i + "'s role", m.role);
      contents[i] = Native.cString("message " + i + "'s content", m.content);
    }
    if (tools == null) throw PocketException.invalid("tools is null");
    if (choice == null) throw PocketException.invalid("choice is null");
    byte[][] toolStrings = new byte[3 * tools.size()][];
    for (int i = 0; i < tools.size(); ++i) {
      Tool t = tools.get(i);
      if (t == null) throw PocketException.invalid("tool " + i + " is null");
      toolStrings[3 * i] = Native.cString("tool " + i + "'s name", t.name);
      if (t.description != null) {
        toolStrings[3 * i + 1] = Native.cString("tool " + i + "'s description", t.description);
      }
      if (t.parameters != null) {
        toolStrings[3 * i + 2] = Native.cString("tool " + i + "'s parameters", t.parameters);
      }
    }
    Sampling s = sampling != null ? sampling : new Sampling();
    float[] floats = s.floats();
    int[] ints = s.ints();
    byte[][] stops = s.stops();
    byte[] lookup = s.lookup();
    Call call = new Call(callback);
    long h = handle.acquire();
    try {
      begin(call);
      try {
        Native.chat(h, roles, contents, thinking, floats, ints, s.seed, stops, lookup, toolStrings,
            choice.code, call);
      } finally {
        end(call);
      }
    } finally {
      handle.release();
    }
    return call.result();
  }

  /**
   * Teacher-forced evaluation: appends tokens to the session and returns the next-token logits of
   * the last one (vocabSize floats). INVALID_ARGUMENT for an empty array or an id outside the
   * vocabulary; the session is unchanged then.
   */
  public float[] eval(int[] tokens) {
    if (tokens == null) throw PocketException.invalid("tokens is null");
    float[] logits = new float[vocabSize];
    long h = handle.acquire();
    try {
      Native.sessionEval(h, tokens, logits);
    } finally {
      handle.release();
    }
    return logits;
  }

  /**
   * Gives memory back under pressure (Android's onTrimMemory) without losing the conversation:
   * SCRATCH frees the activation buffers and spare KV pages; SUSPEND (use {@link #trim(TrimLevel,
   * String)}) also writes the conversation to a file and frees the KV cache.
   */
  public void trim(TrimLevel level) {
    trim(level, null);
  }

  /**
   * As trim(level), with the file SUSPEND writes the session to (a file in the app's cache
   * folder; the next generate, chat, eval or save reads it back and deletes it; reset, load and
   * close delete it instead). position() keeps its value while suspended. BUSY while another
   * call runs (cancel it first); a failure (the file cannot be written) leaves the session as it
   * was.
   */
  public void trim(TrimLevel level, String statePath) {
    if (level == null) throw PocketException.invalid("level is null");
    byte[] p = statePath == null ? null : Native.cString("statePath", statePath);
    long h = handle.acquire();
    try {
      Native.sessionTrim(h, level.code, p);
    } finally {
      handle.release();
    }
  }

  /**
   * Moves the conversation to target, the same model file loaded with another backend
   * (pocket_session_move): the KV cache goes from one backend to the other, the tokens and chat
   * stay, and the next call runs on target's backend (e.g. off the GPU while the app is in the
   * background, and back). The session then holds target instead of its old model. INVALID_ARGUMENT
   * for a null target, a model of another file or a KV type target's backend does not store;
   * BUDGET_EXCEEDED when the tokens do not fit the budget there; BUSY while another call runs. A
   * failure leaves the session on its model, unchanged.
   */
  public void moveTo(Model target) {
    if (target == null) throw PocketException.invalid("target is null");
    Handle to = target.handle;
    long m = to.acquire();
    Handle released = to;
    try {
      long h = handle.acquire();
      try {
        Native.sessionMove(h, m);
        // Before the session's release: a close() meanwhile frees it there, with target.
        synchronized (this) {
          released = model;
          model = to;
        }
      } finally {
        handle.release();
      }
    } finally {
      released.release();
    }
  }

  /** Forgets the conversation (KV cache and position). */
  public void reset() {
    long h = handle.acquire();
    try {
      Native.sessionReset(h);
    } finally {
      handle.release();
    }
  }

  /**
   * Tokens held in the KV cache; PocketException(BUSY) while the session is in another call. The
   * last token a generation produced is not among them yet: it enters the cache at the start of
   * the next call, so after a fresh generate the position is promptTokens + generatedTokens - 1.
   */
  public int position() {
    long h = handle.acquire();
    try {
      int p = Native.sessionPosition(h);
      if (p < 0) {
        throw new PocketException(Status.BUSY,
            "position: the session is busy in another call; ask again after it returns");
      }
      return p;
    } finally {
      handle.release();
    }
  }

  /** What the session holds, in bytes, by category. */
  public MemoryUsage memory() {
    long[] v = new long[10];
    long h = handle.acquire();
    try {
      Native.sessionMemory(h, v);
    } finally {
      handle.release();
    }
    return new MemoryUsage(v);
  }

  /** Saves the tokens and KV cache to path, to be loaded into a session of the same model file. */
  public void save(String path) {
    byte[] p = Native.cString("path", path);
    long h = handle.acquire();
    try {
      Native.sessionSave(h, p);
    } finally {
      handle.release();
    }
  }

  /**
   * Restores what save() wrote (same model file and KV type); a failed load leaves the session as
   * it was.
   */
  public void load(String path) {
    byte[] p = Native.cString("path", path);
    long h = handle.acquire();
    try {
      Native.sessionLoad(h, p);
    } finally {
      handle.release();
    }
  }

  /**
   * Asks the generate or chat call running on this session, on another thread or from its own
   * callback, to stop after the token it is computing (or once its prompt's prefill ends); it then
   * returns a Generation with StopReason.CANCELLED, and the session keeps every token generated so
   * far. With no call running it does nothing, also on a closed session.
   */
  public void cancel() {
    long h = handle.acquireIfOpen();
    if (h == 0) return;
    try {
      cancelRunning(h);
    } finally {
      handle.release();
    }
  }

  /**
   * Idempotent, from any thread: new calls throw IllegalStateException at once; a call in
   * progress is cancelled and the session is freed when it returns (close() does not wait).
   */
  @Override
  public void close() {
    handle.close(this::cancelRunning);
  }

  private void cancelRunning(long h) {
    synchronized (running) {
      for (Call c : running) c.cancelled = true;
    }
    Native.sessionCancel(h);
  }

  private void begin(Call call) {
    synchronized (running) {
      running.add(call);
    }
  }

  private void end(Call call) {
    synchronized (running) {
      running.remove(call);
    }
  }
}
