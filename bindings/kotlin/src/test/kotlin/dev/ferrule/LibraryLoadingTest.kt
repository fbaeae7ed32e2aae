package dev.ferrule

import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.io.TempDir
import java.io.File
import java.util.concurrent.TimeUnit

/**
 * A library that is not the one this package speaks to, in a JVM of its own
 * (a process loads one libferrule): named and refused clearly, at every use.
 */
class LibraryLoadingTest {
    @Test
    fun aLibraryOfAnotherAbiIsNamedAndRefusedEachTime(@TempDir directory: File) {
        // Only the two functions every libferrule has, as one of another ABI would.
        File(directory, "stub.c").writeText(
            """
            #include <stddef.h>
            #include <stdint.h>
            typedef struct { const char *ptr; size_t len; } ferrule_str;
            ferrule_str ferrule_version(void) { ferrule_str s = { "9.9.9", 5 }; return s; }
            uint32_t ferrule_abi_version(void) { return 99; }
            """.trimIndent(),
        )
        val cc = ProcessBuilder("cc", "-shared", "-fPIC", "-o", "libferrule.so", "stub.c").directory(directory)
            .redirectErrorStream(true).start()
        assertEquals(0, cc.waitFor(), cc.inputStream.bufferedReader().readText())
        assertEquals(
            listOf(
                "abiMatches=false version=9.9.9",
                "IllegalStateException: libferrule 9.9.9 speaks another ABI than this package (0)",
                "IllegalStateException: libferrule 9.9.9 speaks another ABI than this package (0)",
                "UnsatisfiedLinkError: Error looking up function 'ferrule_runtime_configure",
                "UnsatisfiedLinkError: Error looking up function 'ferrule_runtime_configure",
            ),
            probe(directory),
        )
    }

    /** What [LibraryProbe] prints, run with [directory] first in JNA's library path. */
    private fun probe(directory: File): List<String> {
        val classPath = System.getProperty("surefire.test.class.path") ?: System.getProperty("java.class.path")
        val java = File(System.getProperty("java.home"), "bin/java").path
        val process = ProcessBuilder(java, "-cp", classPath, "-Djna.library.path=${directory.path}",
            LibraryProbe::class.java.name).redirectErrorStream(true).start()
        check(process.waitFor(60, TimeUnit.SECONDS)) { process.destroyForcibly(); "the probe did not end" }
        return process.inputStream.bufferedReader().readLines()
    }
}

/** Asks the library its ABI, then makes an agent and configures the runtime twice each, printing what each gave. */
object LibraryProbe {
    @JvmStatic
    fun main(args: Array<String>) {
        println(outcome { "abiMatches=${Library.abiMatches} version=${Library.version}" })
        repeat(2) { println(outcome { Agent("""{"model": {"provider": "scripted", "script": []}}""").close(); "an agent" }) }
        repeat(2) { println(outcome { Library.configureRuntime("{}"); "configured" }) }
    }

    /** What [what] gave, or its error's class and message up to the library's path. */
    private fun outcome(what: () -> String) = try {
        what()
    } catch (error: Throwable) {
        "${error::class.java.simpleName}: ${error.message?.lineSequence()?.first()?.substringBefore("': ")}"
    }
}
