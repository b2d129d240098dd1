package dev.pocket;

/** Why a generation ended: pocket_stop_reason in include/pocket/pocket.h. */
public enum StopReason {
  /** The model produced a stop token. */
  EOS,
  /** Sampling.maxNewTokens (or the model's default length) was reached. */
  LENGTH,
  /** One of Sampling.stopStrings was produced (it is not part of the text). */
  STOP_STRING,
  /** Session.cancel() or close() was called, or the callback returned false or threw. */
  CANCELLED,
  /** The next token did not fit the session's memory budget. */
  BUDGET,
  /** Any other error. */
  ERROR;

  static StopReason of(int code) {
    StopReason[] all = values();
    return code >= 0 && code < all.length ? all[code] : ERROR;
  }
}
