package dev.pocket;

import java.util.function.LongConsumer;

/**
 * A native pointer shared by the calls that use it. close() marks it closed at once (new calls
 * throw IllegalStateException) but frees it only when the last call using it has returned, so a
 * close() from another thread, or from a streaming callback, never frees memory under a running
 * call, and never waits for one either (a close() from the callback would wait forever).
 */
final class Handle {
  private final String what;
  private final LongConsumer free;
  private long ptr;
  private int users;
  private boolean closed;

  Handle(String what, long ptr, LongConsumer free) {
    this.what = what;
    this.ptr = ptr;
    this.free = free;
  }

  /** The pointer, held until release(); IllegalStateException when closed. */
  synchronized long acquire() {
    if (closed) throw new IllegalStateException(what + " is closed");
    ++users;
    return ptr;
  }

  /** The pointer, held until release(); 0 (and nothing held) when closed. */
  synchronized long acquireIfOpen() {
    if (closed) return 0;
    ++users;
    return ptr;
  }

  synchronized void checkOpen() {
    if (closed) throw new IllegalStateException(what + " is closed");
  }

  void release() {
    long dead = 0;
    synchronized (this) {
      if (--users == 0 && closed) {
        dead = ptr;
        ptr = 0;
      }
    }
    if (dead != 0) free.accept(dead);
  }

  /**
   * Marks the handle closed; frees it now when no call uses it, else runs whileInUse (e.g. a
   * cancel) on the still-valid pointer and leaves the free to the last call's release().
   */
  void close(LongConsumer whileInUse) {
    long dead = 0;
    long busy = 0;
    synchronized (this) {
      if (closed) return;
      closed = true;
      if (users == 0) {
        dead = ptr;
        ptr = 0;
      } else {
        ++users;
        busy = ptr;
      }
    }
    if (dead != 0) free.accept(dead);
    if (busy != 0) {
      try {
        if (whileInUse != null) whileInUse.accept(busy);
      } finally {
        release();
      }
    }
  }
}
