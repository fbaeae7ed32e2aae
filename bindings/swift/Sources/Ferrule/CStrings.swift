import CFerrule

extension String {
    /// Copies a borrowed `ferrule_str` (UTF-8; never NULL).
    init(borrowed text: ferrule_str) {
        self = String(decoding: UnsafeRawBufferPointer(borrowed: text), as: UTF8.self)
    }
}

extension UnsafeRawBufferPointer {
    /// The bytes of a borrowed `ferrule_str`, without a copy: valid only as
    /// long as ferrule lends them.
    init(borrowed text: ferrule_str) {
        self.init(start: text.ptr, count: text.len)
    }
}

/// Calls `body` with the UTF-8 bytes of `text` as the C ABI's `(ptr, len)`.
func withUTF8Arg<R>(_ text: String, _ body: (UnsafePointer<CChar>?, Int) throws -> R) rethrows -> R {
    var text = text
    return try text.withUTF8 { bytes in
        try bytes.withMemoryRebound(to: CChar.self) { try body($0.baseAddress, $0.count) }
    }
}
