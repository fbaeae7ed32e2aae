package dev.ferrule

import com.sun.jna.CallbackReference
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertNotEquals
import org.junit.jupiter.api.Test

/** How the package reaches the C ABI through JNA. */
class NativeTest {
    @Test
    fun specCallbacksGetTheDirectAddress() {
        // The proxied address is what directAddress falls back to when JNA
        // refuses; a JNA whose private method moved would land here.
        val direct = Native.directAddress(CoroutineHost.request)
        assertNotEquals(CallbackReference.getFunctionPointer(CoroutineHost.request), direct)
        assertEquals(direct, Native.directAddress(CoroutineHost.request), "one address per callback")
    }
}
