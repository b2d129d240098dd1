import CPocket

/// The status of a failed call, as `pocket_status` names it.
public enum Status: Int32, Sendable {
  case ok = 0
  case invalidArgument = 1
  case notFound = 2
  case ioError = 3
  case corruptFile = 4
  case unsupported = 5
  case budgetExceeded = 6
  case cancelled = 7
  case outOfRange = 8
  case `internal` = 9
  case busy = 10
  /// A code this version of the package does not know (a newer library).
  case unknown = -1

  init(_ raw: pocket_status) { self = Status(rawValue: Int32(raw.rawValue)) ?? .unknown }
}

/// What a failed Pocket call throws: its status and the library's message,
/// which says what is wrong and what to do.
public struct PocketError: Error, CustomStringConvertible, Sendable {
  public let status: Status
  public let message: String

  public var description: String { "\(status): \(message)" }

  /// Throws when `code` is not POCKET_OK, with this thread's last error
  /// message (the C API keeps it per thread).
  static func check(_ code: pocket_status) throws {
    if code == POCKET_OK { return }
    throw PocketError(status: Status(code), message: String(cString: pocket_last_error()))
  }
}

/// The library's version, "MAJOR.MINOR.PATCH".
public var pocketVersion: String { String(cString: pocket_version()) }
