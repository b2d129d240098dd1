package dev.pocket;

/**
 * How to load a model (pocket_model_options). A new instance holds the C library's defaults
 * (pocket_model_options_init); change the fields you need. In Kotlin: {@code
 * ModelOptions().apply { threads = 2 }}.
 */
public final class ModelOptions {
  /** How the CPU multiplies q4/q8 weights (pocket.h: quant_math). */
  public enum QuantMath {
    /** int8 activations and the CPU's int8 dot instructions (the default). */
    INT8,
    /** f32 maths throughout: the reference-accurate path, slower. */
    F32
  }

  /** Compute threads, at most 1024; 0 = one per fast physical core (a phone's big cores). */
  public int threads;
  /** The backend's name; null = "cpu". */
  public String backend;
  public QuantMath quantMath;
  /** Pins compute worker i to the i-th core of the fast-first order (Linux and Android). */
  public boolean pinThreads;
  /** Copies the weights into transparent huge pages (a slower load, steadier decode). */
  public boolean hugePages;

  public ModelOptions() {
    int[] d = new int[4];
    Native.modelDefaults(d);
    threads = d[0];
    quantMath = d[1] == 1 ? QuantMath.F32 : QuantMath.INT8;
    pinThreads = d[2] != 0;
    hugePages = d[3] != 0;
  }
}
