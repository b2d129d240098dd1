// Tool calling through the Swift package: on a tiny synthetic Qwen3 every
// call of a reply with tools required names a tool and has JSON arguments,
// and a tool's result goes back as a tool message; on stories260K (not the
// qwen3 template) tools and tool messages throw `.unsupported`.
import Foundation
import XCTest

@testable import Pocket

extension PocketTests {
  static let weatherTool = Tool(
    name: "get_weather", description: "Weather forecast.",
    parameters: """
      {"type": "object", "properties": {"city": {"type": "string", "maxLength": 10},
       "days": {"type": "integer", "minimum": 1, "maximum": 7}},
       "required": ["city", "days"], "additionalProperties": false}
      """)
  static let tools = [weatherTool, Tool(name: "now")]

  func testRequiredToolCallsNameAToolWithJSONArguments() async throws {
    let path = try synthesizeTinyQwen3(named: "tools")
    defer { try? FileManager.default.removeItem(atPath: path) }
    let model = try Model(path: path, options: ModelOptions(threads: 1))
    let session = try model.makeSession()
    var calls = 0
    for seed in UInt64(0)..<4 {
      var sampling = Self.greedy(150)
      sampling.temperature = 1
      sampling.seed = seed
      let reply = try await collect(
        session.chat([.user("Weather in Oslo?")], thinking: false, tools: Self.tools,
                     toolChoice: .required, sampling: sampling)
      ).joined()
      let last = try XCTUnwrap(session.lastGeneration)
      if last.stopReason == .eos { XCTAssertFalse(last.toolCalls.isEmpty, reply) }
      for call in last.toolCalls {
        XCTAssertTrue(Self.tools.contains { $0.name == call.name }, "\(call)")
        let arguments = try JSONSerialization.jsonObject(with: Data(call.arguments.utf8))
        XCTAssertTrue(arguments is [String: Any], call.arguments)
        calls += 1
      }
      // The tool's result goes back as a tool message; a reply without
      // tools has no calls.
      _ = try await collect(
        session.chat([.tool("{\"temp\": 3}")], thinking: false, sampling: Self.greedy(4)))
      XCTAssertEqual(session.lastGeneration?.toolCalls, [])
      try session.reset()
    }
    XCTAssertGreaterThan(calls, 0)
  }

  func testToolsOnAnotherTemplateThrowUnsupported() async throws {
    let session = try loadModel().makeSession()
    for (messages, tools) in [([ChatMessage.user("hi")], Self.tools), ([.tool("3")], [])] {
      do {
        for try await _ in session.chat(messages, tools: tools, sampling: Self.greedy(4)) {}
        XCTFail("a chat with tools ran on a template other than qwen3")
      } catch let error as PocketError {
        XCTAssertEqual(error.status, .unsupported, error.message)
        XCTAssertTrue(error.message.contains("qwen3 template"), error.message)
      }
    }
    XCTAssertEqual(session.position, 0)
  }
}
