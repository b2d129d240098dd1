package dev.pocket.tests;

import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Whether a text is one JSON value (RFC 8259), for the tool calls' arguments: the JDK has no JSON
 * parser, and the check must not share code with the engine's own.
 */
final class JsonCheck {
  private static final Pattern NUMBER =
      Pattern.compile("-?(0|[1-9][0-9]*)(\\.[0-9]+)?([eE][+-]?[0-9]+)?");

  private final String s;
  private int i;

  private JsonCheck(String s) {
    this.s = s;
  }

  /** True when text is exactly one JSON object, whitespace around it allowed. */
  static boolean isObject(String text) {
    JsonCheck p = new JsonCheck(text);
    p.space();
    if (!p.peek('{') || !p.value()) return false;
    p.space();
    return p.i == text.length();
  }

  private boolean peek(char c) {
    return i < s.length() && s.charAt(i) == c;
  }

  private boolean eat(char c) {
    space();
    if (!peek(c)) return false;
    ++i;
    return true;
  }

  private void space() {
    while (i < s.length() && " \t\n\r".indexOf(s.charAt(i)) >= 0) ++i;
  }

  private boolean value() {
    space();
    if (eat('{')) return members('}', true);
    if (eat('[')) return members(']', false);
    if (peek('"')) return string();
    for (String word : new String[] {"true", "false", "null"}) {
      if (s.startsWith(word, i)) {
        i += word.length();
        return true;
      }
    }
    return number();
  }

  // The rest of an object (keyed) or array after its opening bracket.
  private boolean members(char close, boolean keyed) {
    if (eat(close)) return true;
    do {
      space();
      if (keyed && !(string() && eat(':'))) return false;
      if (!value()) return false;
    } while (eat(','));
    return eat(close);
  }

  private boolean string() {
    if (!peek('"')) return false;
    for (++i; i < s.length(); ++i) {
      char c = s.charAt(i);
      if (c == '"') {
        ++i;
        return true;
      }
      if (c < 0x20) return false;
      if (c == '\\') {
        if (++i >= s.length()) return false;
        char e = s.charAt(i);
        if (e == 'u') {
          if (i + 4 >= s.length()) return false;
          for (int k = 1; k <= 4; ++k) {
            if (Character.digit(s.charAt(i + k), 16) < 0) return false;
          }
          i += 4;
        } else if ("\"\\/bfnrt".indexOf(e) < 0) {
          return false;
        }
      }
    }
    return false;
  }

  private boolean number() {
    Matcher m = NUMBER.matcher(s);
    m.region(i, s.length());
    if (!m.lookingAt()) return false;
    i = m.end();
    return true;
  }
}
