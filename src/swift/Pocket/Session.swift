import CPocket
import Foundation

/// The element type of the KV cache.
public enum KVType: Int32, Sendable {
  case f32 = 1
  case q8 = 2
  case bf16 = 3
  case f16 = 4
}

/// A session's memory settings. `nil` fields keep the library's defaults
/// (a 300 MiB budget for everything the session holds, weights included;
/// failing at the budget).
public struct SessionOptions: Sendable {
  public var kvType: KVType?
  /// 0: unlimited.
  public var budgetBytes: UInt64?
  /// At the budget, keep the first `sinkTokens` and the newest tokens,
  /// dropping the oldest in between, instead of failing.
  public var slideAtBudget: Bool?
  public var sinkTokens: Int32?

  public init(kvType: KVType? = nil, budgetBytes: UInt64? = nil, slideAtBudget: Bool? = nil,
              sinkTokens: Int32? = nil) {
    self.kvType = kvType
    self.budgetBytes = budgetBytes
    self.slideAtBudget = slideAtBudget
    self.sinkTokens = sinkTokens
  }
}

public struct ChatMessage: Sendable {
  /// "system", "user", "assistant" or (Qwen3's template) "tool": a tool's
  /// result, `content` the text the tool returned.
  public var role: String
  public var content: String

  public init(role: String, content: String) {
    self.role = role
    self.content = content
  }
  public static func system(_ content: String) -> ChatMessage {
    ChatMessage(role: "system", content: content)
  }
  public static func user(_ content: String) -> ChatMessage {
    ChatMessage(role: "user", content: content)
  }
  public static func assistant(_ content: String) -> ChatMessage {
    ChatMessage(role: "assistant", content: content)
  }
  public static func tool(_ content: String) -> ChatMessage {
    ChatMessage(role: "tool", content: content)
  }
}

/// Why a generation ended.
public enum StopReason: Int32, Sendable {
  case eos = 0
  case length = 1
  case stopString = 2
  case cancelled = 3
  case budget = 4
  case error = 5
}

/// What a generate or chat call did, filled however it ended.
public struct Generation: Sendable {
  public var promptTokens: Int
  public var generatedTokens: Int
  public var stopReason: StopReason
  public var prefillSeconds: Double
  public var decodeSeconds: Double
  /// The complete tool calls of a chat reply with tools, in order.
  public var toolCalls: [ToolCall]

  init(_ raw: pocket_generation) {
    promptTokens = Int(raw.n_prompt_tokens)
    generatedTokens = Int(raw.n_generated)
    stopReason = StopReason(rawValue: Int32(raw.stop_reason.rawValue)) ?? .error
    prefillSeconds = raw.prefill_seconds
    decodeSeconds = raw.decode_seconds
    // The C strings belong to the session until its next call: copied here.
    toolCalls = (0..<raw.n_tool_calls).map {
      ToolCall(name: String(cString: raw.tool_calls[$0].name),
               arguments: String(cString: raw.tool_calls[$0].arguments))
    }
  }
}

/// One conversation: its tokens and KV cache, inside a memory budget.
///
/// A session takes one call at a time; a call made while another runs throws
/// `PocketError` with status `.busy`. `generate` and `chat` stream text from
/// a thread of their own; cancelling the consuming task (or `cancel()`)
/// stops them after the current token and ends the stream without an error
/// (`lastGeneration?.stopReason` is then `.cancelled`), and the session
/// keeps every token generated so far.
public final class Session: @unchecked Sendable {
  let handle: OpaquePointer
  private let lock = NSLock()
  private var last: Generation?
  private var current: Model

  /// The model the session runs on (`move(to:)` changes it); the session
  /// keeps it alive.
  public var model: Model {
    lock.lock()
    defer { lock.unlock() }
    return current
  }

  init(model: Model, options: SessionOptions) throws {
    var raw = pocket_session_options()
    pocket_session_options_init(&raw)
    if let kv = options.kvType { raw.kv_type = kv.rawValue }
    if let budget = options.budgetBytes { raw.budget_bytes = budget }
    if let slide = options.slideAtBudget { raw.kv_policy = slide ? 1 : 0 }
    if let sink = options.sinkTokens { raw.sink_tokens = sink }
    var session: OpaquePointer?
    try PocketError.check(pocket_session_new(model.handle, &raw, &session))
    guard let session else {
      throw PocketError(status: .internal, message: "pocket_session_new returned no session")
    }
    current = model
    handle = session
  }

  deinit { pocket_session_free(handle) }

  /// Tokens held (-1 while another call runs).
  public var position: Int { Int(pocket_session_position(handle)) }

  /// What the last finished generate or chat call did.
  public var lastGeneration: Generation? {
    lock.lock()
    defer { lock.unlock() }
    return last
  }

  /// Stops the generate or chat call in progress after its current token;
  /// does nothing when none runs. Safe from any thread.
  public func cancel() { _ = pocket_session_cancel(handle) }

  /// How much memory `trim` gives back.
  public enum TrimLevel: Sendable {
    /// The activation buffers and KV pages past the position.
    case scratch
    /// Also the KV cache, written to `file` (in the app's cache folder) and
    /// restored exactly by the next call that needs it.
    case suspend(file: String)
  }

  /// Answers a memory warning (or the app going to the background) without
  /// losing the conversation. Throws `.busy` while a generation runs:
  /// cancel it first.
  public func trim(_ level: TrimLevel) throws {
    switch level {
    case .scratch:
      try PocketError.check(pocket_session_trim(handle, POCKET_TRIM_SCRATCH, nil))
    case .suspend(let file):
      try PocketError.check(pocket_session_trim(handle, POCKET_TRIM_SUSPEND, file))
    }
  }

  /// Moves the conversation to `target`, the same model file loaded with
  /// another backend (`pocket_session_move`): the KV cache goes from one
  /// backend to the other, the tokens and chat stay, and the next call runs
  /// on `target` (e.g. off the GPU while the app is in the background, and
  /// back). Throws `.invalidArgument` for a model of another file or a KV
  /// type `target`'s backend does not store, `.budgetExceeded` when the
  /// tokens do not fit the budget there, `.busy` while a generation runs;
  /// the session then stays on its model, unchanged.
  public func move(to target: Model) throws {
    try PocketError.check(pocket_session_move(handle, target.handle))
    lock.lock()
    current = target
    lock.unlock()
  }

  /// Forgets the conversation.
  public func reset() throws { try PocketError.check(pocket_session_reset(handle)) }

  /// Appends `tokens` and returns the next-token logits of the last one.
  public func eval(_ tokens: [Int32]) throws -> [Float] {
    var logits = [Float](repeating: 0, count: model.vocabSize)
    try PocketError.check(pocket_session_eval(handle, tokens, tokens.count, &logits))
    return logits
  }

  /// The tokens and KV cache to a file, and back (same model and KV type).
  public func save(to path: String) throws {
    try PocketError.check(pocket_session_save(handle, path))
  }
  public func load(from path: String) throws {
    try PocketError.check(pocket_session_load(handle, path))
  }

  /// Continues the session with `prompt` and streams the generated text.
  public func generate(_ prompt: String, sampling: Sampling = Sampling())
    -> AsyncThrowingStream<String, Error>
  {
    stream { session, callback, user, result in
      sampling.withRaw { raw in pocket_generate(session, prompt, raw, callback, user, result) }
    }
  }

  /// Adds `messages` (the new turn: earlier turns stay in the session) and
  /// streams the assistant's reply. `thinking`: Qwen3's thinking switch.
  /// `tools` (Qwen3's template; pass the same ones on every turn): the
  /// template lists them and the reply is constrained to `toolChoice`; its
  /// calls are in `lastGeneration?.toolCalls` once the stream ends, and each
  /// result goes back as a `.tool` message. Tools on another template throw
  /// `.unsupported`.
  public func chat(
    _ messages: [ChatMessage], thinking: Bool = true, tools: [Tool] = [],
    toolChoice: ToolChoice = .auto, sampling: Sampling = Sampling()
  ) -> AsyncThrowingStream<String, Error>
  {
    stream { session, callback, user, result in
      withCStrings(messages.map(\.role)) { roles in
        withCStrings(messages.map(\.content)) { contents in
          let raw = (0..<messages.count).map {
            pocket_message(role: roles[$0], content: contents[$0])
          }
          return sampling.withRaw(tools: tools, choice: toolChoice) { s in
            pocket_chat(session, raw, raw.count, thinking ? 1 : 0, s, callback, user, result)
          }
        }
      }
    }
  }

  private typealias Call = (
    OpaquePointer, pocket_text_fn, UnsafeMutableRawPointer, UnsafeMutablePointer<pocket_generation>
  ) -> pocket_status

  /// Runs `call` on a thread of its own (it blocks for the whole generation)
  /// and streams its pieces through a PieceQueue. The thread holds the
  /// session until the call returns; a reader that stops cancels the call.
  private func stream(_ call: @escaping Call) -> AsyncThrowingStream<String, Error> {
    let queue = PieceQueue(onStop: { [weak self] in self?.cancel() })
    let thread = Thread { [self] in
      var result = pocket_generation()
      pocket_generation_init(&result)
      let user = Unmanaged.passUnretained(queue).toOpaque()
      let code = call(handle, { text, length, _, user in
        let queue = Unmanaged<PieceQueue>.fromOpaque(user!).takeUnretainedValue()
        let bytes = UnsafeRawBufferPointer(start: text, count: length)
        return queue.push(String(decoding: bytes, as: UTF8.self)) ? 0 : 1
      }, user, &result)
      // The message is this thread's: read it before anything else fails.
      let message = String(cString: pocket_last_error())
      lock.lock()
      last = Generation(result)
      lock.unlock()
      // A cancelled call ends its stream normally: lastGeneration says so.
      let failed = code != POCKET_OK && code != POCKET_CANCELLED
      queue.finish(throwing: failed ? PocketError(status: Status(code), message: message) : nil)
    }
    // Generation runs the whole model on this thread's stack.
    thread.stackSize = 8 << 20
    thread.start()
    let reader = PieceReader(queue)
    return AsyncThrowingStream(unfolding: { try await reader.queue.next() })
  }
}
