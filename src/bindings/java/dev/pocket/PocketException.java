package dev.pocket;

/**
 * A failed Pocket call: the {@link Status} and the library's message saying what is wrong and what
 * to do (pocket_last_error). Unchecked, as Kotlin has no checked exceptions anyway.
 */
public class PocketException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final Status status;
  private final transient Generation generation;

  public PocketException(Status status, String message) {
    this(status, message, null);
  }

  PocketException(Status status, String message, Generation generation) {
    super(status + ": " + message);
    this.status = status;
    this.generation = generation;
  }

  /** What kind of failure this is; BUSY for a call on a session that is in another call. */
  public Status status() {
    return status;
  }

  /**
   * For a generate or chat call that failed while generating (for example BUDGET_EXCEEDED), what
   * it generated before it stopped: the session keeps those tokens. Null for other calls.
   */
  public Generation generation() {
    return generation;
  }

  // Called by the JNI glue, which passes the message as UTF-8 bytes.
  static PocketException fromNative(int code, byte[] message) {
    return new PocketException(Status.of(code), Native.string(message));
  }

  static PocketException invalid(String message) {
    return new PocketException(Status.INVALID_ARGUMENT, message);
  }
}
