package dev.pocket;

/** A tool the model may call in a chat turn (Qwen3's chat template; docs/structured-output.md). */
public final class Tool {
  /** 1 to 64 of A-Z a-z 0-9 _ - . */
  public final String name;
  /** null: none. */
  public final String description;
  /** A JSON Schema of the arguments; null: any JSON object. */
  public final String parameters;

  public Tool(String name, String description, String parameters) {
    this.name = name;
    this.description = description;
    this.parameters = parameters;
  }

  /** A tool without a description that takes any JSON object. */
  public Tool(String name) {
    this(name, null, null);
  }

  @Override
  public String toString() {
    return name;
  }
}
