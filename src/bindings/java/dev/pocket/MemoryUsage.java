package dev.pocket;

/** What a session holds, in bytes, by category (pocket_memory_usage). */
public final class MemoryUsage {
  /** Mapped weight pages the model reads (counted in full). */
  public final long weights;
  /** Of the mapped file, resident right now. */
  public final long weightsResident;
  /** Tokenizer, plan, the file's other sections. */
  public final long model;
  /** KV cache pages. */
  public final long kv;
  /** Activation buffers. */
  public final long scratch;
  /** Logits row and sampling candidates. */
  public final long logits;
  /** weights + model + kv + scratch + logits. */
  public final long total;
  /** The session's budget; 0 = unlimited. */
  public final long budget;
  /** Tokens the budget and the context allow. */
  public final long maxTokens;
  /** Tokens held. */
  public final long tokens;

  MemoryUsage(long[] v) {
    weights = v[0];
    weightsResident = v[1];
    model = v[2];
    kv = v[3];
    scratch = v[4];
    logits = v[5];
    total = v[6];
    budget = v[7];
    maxTokens = v[8];
    tokens = v[9];
  }
}
