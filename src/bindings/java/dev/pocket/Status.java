package dev.pocket;

/** The status of a failed call: pocket_status in include/pocket/pocket.h, value for value. */
public enum Status {
  OK,
  /** The caller passed something wrong. */
  INVALID_ARGUMENT,
  /** A file, tensor or key does not exist. */
  NOT_FOUND,
  /** The OS refused a read, write or map. */
  IO_ERROR,
  /** A file failed validation, or its model computed NaN. */
  CORRUPT_FILE,
  /** Valid, but this build cannot handle it. */
  UNSUPPORTED,
  /** The session's memory budget would be exceeded. */
  BUDGET_EXCEEDED,
  /** The generation was cancelled. */
  CANCELLED,
  /** For example a prompt longer than the context. */
  OUT_OF_RANGE,
  /** A bug in Pocket: please report it. */
  INTERNAL,
  /** The session is in another call (from another thread, or from its own callback). */
  BUSY;

  /** The enum for a pocket_status value; codes this version does not know are INTERNAL. */
  static Status of(int code) {
    Status[] all = values();
    return code >= 0 && code < all.length ? all[code] : INTERNAL;
  }
}
