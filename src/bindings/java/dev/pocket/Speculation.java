package dev.pocket;

/**
 * Speculative decoding (pocket.h: POCKET_SPECULATION_*): tokens guessed ahead and verified in one
 * pass over the weights. The text is the same; only the number of passes changes.
 */
public enum Speculation {
  /** Never. */
  OFF(0),
  /**
   * Prompt lookup (guesses from the session's own tokens and Sampling.lookupText) on any backend;
   * where a backend rounds a verifying step differently from single steps (OpenCL), a near tie can
   * come out differently.
   */
  PROMPT_LOOKUP(1),
  /** The default: prompt lookup where the backend verifies exactly (the CPU), none elsewhere. */
  AUTO(3);

  final int code;

  Speculation(int code) {
    this.code = code;
  }

  static Speculation of(int code) {
    for (Speculation s : values()) {
      if (s.code == code) return s;
    }
    return AUTO;
  }
}
