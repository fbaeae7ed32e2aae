import CFerrule

extension String {
    /// Copies a borrowed `ferrule_str` (UTF-8; never NULL).
    init(borrowed text: ferrule_str) {
        self = String(decoding: UnsafeRawBufferPointer(start: text.ptr, count: text.len), as: UTF8.self)
    }
}

/// Calls `body` with the UTF-8 bytes of `text` as the C ABI's `(ptr, len)`.
func withUTF8Arg<R>(_ text: String, _ body: (UnsafePointer<CChar>?, Int) throws -> R) rethrows -> R {
    var text = text
    return try text.withUTF8 { bytes in
        try bytes.withMemoryRebound(to: CChar.self) { try body($0.baseAddress, $0.count) }
    }
}
