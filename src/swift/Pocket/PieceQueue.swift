import Foundation

/// The pieces of text between a generation's thread and the task reading
/// them. It holds at most `capacity` pieces: the generation waits for the
/// reader beyond that, so a reader that stops (cancelled, or done with the
/// stream) stops the generation within `capacity + 1` tokens, and a slow
/// reader never makes the queue grow.
final class PieceQueue: @unchecked Sendable {
  static let capacity = 8

  private let condition = NSCondition()
  private var pieces: [String] = []
  private var finished = false
  private var failure: Error?
  private var stopped = false
  private var waiting: CheckedContinuation<Void, Never>?
  private let onStop: @Sendable () -> Void

  /// `onStop` runs once when the reader stops early (it cancels the call).
  init(onStop: @escaping @Sendable () -> Void) { self.onStop = onStop }

  // MARK: the generation's thread

  /// Adds a piece, waiting while the queue is full; false when the reader
  /// has stopped and the generation should end.
  func push(_ piece: String) -> Bool {
    condition.lock()
    defer { condition.unlock() }
    while pieces.count >= Self.capacity && !stopped { condition.wait() }
    if stopped { return false }
    pieces.append(piece)
    wakeReader()
    return true
  }

  /// The call returned: the reader gets the rest, then `failure` or the end.
  func finish(throwing error: Error? = nil) {
    condition.lock()
    finished = true
    failure = error
    wakeReader()
    condition.unlock()
  }

  // MARK: the reader

  func next() async throws -> String? {
    while true {
      if Task.isCancelled {
        stop()
        return nil
      }
      switch take() {
      case .piece(let piece): return piece
      case .end(let error?): throw error
      case .end(nil): return nil
      case .empty:
        await withTaskCancellationHandler {
          await withCheckedContinuation { wait(with: $0) }
        } onCancel: {
          stop()
        }
      }
    }
  }

  private enum Taken {
    case piece(String)
    case end(Error?)
    case empty
  }

  private func take() -> Taken {
    condition.lock()
    defer { condition.unlock() }
    if !pieces.isEmpty {
      condition.signal()
      return .piece(pieces.removeFirst())
    }
    if finished || stopped {
      defer { failure = nil }
      return .end(failure)
    }
    return .empty
  }

  /// Resumes `continuation` once there is something to take.
  private func wait(with continuation: CheckedContinuation<Void, Never>) {
    condition.lock()
    defer { condition.unlock() }
    if pieces.isEmpty && !finished && !stopped {
      waiting = continuation
    } else {
      continuation.resume()
    }
  }

  /// The reader is gone or cancelled: the generation stops at its next piece.
  func stop() {
    condition.lock()
    let first = !stopped && !finished
    stopped = true
    condition.broadcast()
    wakeReader()
    condition.unlock()
    if first { onStop() }
  }

  /// Called with the lock held.
  private func wakeReader() {
    waiting?.resume()
    waiting = nil
  }
}

/// Stops the queue when the stream that reads it is dropped (a `break` out
/// of the loop, or a stream never read to its end).
final class PieceReader: @unchecked Sendable {
  let queue: PieceQueue
  init(_ queue: PieceQueue) { self.queue = queue }
  deinit { queue.stop() }
}
