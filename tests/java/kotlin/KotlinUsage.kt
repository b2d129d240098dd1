// The Java API as Kotlin code uses it: options through apply { }, handles
// through use { }, the streaming callback as a trailing lambda, cancel() from
// another thread, PocketException's status. Checked against llama2.c run.c's
// greedy output (tests/data/stories260K-golden.txt), like the Java tests.
// Exits non-zero on the first failed check.
import dev.pocket.Message
import dev.pocket.Model
import dev.pocket.ModelOptions
import dev.pocket.PocketException
import dev.pocket.Sampling
import dev.pocket.SessionOptions
import dev.pocket.Status
import dev.pocket.StopReason
import java.util.concurrent.CountDownLatch
import java.util.concurrent.TimeUnit
import kotlin.concurrent.thread
import kotlin.system.exitProcess

const val GOLDEN = ", there was a little girl named Lily. She loved to play outside in the park. " +
    "One day, she saw a big, red ball. She wanted to play with it, but it was too high.\n"

fun expect(ok: Boolean, what: () -> String) {
    if (!ok) {
        println("FAIL: ${what()}")
        exitProcess(1)
    }
}

fun main(args: Array<String>) {
    Model.load(args[0], ModelOptions().apply { threads = 1 }).use { model ->
        expect(model.architecture() == "llama") { model.architecture() }

        model.newSession().use { session ->
            val streamed = StringBuilder()
            val g = session.generate("Once upon a time", Sampling().apply { maxNewTokens = 60 }) { piece ->
                streamed.append(piece)
                true
            }
            expect(g.text.startsWith(GOLDEN)) { "golden: ${g.text}" }
            expect(g.text == streamed.toString()) { "streamed: $streamed" }
            expect(g.stopReason == StopReason.LENGTH && g.generatedTokens == 60) { g.toString() }
        }

        // cancel() from another thread, once the callback has seen 5 pieces.
        model.newSession(SessionOptions().apply { kvType = SessionOptions.KvType.F32 }).use { session ->
            val ask = CountDownLatch(1)
            val done = CountDownLatch(1)
            val canceller = thread {
                ask.await(60, TimeUnit.SECONDS)
                session.cancel()
                done.countDown()
            }
            var pieces = 0
            val g = session.generate("Once upon a time", Sampling.greedy(100)) {
                if (++pieces == 5) {
                    ask.countDown()
                    done.await(60, TimeUnit.SECONDS)
                }
                true
            }
            canceller.join()
            expect(g.stopReason == StopReason.CANCELLED && g.generatedTokens == 5) { g.toString() }
            expect(GOLDEN.startsWith(g.text)) { "prefix: ${g.text}" }
        }

        model.newSession().use { session ->
            var n = 0
            val g = session.chat(listOf(Message.user("Hi")), false, Sampling.greedy(20)) { ++n < 3 }
            expect(g.stopReason == StopReason.CANCELLED && g.generatedTokens == 3) { g.toString() }
        }

        try {
            model.detokenize(intArrayOf(1, 9999))
            expect(false) { "no exception for id 9999" }
        } catch (e: PocketException) {
            expect(e.status() == Status.INVALID_ARGUMENT) { e.toString() }
            expect(e.message!!.contains("9999")) { e.toString() }
        }
    }
    println("kotlin usage: all checks passed")
}
