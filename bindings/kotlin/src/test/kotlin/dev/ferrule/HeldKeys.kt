package dev.ferrule

import kotlinx.coroutines.delay
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeoutOrNull

/**
 * How many keys C holds once those of earlier tests (runs still ending, agents
 * and runs awaiting the Cleaner) stop changing: the baseline a hostile test
 * compares with after it.
 */
fun settledKeys(): Int = runBlocking {
    var last = Handles.count
    var stableSince = System.nanoTime()
    withTimeoutOrNull(20_000) {
        while (System.nanoTime() - stableSince < 300_000_000) {
            System.gc()
            delay(20)
            val now = Handles.count
            if (now != last) {
                last = now
                stableSince = System.nanoTime()
            }
        }
    }
    last
}

/** Waits up to [ms] for the keys C holds to come back to [baseline]; the count then. */
suspend fun keysAfterSettling(baseline: Int, ms: Long = 10_000): Int {
    withTimeoutOrNull(ms) {
        while (Handles.count > baseline) {
            System.gc()
            delay(10)
        }
    }
    return Handles.count
}
