package dev.pocket;

import java.util.ArrayList;
import java.util.List;

/**
 * How to pick tokens (pocket_sampling). A new instance holds the C library's defaults
 * (pocket_sampling_init): greedy decoding with the model's default length, speculation AUTO. In
 * Kotlin: {@code
 * Sampling().apply { temperature = 0.7f; topP = 0.9f; maxNewTokens = 256 }}.
 */
public final class Sampling {
  /** 0 = greedy. */
  public float temperature;
  /** 0 = off. */
  public int topK;
  /** 1 = off. */
  public float topP;
  /** 0 = off. */
  public float minP;
  /** 1 = off. */
  public float repeatPenalty;
  /** The window for the penalties; -1 = every token. */
  public int repeatLastN;
  /** 0 = off. */
  public float frequencyPenalty;
  /** 0 = off. */
  public float presencePenalty;
  public long seed;
  /** At most this many tokens; 0 or less = the model's default. */
  public int maxNewTokens;
  /** Do not stop on the model's stop tokens. */
  public boolean ignoreEos;
  /** Generation stops when one of these appears; it is not part of the text. */
  public List<String> stopStrings = new ArrayList<>();
  /** Speculative decoding; AUTO by default. */
  public Speculation speculation;
  /** Most tokens guessed per step, 1 to 15; 0 = the library's default (8). */
  public int maxDraft;
  /** Text prompt lookup also searches (a document the reply quotes); null = none. */
  public String lookupText;

  public Sampling() {
    float[] f = new float[6];
    int[] i = new int[6];
    long[] l = new long[1];
    Native.samplingDefaults(f, i, l);
    temperature = f[0];
    topP = f[1];
    minP = f[2];
    repeatPenalty = f[3];
    frequencyPenalty = f[4];
    presencePenalty = f[5];
    topK = i[0];
    repeatLastN = i[1];
    maxNewTokens = i[2];
    ignoreEos = i[3] != 0;
    speculation = Speculation.of(i[4]);
    maxDraft = i[5];
    seed = l[0];
  }

  /** Greedy decoding of at most maxNewTokens tokens. */
  public static Sampling greedy(int maxNewTokens) {
    Sampling s = new Sampling();
    s.maxNewTokens = maxNewTokens;
    return s;
  }

  // The layout Native.generate and Native.chat read (the inverse of the constructor).
  float[] floats() {
    return new float[] {
      temperature, topP, minP, repeatPenalty, frequencyPenalty, presencePenalty
    };
  }

  int[] ints() {
    if (speculation == null) throw PocketException.invalid("Sampling.speculation is null");
    return new int[] {
      topK, repeatLastN, maxNewTokens, ignoreEos ? 1 : 0, speculation.code, maxDraft
    };
  }

  byte[] lookup() {
    return lookupText == null ? null : Native.cString("Sampling.lookupText", lookupText);
  }

  byte[][] stops() {
    if (stopStrings == null) return new byte[0][];
    byte[][] out = new byte[stopStrings.size()][];
    for (int k = 0; k < out.length; ++k) {
      String s = stopStrings.get(k);
      if (s == null) throw PocketException.invalid("Sampling.stopStrings[" + k + "] is null");
      out[k] = Native.utf8(s);
    }
    return out;
  }
}
