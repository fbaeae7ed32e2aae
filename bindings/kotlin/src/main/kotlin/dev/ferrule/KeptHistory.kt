package dev.ferrule

import kotlinx.serialization.SerialName
import kotlinx.serialization.Serializable
import kotlin.coroutines.CoroutineContext

// A typed turn_start hook is registered for the new messages alone
// ("history": "new"): each payload carries the messages added since the hook's
// last turn_start payload in the run, from index messages_from, and the hook
// keeps the history it was given for the run (in the consultation's run state,
// which ferrule frees when the run ends). Its payload's messages are the whole
// history all the same, each message decoded once, so a consultation costs the
// same at the thousandth turn as at the first.

/** The history one hook has been given in one run. */
internal class KeptHistory {
    /** The messages, in order, in the first [count] slots; never changed below [count] once a view shows them. */
    private var slots = arrayOfNulls<Message>(16)
    private var count = 0

    /** Where a payload's messages start: absent for a hook registered without the history. */
    @Serializable
    private class Start(@SerialName("messages_from") val messagesFrom: Int? = null)

    /**
     * Puts [added] in place at index [from] and returns the whole history of [total]
     * messages: a view that never changes, since the slots it shows are never
     * written again (a replaced history is copied to new slots).
     */
    @Synchronized
    private fun merge(from: Int, added: List<Message>, total: Long): List<Message> {
        if (from < 0 || from > count) {
            throw FerruleException(ErrorCode.INVALID_JSON, "the turn_start payload's messages start at $from, after the $count kept")
        }
        if (from < count || from + added.size > slots.size) {
            slots = slots.copyOf(maxOf(16, (from + added.size) * 2)).also { it.fill(null, from) }
        }
        added.forEachIndexed { i, message -> slots[from + i] = message }
        count = from + added.size
        if (count.toLong() != total) {
            throw FerruleException(ErrorCode.INVALID_JSON, "the history kept holds $count messages, the payload says $total")
        }
        return HistoryView(slots, count)
    }

    /** The first [size] of [slots]. */
    private class HistoryView(private val slots: Array<Message?>, override val size: Int) :
        AbstractList<Message>(),
        RandomAccess {
        override fun get(index: Int): Message {
            if (index !in 0 until size) throw IndexOutOfBoundsException("index $index of $size")
            return slots[index]!!
        }
    }

    companion object {
        /**
         * [payload] with the whole history, from the new messages it carries ([json] is its
         * JSON) and those kept from the hook's earlier payloads in the run, which
         * [context] (the hook's coroutine's) is consulted for.
         */
        fun complete(payload: TurnStartPayload, json: String, context: CoroutineContext): TurnStartPayload {
            val from = FerruleJson.decodeFromString(Start.serializer(), json).messagesFrom ?: return payload
            val consultation = context[HookConsultation]
                ?: throw FerruleException(ErrorCode.INVALID_ARG, "a turn_start hook decided outside its consultation")
            val messages = of(consultation).merge(from, payload.messages, payload.messageCount)
            return payload.copy(messages = messages)
        }

        /** The history the consultation's hook keeps for its run, made on its first consultation in the run. */
        private fun of(consultation: HookConsultation): KeptHistory {
            val handle = consultation.handle
            Handles.get<KeptHistory>(Native.lib.ferrule_hook_run_state(handle))?.let { return it }
            val kept = KeptHistory()
            Handles.handOver(kept) { key -> Native.lib.ferrule_hook_set_run_state(handle, key, Handles.release) }
                ?.let { throw it }
            return kept
        }
    }
}
