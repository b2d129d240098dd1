package dev.pocket;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * One generate or chat call as the JNI glue sees it: piece() receives each piece of text from the
 * native loop, finish() what pocket_generation says at the end.
 */
final class Call {
  private final TextCallback callback;
  private final StringBuilder text = new StringBuilder();
  // Set by Session.cancel() from any thread: closes the gap between the Java call starting and
  // the C call clearing its cancel flag, in which the C API would drop the request.
  volatile boolean cancelled;
  private Throwable error;
  private boolean finished;
  private int status;
  private int promptTokens;
  private int generated;
  private int stopReason;
  private double prefillSeconds;
  private double decodeSeconds;
  private String message;
  private List<ToolCall> toolCalls;

  Call(TextCallback callback) {
    this.callback = callback;
  }

  // From the native loop, on the calling thread. False stops the generation after this token.
  // The callback's exception is kept and rethrown by result(): throwing it through the native
  // frames would leave it pending while the C loop runs on.
  boolean piece(byte[] utf8) {
    String s = Native.string(utf8);
    text.append(s);
    boolean goOn = true;
    if (callback != null) {
      try {
        goOn = callback.onText(s);
      } catch (Throwable t) {
        error = t;
        return false;
      }
    }
    return goOn && !cancelled;
  }

  // From the JNI glue once the C call returned. toolCalls: each call's name, then its arguments.
  void finish(int status, int promptTokens, int generated, int stopReason, double prefillSeconds,
      double decodeSeconds, byte[] message, byte[][] toolCalls) {
    this.finished = true;
    this.status = status;
    this.promptTokens = promptTokens;
    this.generated = generated;
    this.stopReason = stopReason;
    this.prefillSeconds = prefillSeconds;
    this.decodeSeconds = decodeSeconds;
    this.message = Native.string(message);
    List<ToolCall> calls = new ArrayList<>();
    for (int k = 0; k + 1 < toolCalls.length; k += 2) {
      calls.add(new ToolCall(Native.string(toolCalls[k]), Native.string(toolCalls[k + 1])));
    }
    this.toolCalls = Collections.unmodifiableList(calls);
  }

  /**
   * The Generation for a finished or cancelled call; the callback's exception, or a
   * PocketException carrying what was generated, otherwise.
   */
  Generation result() {
    if (error != null) throw Call.<RuntimeException>rethrow(error);
    if (!finished) throw new PocketException(Status.INTERNAL, "the native call did not finish");
    Generation g = new Generation(text.toString(), promptTokens, generated,
        StopReason.of(stopReason), prefillSeconds, decodeSeconds, toolCalls);
    Status s = Status.of(status);
    if (s == Status.OK || s == Status.CANCELLED) return g;
    throw new PocketException(s, message, g);
  }

  // Rethrows any Throwable unchanged (a Kotlin callback may throw checked exceptions too).
  @SuppressWarnings("unchecked")
  private static <T extends Throwable> RuntimeException rethrow(Throwable t) throws T {
    throw (T) t;
  }
}
