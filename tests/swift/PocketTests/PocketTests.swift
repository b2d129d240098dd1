// The Swift package on the bundled stories260K model (f32), against the
// greedy continuation llama2.c's run.c prints (tests/data/stories260K-golden.txt),
// the same golden the C and C++ API tests check.
import Foundation
import XCTest

@testable import Pocket

final class PocketTests: XCTestCase {
  static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path
  /// ctest passes the model its fixture converted; by hand, the one
  /// tools/setup.sh converts.
  static let modelPath =
    ProcessInfo.processInfo.environment["POCKET_TEST_MODEL"] ?? root + "/build/stories260K.pocket"
  static let golden =
    ", there was a little girl named Lily. She loved to play outside in the park. One day, "
    + "she saw a big, red ball. She wanted to play with it, but it was too high.\n"

  func loadModel() throws -> Model {
    try Model(path: Self.modelPath, options: ModelOptions(threads: 1))
  }

  static func greedy(_ n: Int32) -> Sampling {
    var sampling = Sampling()
    sampling.maxNewTokens = n
    return sampling
  }

  /// A tiny synthetic Qwen3 with the real tokenizer and chat template,
  /// written by the `pocket` CLI (ctest names it in POCKET_CLI) to a
  /// temporary file the caller removes.
  func synthesizeTinyQwen3(named name: String) throws -> String {
    let cli = try XCTUnwrap(ProcessInfo.processInfo.environment["POCKET_CLI"],
                            "run through ctest, which sets POCKET_CLI")
    let path = NSTemporaryDirectory() + "/swift-\(name)-\(getpid()).pocket"
    let synth = Process()
    synth.executableURL = URL(fileURLWithPath: cli)
    synth.arguments = ["synth", "--preset", "tiny-qwen3", "--quant", "f32", "-o", path]
    try synth.run()
    synth.waitUntilExit()
    XCTAssertEqual(synth.terminationStatus, 0)
    return path
  }

  func collect(_ stream: AsyncThrowingStream<String, Error>) async throws -> [String] {
    var pieces: [String] = []
    for try await piece in stream { pieces.append(piece) }
    return pieces
  }

  func testVersionIsMajorMinorPatch() {
    XCTAssertEqual(pocketVersion.split(separator: ".").count, 3, pocketVersion)
  }

  func testGreedyGenerationStreamsTheGoldenText() async throws {
    let model = try loadModel()
    XCTAssertEqual(model.architecture, "llama")
    XCTAssertEqual(model.vocabSize, 512)
    let session = try model.makeSession()
    let pieces = try await collect(session.generate("Once upon a time", sampling: Self.greedy(60)))
    XCTAssertGreaterThan(pieces.count, 10)
    XCTAssertTrue(pieces.joined().hasPrefix(Self.golden), pieces.joined())
    let last = try XCTUnwrap(session.lastGeneration)
    XCTAssertEqual(last.generatedTokens, 60)
    XCTAssertEqual(last.promptTokens, 5)  // BOS and the 4 ids of "Once upon a time"
    XCTAssertEqual(last.stopReason, .length)
  }

  /// Speculation, on by default (.auto), off, and prompt lookup with a
  /// lookup text and a short draft, all stream llama2.c's text.
  func testSpeculationKeepsTheGoldenText() async throws {
    let model = try loadModel()
    XCTAssertEqual(Sampling().speculation, .auto)
    var lookup = Self.greedy(60)
    lookup.speculation = .promptLookup
    lookup.maxDraft = 3
    lookup.lookupText = "she saw a big, red ball. She wanted to play with it"
    lookup.stopStrings = ["no such text"]
    var off = Self.greedy(60)
    off.speculation = .off
    for sampling in [Self.greedy(60), off, lookup] {
      let session = try model.makeSession()
      let text = try await collect(session.generate("Once upon a time", sampling: sampling))
        .joined()
      XCTAssertTrue(text.hasPrefix(Self.golden), "\(sampling.speculation): \(text)")
    }
  }

  func testTokenizeAndDetokenizeRoundTrip() throws {
    let model = try loadModel()
    let ids = try model.tokenize("Once upon a time")
    XCTAssertEqual(ids, [403, 407, 261, 378])  // sentencepiece's ids (tok512-golden.jsonl)
    XCTAssertEqual(try model.detokenize(ids), "Once upon a time")
  }

  func testCancellingTheConsumingTaskStopsTheGeneration() async throws {
    let model = try loadModel()
    let session = try model.makeSession()
    let task = Task { () -> Int in
      var count = 0
      for try await _ in session.generate("Once upon a time", sampling: Self.greedy(400)) {
        count += 1
        if count == 5 { withUnsafeCurrentTask { $0?.cancel() } }
      }
      return count
    }
    let count = try await task.value
    XCTAssertEqual(count, 5)
    // The generation's thread records its result after the stream ended.
    for _ in 0..<10_000 where session.lastGeneration == nil {
      try await Task.sleep(nanoseconds: 1_000_000)
    }
    XCTAssertEqual(session.lastGeneration?.stopReason, .cancelled)
    // The generation waits for its reader beyond the queue's capacity.
    let generated = try XCTUnwrap(session.lastGeneration?.generatedTokens)
    XCTAssertLessThanOrEqual(generated, 5 + PieceQueue.capacity + 1)
  }

  func testBreakingOutOfTheLoopStopsTheGeneration() async throws {
    let model = try loadModel()
    let session = try model.makeSession()
    var count = 0
    for try await _ in session.generate("Once upon a time", sampling: Self.greedy(400)) {
      count += 1
      if count == 3 { break }
    }
    for _ in 0..<10_000 where session.lastGeneration == nil {
      try await Task.sleep(nanoseconds: 1_000_000)
    }
    XCTAssertEqual(session.lastGeneration?.stopReason, .cancelled)
    XCTAssertLessThanOrEqual(try XCTUnwrap(session.lastGeneration?.generatedTokens),
                             3 + PieceQueue.capacity + 1)
  }

  func testBadPathThrowsNotFoundWithTheMessage() {
    XCTAssertThrowsError(try Model(path: "/nonexistent/model.pocket")) { error in
      let pocket = error as? PocketError
      XCTAssertEqual(pocket?.status, .notFound)
      XCTAssertTrue(pocket?.message.contains("/nonexistent/model.pocket") ?? false, "\(error)")
    }
  }

  func testBudgetTooSmallForTheWeightsThrowsBudgetExceeded() throws {
    let model = try loadModel()
    XCTAssertThrowsError(try model.makeSession(options: SessionOptions(budgetBytes: 1024))) { error in
      XCTAssertEqual((error as? PocketError)?.status, .budgetExceeded, "\(error)")
    }
  }

  func testGenerationPastTheBudgetThrowsAndKeepsWhatItMade() async throws {
    let model = try loadModel()
    // Weights and buffers fit, and some hundred tokens of KV cache.
    let options = SessionOptions(budgetBytes: 3_670_016)
    let session = try model.makeSession(options: options)
    var sampling = Self.greedy(500)
    sampling.ignoreEOS = true
    var pieces = 0
    do {
      for try await _ in session.generate("Once upon a time", sampling: sampling) { pieces += 1 }
      XCTFail("the generation fit a budget meant to be too small")
    } catch let error as PocketError {
      XCTAssertEqual(error.status, .budgetExceeded, error.message)
    }
    XCTAssertGreaterThan(pieces, 0)
    XCTAssertEqual(session.lastGeneration?.stopReason, .budget)
  }

  /// A chat turn on a tiny synthetic Qwen3 prefills exactly the tokens of the
  /// rendering Jinja2 gives for it (chat-template-golden.jsonl,
  /// "single_user_genprompt_nothink").
  func testChatTurnPrefillsTheTemplatesRendering() async throws {
    let path = try synthesizeTinyQwen3(named: "chat")
    defer { try? FileManager.default.removeItem(atPath: path) }
    let model = try Model(path: path, options: ModelOptions(threads: 1))
    let session = try model.makeSession()
    var sampling = Self.greedy(4)
    sampling.ignoreEOS = true
    let pieces = try await collect(session.chat([.user("hi")], thinking: false, sampling: sampling))
    let golden = "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
    XCTAssertEqual(session.lastGeneration?.promptTokens, try model.tokenize(golden).count)
    XCTAssertEqual(session.lastGeneration?.generatedTokens, 4)
    XCTAssertLessThanOrEqual(pieces.count, 4)
  }

  /// After a suspend (the KV cache written out and freed) the conversation
  /// continues with the text of a session that never stopped.
  func testSuspendedSessionContinuesTheConversation() async throws {
    let model = try loadModel()
    var sampling = Self.greedy(20)
    sampling.ignoreEOS = true
    let whole = try model.makeSession(options: SessionOptions(kvType: .f32))
    var expected = try await collect(whole.generate("Once upon a time", sampling: sampling))
    expected += try await collect(whole.generate(" and", sampling: sampling))

    let session = try model.makeSession(options: SessionOptions(kvType: .f32))
    var got = try await collect(session.generate("Once upon a time", sampling: sampling))
    let file = NSTemporaryDirectory() + "/swift-suspend-\(getpid()).state"
    try session.trim(.suspend(file: file))
    XCTAssertTrue(FileManager.default.fileExists(atPath: file))
    got += try await collect(session.generate(" and", sampling: sampling))
    XCTAssertEqual(got.joined(), expected.joined())
    XCTAssertFalse(FileManager.default.fileExists(atPath: file))
    try session.trim(.scratch)
  }

  /// With f32 weights, an f32 cache and f32 maths the cpu and reference
  /// backends compute the same numbers: a conversation moved cpu ->
  /// reference -> cpu goes on with the text of one that never moved, and a
  /// model of another file is refused with the session left where it was.
  func testMovedSessionContinuesTheConversation() async throws {
    let cpu = try Model(path: Self.modelPath, options: ModelOptions(threads: 1, f32Math: true))
    let reference = try Model(
      path: Self.modelPath, options: ModelOptions(threads: 1, backend: "reference", f32Math: true))
    var sampling = Self.greedy(15)
    sampling.ignoreEOS = true
    let still = try cpu.makeSession(options: SessionOptions(kvType: .f32))
    var expected = try await collect(still.generate("Once upon a time", sampling: sampling))
    expected += try await collect(still.generate(" and", sampling: sampling))
    expected += try await collect(still.generate(" then", sampling: sampling))

    let session = try cpu.makeSession(options: SessionOptions(kvType: .f32))
    var got = try await collect(session.generate("Once upon a time", sampling: sampling))
    try session.move(to: reference)
    XCTAssertTrue(session.model === reference)
    got += try await collect(session.generate(" and", sampling: sampling))
    try session.move(to: cpu)
    got += try await collect(session.generate(" then", sampling: sampling))
    XCTAssertEqual(got.joined(), expected.joined())

    let other = try Model(
      path: Self.root + "/tests/data/gguf-py/stories260K-q8_0.gguf",
      options: ModelOptions(threads: 1))
    do {
      try session.move(to: other)
      XCTFail("moved to a model of another file")
    } catch let error as PocketError {
      XCTAssertEqual(error.status, .invalidArgument, error.message)
      XCTAssertTrue(error.message.contains("same model file"), error.message)
    }
    XCTAssertTrue(session.model === cpu)
  }

  func testSecondCallWhileOneRunsIsBusy() async throws {
    let model = try loadModel()
    let session = try model.makeSession()
    var sampling = Self.greedy(400)
    sampling.ignoreEOS = true
    let first = session.generate("Once upon a time", sampling: sampling)
    var iterator = first.makeAsyncIterator()
    _ = try await iterator.next()  // the first call is running now
    do {
      for try await _ in session.generate("Hello", sampling: Self.greedy(5)) {}
      XCTFail("a second call ran beside the first")
    } catch let error as PocketError {
      XCTAssertEqual(error.status, .busy, error.message)
    }
    session.cancel()
    while try await iterator.next() != nil {}
    for _ in 0..<10_000 where session.lastGeneration == nil {
      try await Task.sleep(nanoseconds: 1_000_000)
    }
    XCTAssertEqual(session.lastGeneration?.stopReason, .cancelled)
  }
}
