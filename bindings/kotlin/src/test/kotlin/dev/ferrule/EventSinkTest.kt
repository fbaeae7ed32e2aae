package dev.ferrule

import com.sun.jna.Memory
import com.sun.jna.NativeLong
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertNull
import org.junit.jupiter.api.Test

/** What a run's sink keeps of run_end for the await, fed as ferrule's event callback feeds it. */
class EventSinkTest {
    private fun deliver(sink: EventSink, json: String) {
        val bytes = json.toByteArray()
        val text = Memory(bytes.size + 1L).apply {
            write(0, bytes, 0, bytes.size)
            setByte(bytes.size.toLong(), 0)
        }
        val key = Handles.put(sink)
        try {
            EventSink.deliver.invoke(key, text, NativeLong(bytes.size.toLong()))
        } finally {
            Handles.remove(key)
        }
    }

    private val runEnd = """{"type": "run_end", "run_id": "run-1", "status": "completed", "result": {"status": "completed",
        "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": [{"type": "text", "text": "Hé."}]}],
        "final": {"role": "assistant", "content": [{"type": "text", "text": "Hé."}]}, "usage": {"input_tokens": 3,
        "output_tokens": 1}, "rounds": 1, "error": null, "output": null, "interruptions": []}}"""

    @Test
    fun aRunWithoutAReaderKeepsRunEndForTheAwaitOnce() {
        val sink = EventSink(keep = false)
        deliver(sink, runEnd)
        val result = sink.takeEndResult()
        assertEquals(Status.COMPLETED, result?.status)
        assertEquals(listOf("user", "assistant"), result?.messages?.map { it.role })
        assertEquals("Hé.", result?.messages?.last()?.text)
        assertNull(sink.takeEndResult(), "taken: nothing is kept after")
    }

    @Test
    fun aRunEndThatDoesNotDecodeLeavesTheAwaitToFerrule() {
        val sink = EventSink(keep = false)
        deliver(sink, """{"type": "run_end", "result": {"status": 7}}""")
        assertNull(sink.takeEndResult())
    }

    @Test
    fun aClosedRunKeepsNothing() {
        val sink = EventSink(keep = false)
        sink.letGoUncollected()
        deliver(sink, runEnd)
        assertNull(sink.takeEndResult())
    }
}
