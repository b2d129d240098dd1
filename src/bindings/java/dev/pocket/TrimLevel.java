package dev.pocket;

/** How much Session.trim gives back (pocket.h: POCKET_TRIM_SCRATCH, POCKET_TRIM_SUSPEND). */
public enum TrimLevel {
  /** Frees the activation buffers and KV pages past the position; the next call reallocates. */
  SCRATCH(1),
  /**
   * Also writes the tokens, KV cache and chat transcript to a state file and frees the KV cache;
   * the next generate, chat, eval or save restores it exactly (and deletes the file).
   */
  SUSPEND(2);

  final int code;

  TrimLevel(int code) {
    this.code = code;
  }
}
