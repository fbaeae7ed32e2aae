package dev.ferrule

/** The ferrule library this package loaded. */
object Library {
    /** The ABI version this package was written against (`FERRULE_ABI_VERSION` of ferrule.h). */
    const val ABI_VERSION: Int = 0

    /** The library's version, such as "0.1.0". */
    val version: String get() = Native.versions.ferrule_version().text()

    /** Whether the loaded library speaks this package's ABI. */
    val abiMatches: Boolean get() = Native.versions.ferrule_abi_version() == ABI_VERSION

    /**
     * Sets ferrule's thread sizes before its first run, from JSON such as
     * `{"worker_threads": 2, "max_callback_threads": 256}` (docs/c.md, "Runtime configuration").
     * `ALREADY_INITIALIZED` once a run has started or after an earlier call;
     * `INVALID_ARG` for an unknown field or a size out of range.
     */
    fun configureRuntime(json: String) {
        val bytes = json.utf8()
        FerruleException.check(Native.lib.ferrule_runtime_configure(bytes, bytes.length))
    }
}
