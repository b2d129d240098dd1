package dev.pocket.tests;

import static dev.pocket.tests.PocketTests.check;
import static dev.pocket.tests.PocketTests.checkEquals;
import static dev.pocket.tests.PocketTests.expectPocket;
import static dev.pocket.tests.PocketTests.greedy;
import static dev.pocket.tests.PocketTests.load;

import dev.pocket.Generation;
import dev.pocket.Message;
import dev.pocket.Model;
import dev.pocket.ModelOptions;
import dev.pocket.Sampling;
import dev.pocket.Session;
import dev.pocket.Status;
import dev.pocket.StopReason;
import dev.pocket.Tool;
import dev.pocket.ToolCall;
import dev.pocket.ToolChoice;
import java.io.File;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;

/**
 * Tool calling through the Java API: on a tiny synthetic Qwen3 (the real tokenizer and chat
 * template, written by the `pocket` CLI that ctest names in -Ddev.pocket.cli) every call of a
 * reply with tools required names a tool and has a JSON object for arguments, and a tool's result
 * goes back as a tool message; on stories260K (not the qwen3 template) tools and tool messages are
 * UNSUPPORTED.
 */
final class ToolCallTests {
  private ToolCallTests() {}

  private static final List<Tool> TOOLS = Arrays.asList(
      new Tool("get_weather", "Weather forecast.",
          "{\"type\": \"object\", \"properties\": {\"city\": {\"type\": \"string\", "
              + "\"maxLength\": 10}, \"days\": {\"type\": \"integer\", \"minimum\": 1, "
              + "\"maximum\": 7}}, \"required\": [\"city\", \"days\"], "
              + "\"additionalProperties\": false}"),
      new Tool("now"));

  private static File synthesizeTinyQwen3() throws Exception {
    String cli = System.getProperty("dev.pocket.cli");
    check(cli != null, "run through ctest, which sets -Ddev.pocket.cli");
    File file = File.createTempFile("java-tools-", ".pocket");
    Process synth = new ProcessBuilder(cli, "synth", "--preset", "tiny-qwen3", "--quant", "f32",
        "-o", file.getPath()).inheritIO().start();
    checkEquals(0, synth.waitFor(), "pocket synth's exit status");
    return file;
  }

  public static void testRequiredToolCallsNameAToolWithJsonArguments() throws Exception {
    File file = synthesizeTinyQwen3();
    ModelOptions options = new ModelOptions();
    options.threads = 1;
    try (Model model = Model.load(file.getPath(), options); Session session = model.newSession()) {
      int calls = 0;
      for (long seed = 0; seed < 4; ++seed) {
        Sampling sampling = Sampling.greedy(150);
        sampling.temperature = 1;
        sampling.seed = seed;
        Generation g = session.chat(Collections.singletonList(Message.user("Weather in Oslo?")),
            false, TOOLS, ToolChoice.REQUIRED, sampling, null);
        if (g.stopReason == StopReason.EOS) check(!g.toolCalls.isEmpty(), g.text);
        for (ToolCall call : g.toolCalls) {
          check(TOOLS.stream().anyMatch(t -> t.name.equals(call.name)), "a tool's name: " + call);
          check(JsonCheck.isObject(call.arguments), "a JSON object: " + call.arguments);
          ++calls;
        }
        // The tool's result goes back as a tool message; a reply without tools has no calls.
        Generation next = session.chat(Collections.singletonList(Message.tool("{\"temp\": 3}")),
            false, Sampling.greedy(4), null);
        checkEquals(Collections.emptyList(), next.toolCalls, "calls of a reply without tools");
        session.reset();
      }
      check(calls > 0, "no tool call in 4 replies");
    } finally {
      check(file.delete(), "deleted " + file);
    }
  }

  public static void testToolsOnAnotherTemplateAreUnsupported() {
    try (Model model = load(); Session session = model.newSession()) {
      expectPocket(Status.UNSUPPORTED, "qwen3 template",
          () -> session.chat(Collections.singletonList(Message.user("hi")), false, TOOLS,
              ToolChoice.AUTO, greedy(4), null));
      expectPocket(Status.UNSUPPORTED, "qwen3 template",
          () -> session.chat(Collections.singletonList(Message.tool("3")), false, greedy(4), null));
      expectPocket(Status.INVALID_ARGUMENT, "tools is null",
          () -> session.chat(Collections.singletonList(Message.user("hi")), false, null,
              ToolChoice.AUTO, greedy(4), null));
      expectPocket(Status.INVALID_ARGUMENT, "tool 0's name is null",
          () -> session.chat(Collections.singletonList(Message.user("hi")), false,
              Collections.singletonList(new Tool(null)), ToolChoice.AUTO, greedy(4), null));
      checkEquals(0, session.position(), "failed calls change nothing");
    }
  }
}
