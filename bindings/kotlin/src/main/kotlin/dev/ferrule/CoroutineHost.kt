package dev.ferrule

import com.sun.jna.Pointer
import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.CoroutineStart
import kotlinx.coroutines.DelicateCoroutinesApi
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.Job
import kotlinx.coroutines.SupervisorJob
import kotlinx.coroutines.launch
import kotlin.coroutines.ContinuationInterceptor
import kotlin.coroutines.CoroutineContext
import kotlin.coroutines.EmptyCoroutineContext

/**
 * Where an agent's tool and hook coroutines run: the context the host gave the
 * agent, under a supervisor of its own, so one failing call never cancels
 * another. Each coroutine answers its request exactly once and is cancelled
 * when ferrule stops waiting for it.
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
    private val scope = CoroutineScope(
        (if (context[ContinuationInterceptor] == null) Dispatchers.IO + context else context) + SupervisorJob())

    /**
     * Launches [work], which answers a request (a tool call, a hook), and has
     * [registerCanceller] (`ferrule_tool_call_on_cancel` or
     * `ferrule_hook_on_cancel`) cancel it when ferrule stops waiting. Whenever
     * the coroutine cannot answer (its dispatcher refuses it, a context element
     * fails, [work] itself throws), [fallback] answers with a fixed text; ferrule
     * takes the first answer and refuses the rest, so a fallback after an
     * answer does nothing. An [inline] coroutine starts in this thread (ferrule's
     * callback) and runs here until it first suspends.
     */
    @OptIn(DelicateCoroutinesApi::class)
    fun answer(
        registerCanceller: (CancelFn, Pointer, FreeFn) -> Pointer?,
        fallback: () -> Unit,
        inline: Boolean = false,
        context: CoroutineContext = EmptyCoroutineContext,
        work: suspend () -> Unit,
    ) {
        // ATOMIC and UNDISPATCHED: a coroutine cancelled before it starts still
        // runs, so the request is answered whatever happens.
        val start = if (inline) CoroutineStart.UNDISPATCHED else CoroutineStart.ATOMIC
        val job = try {
            scope.launch(context, start = start) {
                try {
                    work()
                } catch (failure: Throwable) {
                    fallback() // kept from the uncaught-exception handler, which ends Android apps
                }
            }
        } catch (refused: Throwable) {
            return fallback()
        }
        job.invokeOnCompletion { failure -> if (failure != null) fallback() }
        // A job done already (an inline body that never suspended) answered its
        // request: nothing is left to cancel, and ferrule would refuse the
        // canceller. A job that ends after this check may answer first too:
        // handOver's error (ALREADY_COMPLETED) is then dropped on purpose.
        if (job.isCompleted) return
        Handles.handOver(job) { key -> registerCanceller(cancelJob, key, Handles.release) }
    }

    companion object {
        /**
         * ferrule's tool and hook callback, on its runtime (every Kotlin tool and
         * hook is registered `nonblocking`): hands the request to the handler
         * registered with it, which launches a coroutine and returns.
         */
        val request = Native.attached(RequestFn { userData, request ->
            if (request != null) Handles.get<(Pointer) -> Unit>(userData)?.invoke(request)
        })

        /** Cancels the coroutine of a request ferrule stopped waiting for. */
        private val cancelJob = Native.attached(CancelFn { userData -> Handles.get<Job>(userData)?.cancel() })
    }
}
