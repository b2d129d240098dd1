package dev.pocket;

/**
 * Receives each piece of generated text, whole characters, on the thread that called generate or
 * chat. Return true to go on, false to stop after this token (StopReason.CANCELLED). In Kotlin:
 * {@code session.generate(prompt, sampling) { piece -> show(piece); true }}.
 *
 * <p>An exception thrown here stops the generation, and generate or chat rethrows it once the
 * native call has returned; the session keeps the tokens generated so far.
 */
@FunctionalInterface
public interface TextCallback {
  boolean onText(String piece);
}
