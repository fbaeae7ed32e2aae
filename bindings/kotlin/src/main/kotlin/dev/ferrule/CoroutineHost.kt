package dev.ferrule

import com.sun.jna.Pointer
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.Job
import kotlinx.coroutines.ThreadContextElement
import kotlin.coroutines.Continuation
import kotlin.coroutines.ContinuationInterceptor
import kotlin.coroutines.CoroutineContext
import kotlin.coroutines.intrinsics.createCoroutineUnintercepted
import kotlin.coroutines.intrinsics.intercepted
import kotlin.coroutines.resume

/**
 * Where an agent's tool and hook coroutines run: the context the host gave the
 * agent, each coroutine with a [Job] of its own, so one failing call never
 * cancels another. Each coroutine answers its request exactly once and is
 * cancelled when ferrule stops waiting for it.
 *
 * A coroutine is started bare (the suspending function with a completion of
 * its own) rather than with `launch`, whose coroutine object, parent link and
 * completion handler cost about 1.3 µs a call on the project's machine (50 ns
 * this way), paid by every tool call and hook consultation.
 */
internal class CoroutineHost(context: CoroutineContext) {
    init {
        require(context[Job] == null) {
            "an agent's coroutine context must not hold a Job: its calls are cancelled by their runs"
        }
        require(context[ContinuationInterceptor] != Dispatchers.Unconfined) {
            "Dispatchers.Unconfined would run tool and hook bodies on ferrule's runtime threads"
        }
    }

    /** Dispatchers.IO unless the context names a dispatcher of its own. */
    private val context = if (context[ContinuationInterceptor] == null) Dispatchers.IO + context else context

    /**
     * The context's elements that set thread-local state while a coroutine runs
     * (MDC's, a tracer's): the dispatcher sets them for each resumption, this
     * class for an inline coroutine's start.
     */
    @Suppress("UNCHECKED_CAST")
    private val threadElements = context.fold(emptyList<ThreadContextElement<Any?>>()) { found, element ->
        if (element is ThreadContextElement<*>) found + element as ThreadContextElement<Any?> else found
    }

    /**
     * Starts [work], which answers a request (a tool call, a hook), and has
     * [registerCanceller] (`ferrule_tool_call_on_cancel` or
     * `ferrule_hook_on_cancel`) cancel it when ferrule stops waiting. Whenever
     * the coroutine cannot answer (its dispatcher refuses it, [work] throws or
     * is cancelled), [fallback] answers with a fixed text; ferrule takes the
     * first answer and refuses the rest, so a fallback after an answer does
     * nothing. An [inline] coroutine starts in this thread (ferrule's callback)
     * and runs here until it first suspends; any other is dispatched.
     */
    fun answer(
        registerCanceller: (CancelFn, Pointer, FreeFn) -> Pointer?,
        fallback: () -> Unit,
        inline: Boolean = false,
        work: suspend () -> Unit,
    ) {
        val job = Job()
        val coroutineContext = context + job
        val coroutine = work.createCoroutineUnintercepted(Continuation(coroutineContext) { outcome ->
            // Kept from the uncaught-exception handler, which ends Android apps.
            if (outcome.isFailure) fallback()
            job.complete()
        })
        try {
            if (inline) startHere(coroutine, coroutineContext) else coroutine.intercepted().resume(Unit)
        } catch (refused: Throwable) {
            // The dispatcher refused the start (or a thread element failed): the work never ran.
            job.complete()
            return fallback()
        }
        // A job done already (an inline body that never suspended) answered its
        // request: nothing is left to cancel, and ferrule would refuse the
        // canceller. A job that ends after this check may answer first too:
        // handOver's error (ALREADY_COMPLETED) is then dropped on purpose.
        if (job.isCompleted) return
        Handles.handOver(job) { key -> registerCanceller(cancelJob, key, Handles.release) }
    }

    /** Runs [coroutine] here until it first suspends, with the context's thread state set. */
    private fun startHere(coroutine: Continuation<Unit>, coroutineContext: CoroutineContext) {
        if (threadElements.isEmpty()) return coroutine.resume(Unit)
        val states = ArrayList<Any?>(threadElements.size)
        try {
            for (element in threadElements) states += element.updateThreadContext(coroutineContext)
            coroutine.resume(Unit)
        } finally {
            for (i in states.indices.reversed()) threadElements[i].restoreThreadContext(coroutineContext, states[i])
        }
    }

    companion object {
        /**
         * ferrule's tool and hook callback, on its runtime (every Kotlin tool and
         * hook is registered `nonblocking`): hands the request to the handler
         * registered with it, which starts a coroutine and returns.
         */
        val request = Native.attached(RequestFn { userData, request ->
            if (request != null) Handles.get<(Pointer) -> Unit>(userData)?.invoke(request)
        })

        /** Cancels the coroutine of a request ferrule stopped waiting for. */
        private val cancelJob = Native.attached(CancelFn { userData -> Handles.get<Job>(userData)?.cancel() })
    }
}
