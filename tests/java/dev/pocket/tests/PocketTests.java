package dev.pocket.tests;

import dev.pocket.Generation;
import dev.pocket.MemoryUsage;
import dev.pocket.Message;
import dev.pocket.Model;
import dev.pocket.ModelOptions;
import dev.pocket.PocketException;
import dev.pocket.Sampling;
import dev.pocket.Session;
import dev.pocket.SessionOptions;
import dev.pocket.Speculation;
import dev.pocket.Status;
import dev.pocket.StopReason;
import dev.pocket.TrimLevel;
import java.io.File;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The Java API on the bundled stories260K model (f32), run on the JVM through ctest. Expected
 * texts and ids come from llama2.c's run.c (tests/data/stories260K-golden.txt), the same goldens
 * the C and C++ API tests check, so the Java path is held to the reference, not to itself.
 *
 * <p>A minimal runner (no JUnit on the build machines): every public static void method named
 * test* of this class and ToolCallTests runs; the last line printed is "N passed, M failed", and the exit status is non-zero on
 * any failure.
 */
public final class PocketTests {
  private static String modelPath;

  // run.c's greedy continuation of "Once upon a time" (stories260K-golden.txt), up to the first
  // line break.
  private static final String GOLDEN =
      ", there was a little girl named Lily. She loved to play outside in the park. One day, "
          + "she saw a big, red ball. She wanted to play with it, but it was too high.\n";
  // sentencepiece's ids of "Once upon a time" and run.c's first generated id after BOS + them
  // (stories260K/golden-greedy.jsonl).
  private static final int[] PROMPT_IDS = {403, 407, 261, 378};
  private static final int FIRST_GENERATED_ID = 432;

  public static void main(String[] args) throws Exception {
    if (args.length < 1) {
      System.out.println("usage: PocketTests MODEL.pocket [TEST_NAME...]");
      System.exit(2);
    }
    modelPath = args[0];
    List<String> only = Arrays.asList(args).subList(1, args.length);
    int passed = 0;
    int failed = 0;
    List<Method> tests = new ArrayList<>();
    for (Class<?> c : new Class<?>[] {PocketTests.class, ToolCallTests.class}) {
      for (Method m : c.getDeclaredMethods()) {
        if (m.getName().startsWith("test") && Modifier.isStatic(m.getModifiers())
            && (only.isEmpty() || only.contains(m.getName()))) {
          tests.add(m);
        }
      }
    }
    tests.sort((a, b) -> a.getName().compareTo(b.getName()));
    for (Method m : tests) {
      long start = System.nanoTime();
      try {
        m.invoke(null);
        ++passed;
        System.out.printf("PASS %s (%d ms)%n", m.getName(), (System.nanoTime() - start) / 1000000);
      } catch (InvocationTargetException e) {
        ++failed;
        System.out.println("FAIL " + m.getName());
        e.getCause().printStackTrace(System.out);
      }
    }
    System.out.println(passed + " passed, " + failed + " failed");
    System.exit(failed == 0 && passed > 0 ? 0 : 1);
  }

  // ---- helpers ------------------------------------------------------------------------------

  static void check(boolean ok, String what) {
    if (!ok) throw new AssertionError(what);
  }

  static void checkEquals(Object expected, Object actual, String what) {
    if (expected == null ? actual != null : !expected.equals(actual)) {
      throw new AssertionError(what + ": expected <" + expected + "> but was <" + actual + ">");
    }
  }

  interface Body {
    void run() throws Exception;
  }

  /** Runs body, which must throw `type`; returns what it threw. */
  static <T extends Throwable> T expectThrows(Class<T> type, Body body) {
    try {
      body.run();
    } catch (Throwable t) {
      if (type.isInstance(t)) return type.cast(t);
      throw new AssertionError("expected " + type.getSimpleName() + " but got " + t, t);
    }
    throw new AssertionError("expected " + type.getSimpleName() + " but nothing was thrown");
  }

  static PocketException expectPocket(Status status, String messagePart, Body body) {
    PocketException e = expectThrows(PocketException.class, body);
    checkEquals(status, e.status(), "status of " + e.getMessage());
    check(e.getMessage().contains(messagePart),
        "message \"" + e.getMessage() + "\" should contain \"" + messagePart + "\"");
    return e;
  }

  static Model load() {
    ModelOptions options = new ModelOptions();
    options.threads = 1;
    return Model.load(modelPath, options);
  }

  static Sampling greedy(int n) {
    Sampling s = Sampling.greedy(n);
    s.ignoreEos = true;
    return s;
  }

  static void await(CountDownLatch latch) throws InterruptedException {
    check(latch.await(60, TimeUnit.SECONDS), "timed out waiting for the other thread");
  }

  // ---- generation -----------------------------------------------------------------------------

  /** The defaults are pocket.h's *_init() values. */
  public static void testDefaultsAreTheCLibrarysDefaults() {
    Sampling s = new Sampling();
    checkEquals(0.0f, s.temperature, "temperature");
    checkEquals(1.0f, s.topP, "topP");
    checkEquals(1.0f, s.repeatPenalty, "repeatPenalty");
    checkEquals(64, s.repeatLastN, "repeatLastN");
    checkEquals(0, s.maxNewTokens, "maxNewTokens");
    checkEquals(Speculation.AUTO, s.speculation, "speculation");
    checkEquals(0, s.maxDraft, "maxDraft");
    checkEquals(null, s.lookupText, "lookupText");
    SessionOptions o = new SessionOptions();
    checkEquals(SessionOptions.KvType.DEFAULT, o.kvType, "kvType");
    checkEquals(300L << 20, o.budgetBytes, "budgetBytes (300 MiB, pocket.h)");
    checkEquals(SessionOptions.KvPolicy.ERROR, o.kvPolicy, "kvPolicy");
    checkEquals(4, o.sinkTokens, "sinkTokens");
    ModelOptions m = new ModelOptions();
    checkEquals(0, m.threads, "threads");
    checkEquals(null, m.backend, "backend");
    checkEquals(ModelOptions.QuantMath.INT8, m.quantMath, "quantMath");
    check(Model.libraryVersion().matches("\\d+\\.\\d+\\.\\d+"), "version " + Model.libraryVersion());
  }

  public static void testModelProperties() {
    try (Model model = load()) {
      checkEquals("llama", model.architecture(), "architecture");
      checkEquals(512, model.vocabSize(), "vocab (tok512)");
      checkEquals(512, model.contextLength(), "context (seq_len 512)");
    }
  }

  /** Greedy generation equals llama2.c's, streamed pieces concatenate to the result's text. */
  public static void testGreedyGenerationMatchesLlama2c() {
    try (Model model = load(); Session session = model.newSession()) {
      StringBuilder streamed = new StringBuilder();
      int[] pieces = {0};
      Generation g = session.generate("Once upon a time", Sampling.greedy(60), piece -> {
        streamed.append(piece);
        ++pieces[0];
        return true;
      });
      check(g.text.startsWith(GOLDEN), "text \"" + g.text + "\" should start with the golden");
      checkEquals(g.text, streamed.toString(), "streamed pieces");
      checkEquals(60, g.generatedTokens, "generated");
      checkEquals(60, pieces[0], "pieces (one per token: stories260K's pieces are whole chars)");
      checkEquals(5, g.promptTokens, "prompt tokens (BOS + 4)");
      checkEquals(StopReason.LENGTH, g.stopReason, "stop reason");
      // The last generated token stays pending until the next call feeds it (runtime/generate.h).
      checkEquals(5 + 60 - 1, session.position(), "position");
      check(g.prefillSeconds >= 0 && g.decodeSeconds > 0, "timings");
    }
  }

  /**
   * Speculation by default (AUTO), off, and prompt lookup with a lookup text and short drafts, in
   * generate and chat: the text is llama2.c's each time; a bad draft length is refused by name.
   */
  public static void testSpeculationKeepsTheText() {
    try (Model model = load()) {
      Sampling off = Sampling.greedy(60);
      off.speculation = Speculation.OFF;
      Sampling lookup = Sampling.greedy(60);
      lookup.speculation = Speculation.PROMPT_LOOKUP;
      lookup.maxDraft = 3;
      lookup.lookupText = "she saw a big, red ball. She wanted to play with it";
      for (Sampling s : new Sampling[] {Sampling.greedy(60), off, lookup}) {
        try (Session session = model.newSession()) {
          Generation g = session.generate("Once upon a time", s);
          check(g.text.startsWith(GOLDEN), s.speculation + ": \"" + g.text + "\"");
        }
      }
      String[] chats = new String[2];
      for (int k = 0; k < 2; ++k) {
        try (Session session = model.newSession()) {
          Sampling s = k == 0 ? off : lookup;
          List<Message> turn = List.of(new Message("user", "Once upon a time"));
          chats[k] = session.chat(turn, false, s, null).text;
        }
      }
      checkEquals(chats[0], chats[1], "chat text with and without speculation");
      lookup.maxDraft = 16;
      try (Session session = model.newSession()) {
        session.generate("Once upon a time", lookup);
        check(false, "maxDraft 16 should be refused");
      } catch (PocketException e) {
        check(e.getMessage().contains("max_draft 16"), e.getMessage());
      }
    }
  }

  /** The same generation as two calls: the session keeps its tokens between calls. */
  public static void testGenerationContinuesAcrossCalls() {
    try (Model model = load(); Session session = model.newSession()) {
      Generation a = session.generate("Once upon a time", greedy(10));
      Generation b = session.generate("", greedy(50));
      check((a.text + b.text).startsWith(GOLDEN), "continued text: " + a.text + b.text);
    }
  }

  public static void testStopStringEndsGenerationWithoutEmittingIt() {
    try (Model model = load(); Session session = model.newSession()) {
      Sampling s = Sampling.greedy(100);
      s.stopStrings.add("Lily.");
      Generation g = session.generate("Once upon a time", s);
      checkEquals(StopReason.STOP_STRING, g.stopReason, "stop reason");
      checkEquals(", there was a little girl named ", g.text, "text");
    }
  }

  public static void testTokenizeAndEvalMatchTheReference() {
    try (Model model = load(); Session session = model.newSession()) {
      int[] ids = model.tokenize("Once upon a time");
      check(Arrays.equals(PROMPT_IDS, ids), "ids " + Arrays.toString(ids));
      checkEquals("Once upon a time", model.detokenize(ids), "detokenize");
      int[] withBos = {1, 403, 407, 261, 378};
      float[] logits = session.eval(withBos);
      checkEquals(512, logits.length, "logits length");
      int best = 0;
      for (int i = 1; i < logits.length; ++i) {
        if (logits[i] > logits[best]) best = i;
      }
      checkEquals(FIRST_GENERATED_ID, best, "argmax of the logits after the prompt");
      checkEquals(5, session.position(), "position");
      MemoryUsage usage = session.memory();
      checkEquals(5L, usage.tokens, "tokens held");
      check(usage.kv > 0, "kv bytes");
      checkEquals(usage.weights + usage.model + usage.kv + usage.scratch + usage.logits,
          usage.total, "total");
      session.reset();
      checkEquals(0, session.position(), "position after reset");
    }
  }

  /**
   * Characters outside the Basic Multilingual Plane survive the round trip: JNI's modified UTF-8
   * would hand the tokenizer surrogate pairs, which it refuses as invalid UTF-8.
   */
  public static void testUtf8RoundTripOutsideTheBmp() {
    try (Model model = load()) {
      String text = "Lily sees \uD83D\uDE00, caf\u00E9 and \u4E2D\u6587 \uD840\uDC00.";
      int[] ids = model.tokenize(text);
      check(ids.length > 0, "ids");
      checkEquals(text, model.detokenize(ids), "round trip");
    }
  }

  /** Saved state restores into another session, which continues the golden text. */
  public static void testSaveAndLoadContinueTheConversation() throws Exception {
    File state = File.createTempFile("pocket-java-", ".state");
    try (Model model = load(); Session a = model.newSession(); Session b = model.newSession()) {
      Generation first = a.generate("Once upon a time", greedy(10));
      a.save(state.getPath());
      b.load(state.getPath());
      checkEquals(a.position(), b.position(), "position after load");
      Generation rest = b.generate("", greedy(50));
      check((first.text + rest.text).startsWith(GOLDEN), "continued: " + first.text + rest.text);
      expectPocket(Status.NOT_FOUND, "/no/such/dir", () -> b.load("/no/such/dir/x.state"));
      checkEquals(a.position(), b.position() - 50, "a failed load leaves the session as it was");
    } finally {
      state.delete();
    }
  }

  /**
   * trim(SCRATCH) frees the activation buffers and trim(SUSPEND) the KV cache too, through a
   * state file; either way the next call continues the golden text as an untouched session does.
   */
  public static void testTrimGivesMemoryBackAndTheConversationGoesOn() throws Exception {
    File state = File.createTempFile("pocket-java-trim-", ".state");
    state.delete();
    try (Model model = load(); Session session = model.newSession()) {
      Generation first = session.generate("Once upon a time", greedy(10));
      check(session.memory().scratch > 0, "scratch before the trim");
      long kv = session.memory().kv;
      session.trim(TrimLevel.SCRATCH);
      checkEquals(0L, session.memory().scratch, "scratch after SCRATCH");
      checkEquals(kv, session.memory().kv, "the KV pages hold the conversation");
      Generation second = session.generate("", greedy(10));
      int position = session.position();
      session.trim(TrimLevel.SUSPEND, state.getPath());
      check(state.exists(), "SUSPEND writes the state file");
      checkEquals(0L, session.memory().kv, "kv after SUSPEND");
      checkEquals(position, session.position(), "position while suspended");
      Generation rest = session.generate("", greedy(40));
      check(!state.exists(), "the next call restores and deletes the file");
      String text = first.text + second.text + rest.text;
      check(text.startsWith(GOLDEN), "continued: " + text);
      expectPocket(Status.INVALID_ARGUMENT, "needs a state_path",
          () -> session.trim(TrimLevel.SUSPEND));
      expectPocket(Status.INVALID_ARGUMENT, "level is null", () -> session.trim(null));
      expectPocket(Status.IO_ERROR, "/no/such/dir",
          () -> session.trim(TrimLevel.SUSPEND, "/no/such/dir/state"));
      check(session.memory().kv > 0, "a failed SUSPEND keeps the cache");
    } finally {
      state.delete();
    }
  }

  public static void testChatRendersAndGenerates() {
    try (Model model = load(); Session session = model.newSession()) {
      StringBuilder streamed = new StringBuilder();
      Generation g = session.chat(Collections.singletonList(Message.user("Once upon a time")),
          false, greedy(8), piece -> streamed.append(piece) != null);
      checkEquals(8, g.generatedTokens, "generated");
      checkEquals(g.text, streamed.toString(), "streamed");
      check(g.promptTokens > 4, "the rendered prompt holds the message: " + g.promptTokens);
    }
  }

  // ---- threads ------------------------------------------------------------------------------

  /**
   * cancel() from a second thread stops the generation after the token in progress: the callback
   * of the 5th piece waits until the other thread's cancel() has returned, so the generation ends
   * with exactly 5 tokens, and the session continues as an uninterrupted one.
   */
  public static void testCancelFromAnotherThreadStopsAfterTheCurrentToken() throws Exception {
    try (Model model = load(); Session session = model.newSession()) {
      CountDownLatch ask = new CountDownLatch(1);
      CountDownLatch cancelled = new CountDownLatch(1);
      AtomicReference<Throwable> failure = new AtomicReference<>();
      Thread canceller = new Thread(() -> {
        try {
          await(ask);
          session.cancel();
        } catch (Throwable t) {
          failure.set(t);
        } finally {
          cancelled.countDown();
        }
      });
      canceller.start();
      int[] pieces = {0};
      Generation first = session.generate("Once upon a time", greedy(100), piece -> {
        if (++pieces[0] == 5) {
          ask.countDown();
          try {
            await(cancelled);
          } catch (InterruptedException e) {
            throw new AssertionError(e);
          }
        }
        return true;
      });
      canceller.join();
      checkEquals(null, failure.get(), "canceller failure");
      checkEquals(StopReason.CANCELLED, first.stopReason, "stop reason");
      checkEquals(5, first.generatedTokens, "generated before the cancel");
      checkEquals(5, pieces[0], "pieces");
      checkEquals(5 + 5 - 1, session.position(), "position: the 5th token is pending");
      // Nothing is left pending: the next call runs to its end and continues the golden text.
      Generation rest = session.generate("", greedy(55));
      checkEquals(StopReason.LENGTH, rest.stopReason, "next call's stop reason");
      check((first.text + rest.text).startsWith(GOLDEN), "continued: " + first.text + rest.text);
    }
  }

  /** Two sessions on one model in two threads give what one session gives alone. */
  public static void testTwoSessionsInTwoThreadsMatchSequential() throws Exception {
    try (Model model = load()) {
      String[] prompts = {"Once upon a time", "The little dog"};
      String[] sequential = new String[2];
      for (int i = 0; i < 2; ++i) {
        try (Session s = model.newSession()) {
          sequential[i] = s.generate(prompts[i], greedy(80)).text;
        }
      }
      String[] parallel = new String[2];
      AtomicReference<Throwable> failure = new AtomicReference<>();
      CountDownLatch start = new CountDownLatch(1);
      Thread[] threads = new Thread[2];
      for (int i = 0; i < 2; ++i) {
        final int k = i;
        threads[i] = new Thread(() -> {
          try (Session s = model.newSession()) {
            await(start);
            parallel[k] = s.generate(prompts[k], greedy(80)).text;
          } catch (Throwable t) {
            failure.set(t);
          }
        });
        threads[i].start();
      }
      start.countDown();
      for (Thread t : threads) t.join();
      checkEquals(null, failure.get(), "thread failure");
      checkEquals(sequential[0], parallel[0], "first prompt");
      checkEquals(sequential[1], parallel[1], "second prompt");
      check(sequential[0].startsWith(GOLDEN), "golden: " + sequential[0]);
      check(sequential[1].startsWith(" was a little girl named Lily."),
          "golden \"The little dog\": " + sequential[1]);
    }
  }

  /**
   * A session used from a second thread while it generates refuses with BUSY and changes
   * nothing; so does a call from the session's own callback.
   */
  public static void testConcurrentUseIsBusy() throws Exception {
    try (Model model = load(); Session session = model.newSession()) {
      CountDownLatch inCallback = new CountDownLatch(1);
      CountDownLatch tried = new CountDownLatch(1);
      List<Status> fromCallback = new ArrayList<>();
      AtomicReference<Generation> result = new AtomicReference<>();
      AtomicReference<Throwable> failure = new AtomicReference<>();
      Thread worker = new Thread(() -> {
        try {
          int[] n = {0};
          result.set(session.generate("Once upon a time", greedy(60), piece -> {
            if (++n[0] == 3) {
              try {
                session.reset();
              } catch (PocketException e) {
                fromCallback.add(e.status());
              }
              inCallback.countDown();
              try {
                await(tried);
              } catch (InterruptedException e) {
                throw new AssertionError(e);
              }
            }
            return true;
          }));
        } catch (Throwable t) {
          failure.set(t);
        }
      });
      worker.start();
      await(inCallback);
      try {
        expectPocket(Status.BUSY, "busy in pocket_generate", () -> session.generate("x"));
        expectPocket(Status.BUSY, "busy", () -> session.eval(new int[] {1}));
        expectPocket(Status.BUSY, "busy", session::reset);
        expectPocket(Status.BUSY, "busy", session::position);
        expectPocket(Status.BUSY, "busy", session::memory);
        expectPocket(Status.BUSY, "busy", () -> session.trim(TrimLevel.SCRATCH));
      } finally {
        tried.countDown();
        worker.join();
      }
      checkEquals(null, failure.get(), "worker failure");
      checkEquals(Collections.singletonList(Status.BUSY), fromCallback, "reset from the callback");
      check(result.get().text.startsWith(GOLDEN), "the generation ran on: " + result.get().text);
      checkEquals(5 + 60 - 1, session.position(), "nothing changed the session");
    }
  }

  /** close() from another thread while generating cancels, frees after the call, and no crash. */
  public static void testCloseWhileGeneratingOnAnotherThread() throws Exception {
    try (Model model = load()) {
      Session session = model.newSession();
      CountDownLatch inCallback = new CountDownLatch(1);
      CountDownLatch closed = new CountDownLatch(1);
      AtomicReference<Generation> result = new AtomicReference<>();
      AtomicReference<Throwable> failure = new AtomicReference<>();
      Thread worker = new Thread(() -> {
        try {
          int[] n = {0};
          result.set(session.generate("Once upon a time", greedy(200), piece -> {
            if (++n[0] == 3) {
              inCallback.countDown();
              try {
                await(closed);
              } catch (InterruptedException e) {
                throw new AssertionError(e);
              }
            }
            return true;
          }));
        } catch (Throwable t) {
          failure.set(t);
        }
      });
      worker.start();
      await(inCallback);
      session.close();
      closed.countDown();
      worker.join();
      checkEquals(null, failure.get(), "worker failure");
      checkEquals(StopReason.CANCELLED, result.get().stopReason, "stop reason");
      checkEquals(3, result.get().generatedTokens, "generated");
      expectThrows(IllegalStateException.class, () -> session.generate("x"));
      session.cancel();  // nothing to cancel on a closed session: no exception
      session.close();
    }
  }

  /** close() from the session's own callback does not wait for itself. */
  public static void testCloseFromTheCallback() {
    try (Model model = load()) {
      Session session = model.newSession();
      Generation g = session.generate("Once upon a time", greedy(50), piece -> {
        session.close();
        return true;
      });
      checkEquals(StopReason.CANCELLED, g.stopReason, "stop reason");
      checkEquals(1, g.generatedTokens, "generated");
      expectThrows(IllegalStateException.class, session::position);
    }
  }

  /** An exception from the callback stops the generation and comes out of generate unchanged. */
  public static void testCallbackExceptionPropagates() {
    try (Model model = load(); Session session = model.newSession()) {
      RuntimeException boom = new IllegalArgumentException("boom");
      int[] n = {0};
      RuntimeException thrown = expectThrows(RuntimeException.class,
          () -> session.generate("Once upon a time", greedy(50), piece -> {
            if (++n[0] == 3) throw boom;
            return true;
          }));
      check(thrown == boom, "the callback's own exception: " + thrown);
      checkEquals(3, n[0], "no piece after the exception");
      checkEquals(5 + 3 - 1, session.position(), "the session keeps the 3 tokens (one pending)");
      Generation rest = session.generate("", greedy(57));
      checkEquals(StopReason.LENGTH, rest.stopReason, "the session goes on");
    }
  }

  public static void testCallbackReturningFalseStops() {
    try (Model model = load(); Session session = model.newSession()) {
      int[] n = {0};
      Generation g = session.generate("Once upon a time", greedy(50), piece -> ++n[0] < 4);
      checkEquals(StopReason.CANCELLED, g.stopReason, "stop reason");
      checkEquals(4, g.generatedTokens, "generated");
      check(GOLDEN.startsWith(g.text), "prefix of the golden: " + g.text);
    }
  }

  /**
   * close() racing generate() from another thread at varying moments: each round ends with a
   * finished or cancelled generation, or IllegalStateException when the close came first; never
   * a crash (the handle is freed only after the call using it returns).
   */
  public static void testCloseRacesWithGenerate() throws Exception {
    try (Model model = load()) {
      for (int round = 0; round < 40; ++round) {
        Session session = model.newSession();
        AtomicReference<Object> outcome = new AtomicReference<>();
        Thread worker = new Thread(() -> {
          try {
            outcome.set(session.generate("Once upon a time", greedy(40)));
          } catch (Throwable t) {
            outcome.set(t);
          }
        });
        worker.start();
        Thread.sleep(0, (round % 8) * 100000);
        session.close();
        worker.join();
        Object o = outcome.get();
        if (o instanceof Generation) {
          Generation g = (Generation) o;
          check(g.stopReason == StopReason.CANCELLED || g.stopReason == StopReason.LENGTH,
              "round " + round + ": " + g);
          check(GOLDEN.startsWith(g.text) || g.text.startsWith(GOLDEN), "text: " + g.text);
        } else {
          check(o instanceof IllegalStateException, "round " + round + ": " + o);
        }
      }
    }
  }

  /**
   * A generation that reaches the session's budget throws BUDGET_EXCEEDED carrying what it
   * generated, which the session keeps. The budget is the smallest of a scan that holds some
   * tokens but less than the context, so the test does not depend on this host's page sizes.
   */
  public static void testBudgetExceededCarriesTheGeneration() {
    try (Model model = load()) {
      Session session = null;
      for (long budget = 1L << 20; budget < 64L << 20 && session == null; budget += 16 << 10) {
        SessionOptions o = new SessionOptions();
        o.budgetBytes = budget;
        try {
          Session s = model.newSession(o);
          if (s.memory().maxTokens >= 16 && s.memory().maxTokens < 512) {
            session = s;
          } else {
            s.close();
          }
        } catch (PocketException e) {
          checkEquals(Status.BUDGET_EXCEEDED, e.status(), "status while scanning");
        }
      }
      check(session != null, "no budget between 1 and 64 MiB holds 16 to 511 tokens");
      try (Session s = session) {
        long max = s.memory().maxTokens;
        PocketException e = expectPocket(Status.BUDGET_EXCEEDED, "budget",
            () -> s.generate("Once upon a time", greedy(600)));
        Generation g = e.generation();
        check(g != null, "the exception carries the generation");
        checkEquals(StopReason.BUDGET, g.stopReason, "stop reason");
        // Every token the budget holds, plus the last sampled one, pending outside the cache.
        checkEquals((int) max - 5 + 1, g.generatedTokens, "generated");
        checkEquals((int) max, s.position(), "position");
        check(GOLDEN.startsWith(g.text) || g.text.startsWith(GOLDEN), "text: " + g.text);
      }
    }
  }

  // ---- errors -------------------------------------------------------------------------------

  public static void testClosedHandlesThrow() {
    Model model = load();
    Session session = model.newSession();
    session.close();
    session.close();
    expectThrows(IllegalStateException.class, () -> session.generate("x"));
    expectThrows(IllegalStateException.class, () -> session.eval(new int[] {1}));
    expectThrows(IllegalStateException.class, session::reset);
    expectThrows(IllegalStateException.class, session::position);
    expectThrows(IllegalStateException.class, session::memory);
    expectThrows(IllegalStateException.class, () -> session.save("/tmp/x"));
    expectThrows(IllegalStateException.class, () -> session.trim(TrimLevel.SCRATCH));
    expectThrows(IllegalStateException.class,
        () -> session.chat(Collections.singletonList(Message.user("hi")), false));
    model.close();
    model.close();
    expectThrows(IllegalStateException.class, model::vocabSize);
    expectThrows(IllegalStateException.class, () -> model.tokenize("x"));
    expectThrows(IllegalStateException.class, () -> model.detokenize(new int[] {1}));
    expectThrows(IllegalStateException.class, model::newSession);
  }

  static Model loadF32(String backend) {
    ModelOptions options = new ModelOptions();
    options.threads = 1;
    options.backend = backend;
    options.quantMath = ModelOptions.QuantMath.F32;
    return Model.load(modelPath, options);
  }

  /**
   * moveTo: with f32 weights, an f32 cache and f32 maths the cpu and reference backends compute
   * the same numbers, so a conversation moved cpu -> reference -> cpu goes on with the text of
   * one that never moved. The session holds the model it runs on: the one it left may close.
   * A null or closed target throws and leaves the session where it was.
   */
  public static void testMoveToAnotherBackendKeepsTheConversation() {
    SessionOptions f32 = new SessionOptions();
    f32.kvType = SessionOptions.KvType.F32;
    try (Model cpu = loadF32("cpu"); Model reference = loadF32("reference");
        Session still = cpu.newSession(f32); Session moving = cpu.newSession(f32)) {
      String want = still.generate("Once upon a time", greedy(20)).text
          + still.generate("", greedy(15)).text + still.generate("", greedy(15)).text;
      String got = moving.generate("Once upon a time", greedy(20)).text;
      int position = moving.position();
      moving.moveTo(reference);
      checkEquals(position, moving.position(), "position after the move");
      got += moving.generate("", greedy(15)).text;
      moving.moveTo(cpu);
      got += moving.generate("", greedy(15)).text;
      checkEquals(want, got, "text of the moved session");

      position = moving.position();
      expectPocket(Status.INVALID_ARGUMENT, "target is null", () -> moving.moveTo(null));
      Model closed = loadF32("reference");
      closed.close();
      expectThrows(IllegalStateException.class, () -> moving.moveTo(closed));
      checkEquals(position, moving.position(), "a failed move leaves the session as it was");
      Model left = loadF32("cpu");
      moving.moveTo(left);
      moving.moveTo(reference);
      left.close();
      check(!moving.generate("", greedy(5)).text.isEmpty(), "generates after its old model closed");
    }
  }

  /** A session keeps its model alive after model.close(), until the session is closed too. */
  public static void testSessionOutlivesClosedModel() {
    Model model = load();
    Session session = model.newSession();
    model.close();
    Generation g = session.generate("Once upon a time", Sampling.greedy(60));
    check(g.text.startsWith(GOLDEN), "text: " + g.text);
    session.close();
  }

  public static void testBadInputThrowsWithMessage() {
    expectPocket(Status.NOT_FOUND, "/no/such/file.pocket", () -> Model.load("/no/such/file.pocket"));
    expectPocket(Status.INVALID_ARGUMENT, "path is null", () -> Model.load(null));
    expectPocket(Status.INVALID_ARGUMENT, "NUL", () -> Model.load("a\0b"));
    ModelOptions threads = new ModelOptions();
    threads.threads = -1;
    expectPocket(Status.INVALID_ARGUMENT, "threads", () -> Model.load(modelPath, threads));
    ModelOptions backend = new ModelOptions();
    backend.backend = "no-such-backend";
    expectPocket(Status.INVALID_ARGUMENT, "no-such-backend", () -> Model.load(modelPath, backend));
    try (Model model = load(); Session session = model.newSession()) {
      expectPocket(Status.INVALID_ARGUMENT, "text is null", () -> model.tokenize(null));
      expectPocket(Status.INVALID_ARGUMENT, "ids is null", () -> model.detokenize(null));
      expectPocket(Status.INVALID_ARGUMENT, "id 512 at index 1",
          () -> model.detokenize(new int[] {1, 512}));
      expectPocket(Status.INVALID_ARGUMENT, "id -3", () -> model.detokenize(new int[] {-3}));
      expectPocket(Status.INVALID_ARGUMENT, "tokens is null", () -> session.eval(null));
      expectPocket(Status.INVALID_ARGUMENT, "empty", () -> session.eval(new int[0]));
      expectPocket(Status.INVALID_ARGUMENT, "512", () -> session.eval(new int[] {1, 512}));
      checkEquals(0, session.position(), "failed evals change nothing");
      expectPocket(Status.INVALID_ARGUMENT, "prompt is null", () -> session.generate(null));
      expectPocket(Status.INVALID_ARGUMENT, "no messages", () -> session.chat(null, false));
      expectPocket(Status.INVALID_ARGUMENT, "message 0 is null",
          () -> session.chat(Collections.singletonList(null), false));
      expectPocket(Status.INVALID_ARGUMENT, "content is null",
          () -> session.chat(Collections.singletonList(new Message("user", null)), false));
      Sampling empty = new Sampling();
      empty.stopStrings.add("");
      expectPocket(Status.INVALID_ARGUMENT, "empty string", () -> session.generate("x", empty));
      Sampling nullStop = new Sampling();
      nullStop.stopStrings.add(null);
      expectPocket(Status.INVALID_ARGUMENT, "stopStrings[0] is null",
          () -> session.generate("x", nullStop));
      expectPocket(Status.INVALID_ARGUMENT, "path is null", () -> session.save(null));
      StringBuilder tooLong = new StringBuilder();
      for (int i = 0; i < 600; ++i) tooLong.append(" time");
      expectPocket(Status.OUT_OF_RANGE, "does not fit",
          () -> session.generate(tooLong.toString(), greedy(5)));
      checkEquals(0, session.position(), "failed calls change nothing");
      SessionOptions tiny = new SessionOptions();
      tiny.budgetBytes = 1024;
      expectPocket(Status.BUDGET_EXCEEDED, "budget", () -> model.newSession(tiny));
      SessionOptions negative = new SessionOptions();
      negative.budgetBytes = -1;
      expectPocket(Status.INVALID_ARGUMENT, "budgetBytes", () -> model.newSession(negative));
    }
  }
}
