package dev.pocket;

/**
 * How to create a session (pocket_session_options). A new instance holds the C library's defaults
 * (pocket_session_options_init): default KV type, a 300 MiB budget, fail at the budget.
 */
public final class SessionOptions {
  /** The KV cache's element type (pocket.h: kv_type). */
  public enum KvType {
    /** bf16 where the CPU multiplies attention in bf16, f16 elsewhere. */
    DEFAULT,
    F32,
    /** int8 plus a scale per head: about twice the tokens of f16 in the same memory. */
    Q8,
    BF16,
    F16
  }

  /** What happens when the KV cache reaches the budget (pocket.h: kv_policy). */
  public enum KvPolicy {
    /** Fail with BUDGET_EXCEEDED. */
    ERROR,
    /** Keep the first sinkTokens tokens and the newest ones, dropping the oldest in between. */
    SLIDE
  }

  public KvType kvType;
  /** Everything the session holds, weights included; 0 = unlimited. */
  public long budgetBytes;
  public KvPolicy kvPolicy;
  /** SLIDE: tokens at the start that are never dropped. */
  public int sinkTokens;

  public SessionOptions() {
    long[] d = new long[4];
    Native.sessionDefaults(d);
    kvType = KvType.values()[(int) d[0]];
    budgetBytes = d[1];
    kvPolicy = d[2] == 1 ? KvPolicy.SLIDE : KvPolicy.ERROR;
    sinkTokens = (int) d[3];
  }
}
