package dev.pocket;

/** What the reply of a chat turn with tools may be (POCKET_TOOL_CHOICE_*). */
public enum ToolChoice {
  /** Free text, with any number of tool calls. */
  AUTO(0),
  /** One or more tool calls only. */
  REQUIRED(1);

  final int code;

  ToolChoice(int code) {
    this.code = code;
  }
}
