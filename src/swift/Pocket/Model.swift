import CPocket

/// How a model is loaded. `nil` fields keep the library's defaults.
public struct ModelOptions: Sendable {
  /// Compute threads (0: one per fast physical core).
  public var threads: Int32?
  /// "cpu" (the default), or another backend this build has.
  public var backend: String?
  /// f32 maths for q4/q8 weights instead of int8 activations (slower, the
  /// reference-accurate path).
  public var f32Math: Bool?

  public init(threads: Int32? = nil, backend: String? = nil, f32Math: Bool? = nil) {
    self.threads = threads
    self.backend = backend
    self.f32Math = f32Math
  }
}

/// A loaded, memory-mapped `.pocket` model. Sessions keep their model alive.
/// Thread-safe: sessions on one model may run on different threads.
public final class Model: @unchecked Sendable {
  let handle: OpaquePointer

  public init(path: String, options: ModelOptions = ModelOptions()) throws {
    var raw = pocket_model_options()
    pocket_model_options_init(&raw)
    if let threads = options.threads { raw.threads = threads }
    if let f32 = options.f32Math {
      raw.quant_math = f32 ? POCKET_QUANT_MATH_F32 : POCKET_QUANT_MATH_INT8
    }
    var model: OpaquePointer?
    let code = (options.backend ?? "cpu").withCString { backend -> pocket_status in
      raw.backend = backend
      return pocket_model_load(path, &raw, &model)
    }
    try PocketError.check(code)
    guard let model else {
      throw PocketError(status: .internal, message: "pocket_model_load returned no model")
    }
    handle = model
  }

  deinit { pocket_model_free(handle) }

  public var vocabSize: Int { Int(pocket_model_vocab_size(handle)) }
  public var contextLength: Int { Int(pocket_model_context_length(handle)) }
  /// "qwen3", "qwen2" or "llama".
  public var architecture: String { String(cString: pocket_model_architecture(handle)) }

  /// Token ids of `text` (special tokens parsed, no BOS added).
  public func tokenize(_ text: String) throws -> [Int32] {
    var utf8 = Array(text.utf8)
    var ids = [Int32](repeating: 0, count: utf8.count + 16)
    var n = 0
    var code = pocket_tokenize(handle, &utf8, utf8.count, &ids, ids.count, &n)
    if code == POCKET_OUT_OF_RANGE {
      ids = [Int32](repeating: 0, count: n)
      code = pocket_tokenize(handle, &utf8, utf8.count, &ids, ids.count, &n)
    }
    try PocketError.check(code)
    return Array(ids.prefix(n))
  }

  /// The text of `ids`.
  public func detokenize(_ ids: [Int32]) throws -> String {
    var buffer = [CChar](repeating: 0, count: ids.count * 8 + 16)
    var n = 0
    var code = pocket_detokenize(handle, ids, ids.count, &buffer, buffer.count, &n)
    if code == POCKET_OUT_OF_RANGE {
      buffer = [CChar](repeating: 0, count: n + 1)
      code = pocket_detokenize(handle, ids, ids.count, &buffer, buffer.count, &n)
    }
    try PocketError.check(code)
    return String(decoding: buffer.prefix(n).map { UInt8(bitPattern: $0) }, as: UTF8.self)
  }

  /// A new conversation on this model, inside its own memory budget.
  public func makeSession(options: SessionOptions = SessionOptions()) throws -> Session {
    try Session(model: self, options: options)
  }
}
