package dev.pocket;

/** A complete tool call of a chat reply. */
public final class ToolCall {
  /** One of the tools' names. */
  public final String name;
  /** The arguments object as compact JSON text, valid under the tool's parameters. */
  public final String arguments;

  ToolCall(String name, String arguments) {
    this.name = name;
    this.arguments = arguments;
  }

  @Override
  public String toString() {
    return name + arguments;
  }
}
