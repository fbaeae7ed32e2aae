import CFerrule

/// The ferrule library this package is linked against.
public enum Library {
    /// The library's version, such as "0.1.0".
    public static var version: String { String(cString: ferrule_version().ptr) }

    /// Whether the library speaks the C ABI this package was built for.
    public static var abiMatches: Bool { ferrule_abi_version() == UInt32(FERRULE_ABI_VERSION) }
}
