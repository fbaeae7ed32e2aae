import CFerrule

/// The ferrule library this package is linked against.
public enum Library {
    /// The library's version, such as "0.1.0".
    public static var version: String { String(borrowed: ferrule_version()) }

    /// Whether the library speaks the C ABI this package was built for.
    public static var abiMatches: Bool { ferrule_abi_version() == UInt32(FERRULE_ABI_VERSION) }

    /// Checked once, when the first agent is made.
    private static let abiError: FerruleError? =
        abiMatches
        ? nil
        : FerruleError(
            code: .invalidArg,
            message:
                "libferrule \(version) speaks ABI \(ferrule_abi_version()); this package needs ABI \(FERRULE_ABI_VERSION)"
        )

    static func checkABI() throws {
        if let abiError { throw abiError }
    }

    /// Sets ferrule's thread sizes before first use (`{"worker_threads": 2, ...}`,
    /// docs/c.md, "Runtime configuration"). Throws `alreadyInitialized` once a run has started.
    public static func configureRuntime(_ json: String) throws {
        try withUTF8Arg(json) { try FerruleError.check(ferrule_runtime_configure($0, $1)) }
    }
}
