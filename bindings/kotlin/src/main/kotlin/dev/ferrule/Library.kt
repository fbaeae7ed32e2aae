package dev.ferrule

/** The ferrule library this package loaded. */
object Library {
    /** The ABI version this package was written against (`FERRULE_ABI_VERSION` of ferrule.h). */
    const val ABI_VERSION: Int = 0

    /** The library's version, such as "0.1.0". */
    val version: String get() = Native.lib.ferrule_version().text()

    /** Whether the loaded library speaks this package's ABI. */
    val abiMatches: Boolean get() = Native.lib.ferrule_abi_version() == ABI_VERSION
}
