import CPocket
import Foundation

/// Speculative decoding: tokens guessed ahead and verified in one pass over
/// the weights. The text is the same; only the number of passes changes.
public enum Speculation: Int32, Sendable {
  /// Never.
  case off = 0
  /// Prompt lookup (guesses from the session's own tokens and `lookupText`)
  /// on any backend; where a backend rounds a verifying step differently
  /// from single steps (OpenCL, Metal), a near tie can come out differently.
  case promptLookup = 1
  /// The default: prompt lookup where the backend verifies exactly (the
  /// CPU), plain decoding elsewhere.
  case auto = 3
}

/// How the next token is chosen. A new value holds the library's defaults:
/// greedy decoding with the model's default length, speculation `.auto`.
public struct Sampling: Sendable {
  public var temperature: Float
  public var topK: Int32
  public var topP: Float
  public var minP: Float
  public var repeatPenalty: Float
  public var repeatLastN: Int32
  public var frequencyPenalty: Float
  public var presencePenalty: Float
  public var seed: UInt64
  /// 0: the model's default.
  public var maxNewTokens: Int32
  public var ignoreEOS: Bool
  /// Generation ends when one is produced; it is not streamed.
  public var stopStrings: [String]
  public var speculation: Speculation
  /// Most tokens guessed per step, 1...15; 0: the library's default (8).
  public var maxDraft: Int32
  /// Text prompt lookup also searches: a document the reply quotes, a JSON
  /// skeleton, the app's UI strings.
  public var lookupText: String?

  public init() {
    var raw = pocket_sampling()
    pocket_sampling_init(&raw)
    temperature = raw.temperature
    topK = raw.top_k
    topP = raw.top_p
    minP = raw.min_p
    repeatPenalty = raw.repeat_penalty
    repeatLastN = raw.repeat_last_n
    frequencyPenalty = raw.frequency_penalty
    presencePenalty = raw.presence_penalty
    seed = raw.seed
    maxNewTokens = raw.max_new_tokens
    ignoreEOS = raw.ignore_eos != 0
    stopStrings = []
    speculation = Speculation(rawValue: raw.speculation) ?? .auto
    maxDraft = raw.max_draft
    lookupText = nil
  }

  /// Calls `body` with the C struct, its stop strings alive for the call.
  func withRaw<R>(_ body: (UnsafePointer<pocket_sampling>) -> R) -> R {
    var raw = pocket_sampling()
    pocket_sampling_init(&raw)
    raw.temperature = temperature
    raw.top_k = topK
    raw.top_p = topP
    raw.min_p = minP
    raw.repeat_penalty = repeatPenalty
    raw.repeat_last_n = repeatLastN
    raw.frequency_penalty = frequencyPenalty
    raw.presence_penalty = presencePenalty
    raw.seed = seed
    raw.max_new_tokens = maxNewTokens
    raw.ignore_eos = ignoreEOS ? 1 : 0
    raw.speculation = speculation.rawValue
    raw.max_draft = maxDraft
    // The stop strings, then the lookup text, in one allocation.
    return withCStrings(stopStrings + (lookupText.map { [$0] } ?? [])) { strings in
      raw.stop_strings = stopStrings.isEmpty ? nil : UnsafePointer(strings.baseAddress)
      raw.n_stop_strings = stopStrings.count
      raw.lookup_text = lookupText == nil ? nil : strings[stopStrings.count]
      return body(&raw)
    }
  }
}

/// Calls `body` with `strings` as C strings, freed when it returns.
func withCStrings<R>(_ strings: [String], _ body: (UnsafeBufferPointer<UnsafePointer<CChar>?>) -> R)
  -> R
{
  let copies: [UnsafeMutablePointer<CChar>?] = strings.map { strdup($0) }
  defer { copies.forEach { free($0) } }
  let pointers: [UnsafePointer<CChar>?] = copies.map { UnsafePointer($0) }
  return pointers.withUnsafeBufferPointer(body)
}
