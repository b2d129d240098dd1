package dev.pocket;

import java.util.List;

/** What a generate or chat call produced (pocket_generation, plus the text it streamed). */
public final class Generation {
  /** The text the call streamed, every piece the callback received, concatenated. */
  public final String text;
  /** Tokens prefilled by this call (BOS, when the session starts with one, included). */
  public final int promptTokens;
  /** Tokens generated. */
  public final int generatedTokens;
  public final StopReason stopReason;
  public final double prefillSeconds;
  public final double decodeSeconds;
  /** The complete tool calls of a chat reply with tools, in order (unmodifiable). */
  public final List<ToolCall> toolCalls;

  Generation(String text, int promptTokens, int generatedTokens, StopReason stopReason,
      double prefillSeconds, double decodeSeconds, List<ToolCall> toolCalls) {
    this.text = text;
    this.promptTokens = promptTokens;
    this.generatedTokens = generatedTokens;
    this.stopReason = stopReason;
    this.prefillSeconds = prefillSeconds;
    this.decodeSeconds = decodeSeconds;
    this.toolCalls = toolCalls;
  }

  @Override
  public String toString() {
    return "Generation{" + generatedTokens + " tokens, " + stopReason + ", text=\"" + text + "\"}";
  }
}
