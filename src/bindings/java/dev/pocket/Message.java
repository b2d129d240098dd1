package dev.pocket;

import java.util.Objects;

/**
 * One chat message: a role ("system", "user", "assistant" or, with Qwen3's template, "tool": a
 * tool's result, the text the tool returned) and its text.
 */
public final class Message {
  public final String role;
  public final String content;

  public Message(String role, String content) {
    this.role = role;
    this.content = content;
  }

  public static Message system(String content) {
    return new Message("system", content);
  }

  public static Message user(String content) {
    return new Message("user", content);
  }

  public static Message assistant(String content) {
    return new Message("assistant", content);
  }

  public static Message tool(String content) {
    return new Message("tool", content);
  }

  @Override
  public boolean equals(Object o) {
    if (!(o instanceof Message)) return false;
    Message m = (Message) o;
    return Objects.equals(role, m.role) && Objects.equals(content, m.content);
  }

  @Override
  public int hashCode() {
    return Objects.hash(role, content);
  }

  @Override
  public String toString() {
    return role + ": " + content;
  }
}
