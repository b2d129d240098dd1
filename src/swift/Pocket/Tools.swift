import CPocket
import Foundation

/// A tool the model may call in a chat turn (Qwen3's chat template;
/// docs/structured-output.md).
public struct Tool: Sendable {
  /// 1 to 64 of A-Z a-z 0-9 _ - .
  public var name: String
  public var description: String?
  /// A JSON Schema of the arguments; `nil`: any JSON object.
  public var parameters: String?

  public init(name: String, description: String? = nil, parameters: String? = nil) {
    self.name = name
    self.description = description
    self.parameters = parameters
  }
}

/// What the reply of a chat turn with tools may be.
public enum ToolChoice: Int32, Sendable {
  /// Free text, with any number of tool calls.
  case auto = 0
  /// One or more tool calls only.
  case required = 1
}

/// A complete tool call of a reply.
public struct ToolCall: Sendable, Equatable {
  /// One of the tools' names.
  public var name: String
  /// The arguments object as compact JSON text, valid under the tool's parameters.
  public var arguments: String

  public init(name: String, arguments: String) {
    self.name = name
    self.arguments = arguments
  }
}

extension Sampling {
  /// Calls `body` with the C struct holding `tools` and `choice` besides the
  /// sampling, every string alive for the call.
  func withRaw<R>(
    tools: [Tool], choice: ToolChoice, _ body: (UnsafePointer<pocket_sampling>) -> R
  ) -> R {
    // Three strings a tool, nil where the tool leaves one out.
    let strings: [UnsafeMutablePointer<CChar>?] = tools.flatMap {
      [strdup($0.name), $0.description.flatMap { strdup($0) }, $0.parameters.flatMap { strdup($0) }]
    }
    defer { strings.forEach { free($0) } }
    let raw = tools.indices.map {
      pocket_tool(name: strings[3 * $0], description: strings[3 * $0 + 1],
                  parameters: strings[3 * $0 + 2])
    }
    return withRaw { sampling in
      var copy = sampling.pointee
      return raw.withUnsafeBufferPointer { buffer in
        copy.tools = raw.isEmpty ? nil : buffer.baseAddress
        copy.n_tools = raw.count
        copy.tool_choice = choice.rawValue
        return body(&copy)
      }
    }
  }
}
