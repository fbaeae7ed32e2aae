import Foundation

/// The fields of one JSON object by key: Codable's keyed container, or
/// `JSONFields` of the package's own reader. The generated types read their
/// fields from either, with one body (`init(fields:)`).
protocol FieldReader {
    associatedtype Key: CodingKey
    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T
    func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T?
    /// The same for a type `JSONReader` reads itself: chosen where the type is
    /// known to be one, so that no call asks at run time.
    func decode<T: JSONReadable>(_ type: T.Type, forKey key: Key) throws -> T
    func decodeIfPresent<T: JSONReadable>(_ type: T.Type, forKey key: Key) throws -> T?
    /// Content as a message gives it: a list of parts, or a string (its one
    /// text part; none for no text); none when absent or null.
    func decodeContent(forKey key: Key) throws -> [Part]
}

extension KeyedDecodingContainer: FieldReader {
    func decode<T: JSONReadable>(_ type: T.Type, forKey key: Key) throws -> T { try decodable(T.self, forKey: key) }

    func decodeIfPresent<T: JSONReadable>(_ type: T.Type, forKey key: Key) throws -> T? {
        try decodableIfPresent(T.self, forKey: key)
    }

    private func decodable<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        try decode(T.self, forKey: key)
    }

    private func decodableIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
        try decodeIfPresent(T.self, forKey: key)
    }

    func decodeContent(forKey key: Key) throws -> [Part] {
        if let text = try? decodeIfPresent(String.self, forKey: key) { return Part.parts(text) }
        return try decodeIfPresent([Part].self, forKey: key) ?? []
    }
}

/// A type `JSONReader` builds itself, without Codable's containers.
protocol JSONReadable: Decodable {
    static func read(from reader: inout JSONReader) throws -> Self
}

/// A generated type whose fields `JSONReader` reads (`init(fields:)`).
protocol ObjectReadable: JSONReadable {
    associatedtype CodingKeys: CodingKey
    init<Fields: FieldReader>(fields: Fields) throws where Fields.Key == CodingKeys
}

extension ObjectReadable {
    static func read(from reader: inout JSONReader) throws -> Self {
        let fields = try reader.fields(CodingKeys.self)
        let value = try Self(fields: fields)
        try reader.resume(after: fields)
        return value
    }
}

/// A string enum `JSONReader` reads as its raw value.
protocol StringEnumReadable: JSONReadable, RawRepresentable where RawValue == String {}

extension StringEnumReadable {
    static func read(from reader: inout JSONReader) throws -> Self {
        let text = try reader.readString()
        guard let value = Self(rawValue: text) else { throw reader.mismatch(Self.self, "\(text.debugDescription)") }
        return value
    }
}

extension String: JSONReadable {
    static func read(from reader: inout JSONReader) throws -> String { try reader.readString() }
}

extension Bool: JSONReadable {
    static func read(from reader: inout JSONReader) throws -> Bool {
        if reader.readLiteral("true") { return true }
        if reader.readLiteral("false") { return false }
        throw reader.mismatch(Bool.self, "not true or false")
    }
}

extension Int: JSONReadable {
    static func read(from reader: inout JSONReader) throws -> Int { try reader.readInteger(Int.self) }
}

extension UInt64: JSONReadable {
    static func read(from reader: inout JSONReader) throws -> UInt64 { try reader.readInteger(UInt64.self) }
}

extension Array: JSONReadable where Element: Decodable {
    static func read(from reader: inout JSONReader) throws -> [Element] {
        var items: [Element] = []
        try reader.enter("[", Self.self)
        // One cast for every item.
        guard let readable = Element.self as? JSONReadable.Type else {
            while try reader.next("]") { items.append(try reader.read(Element.self)) }
            return items
        }
        while try reader.next("]") {
            reader.skipSpace()
            items.append(try readable.read(from: &reader) as! Element)
        }
        return items
    }
}

extension JSONValue: JSONReadable {
    /// Any value, as `JSONValue(from:)` reads it: a whole number that fits in
    /// Int64 is `.integer` (`1.0` and `1e3` too), any other number `.number`;
    /// a key given twice in an object is an error.
    static func read(from reader: inout JSONReader) throws -> JSONValue {
        reader.skipSpace()
        guard reader.offset < reader.bytes.count else { throw reader.corrupt("no value") }
        switch reader.bytes[reader.offset] {
        case UInt8(ascii: "\""): return .string(try reader.readString())
        case UInt8(ascii: "["): return .array(try [JSONValue].read(from: &reader))
        case UInt8(ascii: "{"):
            var members: [String: JSONValue] = [:]
            try reader.enter("{", [String: JSONValue].self)
            while try reader.next("}") {
                let key = try reader.readKey()
                guard members.updateValue(try read(from: &reader), forKey: key) == nil else {
                    throw reader.corrupt("the key \(key.debugDescription) twice")
                }
            }
            return .object(members)
        case UInt8(ascii: "t"), UInt8(ascii: "f"): return .bool(try Bool.read(from: &reader))
        case UInt8(ascii: "n"):
            guard reader.readLiteral("null") else { throw reader.corrupt("an invalid literal") }
            return .null
        default:
            let text = try reader.readNumber()
            if let integer = Int64(text) { return .integer(integer) }
            guard let number = Double(text) else { throw reader.corrupt("the number \(text)") }
            return Int64(exactly: number).map(JSONValue.integer) ?? .number(number)
        }
    }
}

extension Message.Role: StringEnumReadable {}
extension Status: StringEnumReadable {}

/// A reader of JSON text for the types of ferrule's results, events and hook
/// payloads: a transcript of 25,600 messages took `JSONDecoder` six times as
/// long as the run that made it. The generated types, strings, flags, counts,
/// `JSONValue`s and lists of them are read here; any other type from its JSON
/// text with `JSONDecoder`. Strict as `JSONDecoder` is: invalid JSON, invalid
/// UTF-8 in a string that is read, a missing field or a value of the wrong
/// type is a `DecodingError`; so is a key given twice, which `JSONDecoder`
/// would read as its first value (ferrule never writes one). A reader borrows
/// its bytes, which must outlive it and every `JSONFields` it makes, and is
/// used on one thread.
struct JSONReader {
    /// The JSON text, borrowed.
    let bytes: UnsafeRawBufferPointer
    private(set) var offset: Int
    /// How many arrays and objects hold the value read now.
    private var depth = 0
    /// As deep as `JSONDecoder` goes before it refuses.
    private static let maxDepth = 512

    init(bytes: UnsafeRawBufferPointer, offset: Int = 0) {
        self.bytes = bytes
        self.offset = offset
    }

    /// `reader` in the array or object it is in (as deep), moved to `offset`:
    /// to a value of it, or past one read elsewhere.
    init(continuing reader: JSONReader, at offset: Int) {
        self = reader
        self.offset = offset
    }

    /// Decodes one `T`, the whole of `data`.
    static func decode<T: Decodable>(_ type: T.Type, from data: Data) throws -> T {
        try data.withUnsafeBytes { try decode(T.self, from: $0) }
    }

    /// Decodes one `T`, the whole of `bytes`.
    static func decode<T: Decodable>(_ type: T.Type, from bytes: UnsafeRawBufferPointer) throws -> T {
        try whole(bytes) { try $0.read(T.self) }
    }

    /// Decodes one `T` the reader builds itself, the whole of `bytes`.
    static func decode<T: JSONReadable>(_ type: T.Type, from bytes: UnsafeRawBufferPointer) throws -> T {
        try whole(bytes) { try T.read(from: &$0) }
    }

    /// The one value `read` reads, which must be the whole of `bytes`.
    private static func whole<T>(_ bytes: UnsafeRawBufferPointer, _ read: (inout JSONReader) throws -> T) throws -> T {
        var reader = JSONReader(bytes: bytes)
        reader.skipSpace()
        let value = try read(&reader)
        reader.skipSpace()
        guard reader.offset == bytes.count else { throw reader.corrupt("text after the JSON value") }
        return value
    }

    /// Reads one `T` here.
    mutating func read<T: Decodable>(_ type: T.Type) throws -> T {
        skipSpace()
        if T.self == String.self { return try readString() as! T }
        if let readable = T.self as? JSONReadable.Type { return try readable.read(from: &self) as! T }
        let start = offset
        try skipValue()
        return try JSONCoding.decode(T.self, from: Data(bytes[start..<offset]))
    }

    /// The object here, read field by field as its type asks for them; the
    /// reader goes on after it once `resume(after:)` is given them back.
    func fields<Key: CodingKey>(_ keys: Key.Type) throws -> JSONFields<Key> {
        var scanner = self
        try scanner.enter("{", [String: JSONValue].self)
        return JSONFields(scanner: scanner)
    }

    /// Reads the object here as a union told apart by a field (a part, an
    /// event) with `read`, which is given the object's fields and what reads
    /// the whole object as JSON (for a kind this package does not know).
    mutating func readUnion<Key: CodingKey, T>(
        _ keys: Key.Type, _ read: (JSONFields<Key>, () throws -> JSONValue) throws -> T
    ) throws -> T {
        let start = offset
        let fields = try self.fields(Key.self)
        let reader = self
        let value = try read(fields) {
            var whole = JSONReader(continuing: reader, at: start)
            return try JSONValue.read(from: &whole)
        }
        try resume(after: fields)
        return value
    }

    /// Goes on after the object `fields` read, checking the rest of it.
    mutating func resume<Key>(after fields: JSONFields<Key>) throws {
        offset = try fields.end()
    }

    // MARK: Values

    /// Reads a string, unescaped.
    mutating func readString() throws -> String {
        skipSpace()
        guard take(UInt8(ascii: "\"")) else { throw mismatch(String.self, "not a string") }
        let start = offset
        var ascii = true
        while offset < bytes.count {
            let byte = bytes[offset]
            if byte == UInt8(ascii: "\"") {
                let text = UnsafeRawBufferPointer(rebasing: bytes[start..<offset])
                offset += 1
                return try string(text, ascii: ascii)
            }
            if byte == UInt8(ascii: "\\") { return try readEscapedString(from: start) }
            if byte < 0x20 { throw corrupt("a control character in a string") }
            if byte >= 0x80 { ascii = false }
            offset += 1
        }
        throw corrupt("a string without its end")
    }

    /// Reads an object's key and the colon after it when the key is plain
    /// ASCII without escapes (as ferrule writes every key): where its text
    /// is. Nil, having read nothing, for any other key (`readKey` reads it).
    mutating func readPlainKey() throws -> Range<Int>? {
        skipSpace()
        guard offset < bytes.count, bytes[offset] == UInt8(ascii: "\"") else { return nil }
        var end = offset + 1
        while end < bytes.count {
            let byte = bytes[end]
            if byte == UInt8(ascii: "\"") { break }
            if byte == UInt8(ascii: "\\") || byte < 0x20 || byte >= 0x80 { return nil }
            end += 1
        }
        guard end < bytes.count else { return nil }
        let key = offset + 1..<end
        offset = end + 1
        skipSpace()
        guard take(UInt8(ascii: ":")) else { throw corrupt("no ':' after a key") }
        return key
    }

    /// Reads an object's key and the colon after it.
    mutating func readKey() throws -> String {
        let key = try readString()
        skipSpace()
        guard take(UInt8(ascii: ":")) else { throw corrupt("no ':' after a key") }
        return key
    }

    /// The rest of a string from `start` (its first byte), which has escapes.
    private mutating func readEscapedString(from start: Int) throws -> String {
        var text: [UInt8] = []
        text.reserveCapacity(offset - start + 64)
        var plain = start
        while offset < bytes.count {
            let byte = bytes[offset]
            if byte != UInt8(ascii: "\\"), byte != UInt8(ascii: "\""), byte >= 0x20 {
                offset += 1
                continue
            }
            text.append(contentsOf: bytes[plain..<offset])
            offset += 1
            defer { plain = offset }
            switch byte {
            case UInt8(ascii: "\""):
                return try text.withUnsafeBytes { try string($0, ascii: !$0.contains { $0 >= 0x80 }) }
            case UInt8(ascii: "\\"):
                guard offset < bytes.count else { break }
                let escape = bytes[offset]
                offset += 1
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): text.append(escape)
                case UInt8(ascii: "b"): text.append(0x08)
                case UInt8(ascii: "f"): text.append(0x0C)
                case UInt8(ascii: "n"): text.append(0x0A)
                case UInt8(ascii: "r"): text.append(0x0D)
                case UInt8(ascii: "t"): text.append(0x09)
                case UInt8(ascii: "u"): text.append(contentsOf: String(try readEscapedScalar()).utf8)
                default: throw corrupt("an invalid escape in a string")
                }
            default: throw corrupt("a control character in a string")
            }
        }
        throw corrupt("a string without its end")
    }

    /// The scalar of a `\u` escape (after its `\u`), a surrogate pair's from both escapes.
    private mutating func readEscapedScalar() throws -> Character {
        let first = try readHex4()
        var value = UInt32(first)
        if (0xD800..<0xDC00).contains(first) {
            guard take(UInt8(ascii: "\\")), take(UInt8(ascii: "u")) else { throw corrupt("a lone surrogate") }
            let second = try readHex4()
            guard (0xDC00..<0xE000).contains(second) else { throw corrupt("a lone surrogate") }
            value = 0x10000 + (UInt32(first - 0xD800) << 10) + UInt32(second - 0xDC00)
        }
        guard let scalar = Unicode.Scalar(value) else { throw corrupt("a lone surrogate") }
        return Character(scalar)
    }

    private mutating func readHex4() throws -> UInt16 {
        guard offset + 4 <= bytes.count else { throw corrupt("an invalid \\u escape") }
        let digits = UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + 4])
        guard !digits.contains(where: { $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "-") }),
            let value = UInt16(String(decoding: digits, as: UTF8.self), radix: 16)
        else { throw corrupt("an invalid \\u escape") }
        offset += 4
        return value
    }

    /// `text` as a string; bytes that are not UTF-8 are an error.
    private func string(_ text: UnsafeRawBufferPointer, ascii: Bool) throws -> String {
        if ascii { return String(decoding: text, as: UTF8.self) }
        guard let string = String(bytes: text, encoding: .utf8) else { throw corrupt("a string that is not UTF-8") }
        return string
    }

    /// Reads `literal` (`true`, `false`, `null`) if it is next.
    mutating func readLiteral(_ literal: StaticString) -> Bool {
        skipSpace()
        let count = literal.utf8CodeUnitCount
        guard offset + count <= bytes.count, memcmp(bytes.baseAddress! + offset, literal.utf8Start, count) == 0
        else { return false }
        offset += count
        return true
    }

    /// A whole number: written whole, or as a number with no fraction (`1.0`, `1e3`), as `JSONDecoder` reads it.
    mutating func readInteger<T: FixedWidthInteger>(_ type: T.Type) throws -> T {
        skipSpace()
        if let value = readDigits(T.self) { return value }
        let text = try readNumber()
        if let value = T(text) { return value }
        guard let number = Double(text), let value = T(exactly: number) else { throw mismatch(T.self, text) }
        return value
    }

    /// The number here when it is written as up to 18 digits alone (as most
    /// are), read in place; nil, having read nothing, for any other number
    /// or one that is no `T`.
    private mutating func readDigits<T: FixedWidthInteger>(_ type: T.Type) -> T? {
        // 18 digits are under 2^63: the sum cannot overflow.
        var end = offset
        var value: Int64 = 0
        while end < bytes.count, end - offset < 18 {
            let digit = bytes[end] &- UInt8(ascii: "0")
            guard digit < 10 else { break }
            value = value * 10 + Int64(digit)
            end += 1
        }
        let count = end - offset
        guard count > 0, count == 1 || bytes[offset] != UInt8(ascii: "0") else { return nil }
        if end < bytes.count {
            switch bytes[end] {
            case UInt8(ascii: "."), UInt8(ascii: "e"), UInt8(ascii: "E"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                return nil
            default: break
            }
        }
        guard let integer = T(exactly: value) else { return nil }
        offset = end
        return integer
    }

    /// The text of the number here.
    mutating func readNumber() throws -> String {
        skipSpace()
        let start = offset
        try skipNumber()
        return String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<offset]), as: UTF8.self)
    }

    // MARK: Structure

    /// Enters an array or object opening with `open`; for an array, it is
    /// iterated with `next("]")`, for an object with `next("}")`.
    mutating func enter<T>(_ open: Unicode.Scalar, _ type: T.Type) throws {
        skipSpace()
        guard take(UInt8(ascii: open)) else { throw mismatch(T.self, "not \(open == "[" ? "an array" : "an object")") }
        depth += 1
        guard depth <= Self.maxDepth else { throw corrupt("more than \(Self.maxDepth) levels of arrays and objects") }
        first = true
    }

    /// Whether the array or object entered has another value (after its comma); false at its end.
    mutating func next(_ close: Unicode.Scalar) throws -> Bool {
        skipSpace()
        if take(UInt8(ascii: close)) {
            depth -= 1
            first = false
            return false
        }
        if first {
            first = false
        } else {
            guard take(UInt8(ascii: ",")) else { throw corrupt("no ',' or '\(close)' after a value") }
        }
        return true
    }

    /// Whether `next` is at the first value of what was entered last.
    private var first = false

    /// Passes over one value, checking it is JSON.
    mutating func skipValue() throws {
        skipSpace()
        guard offset < bytes.count else { throw corrupt("no value") }
        switch bytes[offset] {
        case UInt8(ascii: "\""): try skipString()
        case UInt8(ascii: "["):
            try enter("[", [JSONValue].self)
            while try next("]") { try skipValue() }
        case UInt8(ascii: "{"):
            try enter("{", [String: JSONValue].self)
            while try next("}") {
                skipSpace()
                guard offset < bytes.count, bytes[offset] == UInt8(ascii: "\"") else {
                    throw corrupt("a key that is not a string")
                }
                try skipString()
                skipSpace()
                guard take(UInt8(ascii: ":")) else { throw corrupt("no ':' after a key") }
                try skipValue()
            }
        case UInt8(ascii: "t"): guard readLiteral("true") else { throw corrupt("an invalid literal") }
        case UInt8(ascii: "f"): guard readLiteral("false") else { throw corrupt("an invalid literal") }
        case UInt8(ascii: "n"): guard readLiteral("null") else { throw corrupt("an invalid literal") }
        default: try skipNumber()
        }
    }

    /// Passes over a string (its opening quote next), checking its escapes;
    /// its UTF-8 is checked when it is read.
    private mutating func skipString() throws {
        offset += 1
        while offset < bytes.count {
            let byte = bytes[offset]
            offset += 1
            switch byte {
            case UInt8(ascii: "\""): return
            case UInt8(ascii: "\\"):
                guard offset < bytes.count else { break }
                let escape = bytes[offset]
                offset += 1
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
                    UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                    break
                case UInt8(ascii: "u"): _ = try readEscapedScalar()
                default: throw corrupt("an invalid escape in a string")
                }
            case ..<0x20: throw corrupt("a control character in a string")
            default: break
            }
        }
        throw corrupt("a string without its end")
    }

    /// Passes over a number: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`.
    private mutating func skipNumber() throws {
        _ = take(UInt8(ascii: "-"))
        if take(UInt8(ascii: "0")) {
        } else if skipDigits() == 0 {
            throw corrupt("an invalid value")
        }
        if take(UInt8(ascii: ".")), skipDigits() == 0 { throw corrupt("a number without digits after its '.'") }
        if take(UInt8(ascii: "e")) || take(UInt8(ascii: "E")) {
            if !take(UInt8(ascii: "+")) { _ = take(UInt8(ascii: "-")) }
            if skipDigits() == 0 { throw corrupt("a number without digits in its exponent") }
        }
    }

    private mutating func skipDigits() -> Int {
        let start = offset
        while offset < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[offset]) { offset += 1 }
        return offset - start
    }

    /// Passes over JSON's white space.
    mutating func skipSpace() {
        while offset < bytes.count {
            switch bytes[offset] {
            case 0x20, 0x0A, 0x0D, 0x09: offset += 1
            default: return
            }
        }
    }

    /// The next byte, if there is one (after any space).
    mutating func peek() -> UInt8? {
        skipSpace()
        return offset < bytes.count ? bytes[offset] : nil
    }

    /// Takes `byte` if it is next.
    mutating func take(_ byte: UInt8) -> Bool {
        guard offset < bytes.count, bytes[offset] == byte else { return false }
        offset += 1
        return true
    }

    // MARK: Errors

    /// The error for text that is not JSON: `what` was found here.
    func corrupt(_ what: String) -> DecodingError {
        .dataCorrupted(.init(codingPath: [], debugDescription: "The JSON has \(what) at byte \(offset)."))
    }

    /// The error for a value that is not a `T`: `what` was found here.
    func mismatch<T>(_ type: T.Type, _ what: String) -> DecodingError {
        let description = "Expected \(T.self) at byte \(offset), found \(what)."
        return .typeMismatch(T.self, .init(codingPath: [], debugDescription: description))
    }
}

/// The fields of one JSON object, read as they are asked for: the object is
/// scanned up to the key asked for, passing over the values before it, so
/// a type that asks for its fields in the order ferrule writes them reads
/// each value once. Keys are compared as UTF-8 where they are in the text
/// (no string is made for a key without escapes). A key given twice is an
/// error. Valid while the reader's bytes are.
final class JSONFields<Key: CodingKey>: FieldReader {
    /// A key found: where its text is and where its value starts.
    private struct FoundKey {
        /// The key's UTF-8: `count` bytes from `start` in the JSON, or in
        /// `unescapedKeys` for a key written with escapes or beyond ASCII.
        var start: Int
        var count: Int
        var unescaped: Bool
        /// Where its value starts in the JSON.
        var value: Int
    }

    // Only this object's own methods touch these, one at a time: no access
    // needs checking at run time.
    /// In the object, at the value of the last key found, or after it.
    @exclusivity(unchecked) private var scanner: JSONReader
    @exclusivity(unchecked) private var found: [FoundKey] = []
    /// The UTF-8 of the keys that are not as they are written.
    @exclusivity(unchecked) private var unescapedKeys: [UInt8] = []
    /// Whether `scanner` is at the value of the last key found.
    @exclusivity(unchecked) private var atValue = false
    @exclusivity(unchecked) private var ended = false
    /// The keys found, once there are many.
    @exclusivity(unchecked) private var manyKeys: Set<[UInt8]>?

    init(scanner: JSONReader) {
        self.scanner = scanner
        found.reserveCapacity(8)
    }

    /// Reads the value of `key` with `read`; nil when the object has no such key.
    private func value<T>(_ key: Key, _ read: (inout JSONReader) throws -> T) throws -> T? {
        guard let index = try index(of: key) else { return nil }
        var reader = JSONReader(continuing: scanner, at: found[index].value)
        let value = try read(&reader)
        if atValue, index == found.count - 1 {
            scanner = JSONReader(continuing: scanner, at: reader.offset)
            atValue = false
        }
        return value
    }

    private func index(of key: Key) throws -> Int? {
        var name = key.stringValue
        return try name.withUTF8 { utf8 in
            let name = UnsafeRawBufferPointer(utf8)
            for index in found.indices.reversed() where isKey(found[index], name) { return index }
            while try scanKey() {
                if isKey(found[found.count - 1], name) { return found.count - 1 }
            }
            return nil
        }
    }

    /// Finds the next key, passing over the value of the one before; false at the object's end.
    private func scanKey() throws -> Bool {
        if ended { return false }
        if atValue { try scanner.skipValue() }
        atValue = false
        guard try scanner.next("}") else {
            ended = true
            return false
        }
        var key: FoundKey
        if let written = try scanner.readPlainKey() {
            key = FoundKey(start: written.lowerBound, count: written.count, unescaped: false, value: 0)
        } else {
            let text = try scanner.readKey()
            key = FoundKey(start: unescapedKeys.count, count: text.utf8.count, unescaped: true, value: 0)
            unescapedKeys.append(contentsOf: text.utf8)
        }
        scanner.skipSpace()
        key.value = scanner.offset
        if try isRepeated(key) { throw scanner.corrupt("the key \(string(of: key).debugDescription) twice") }
        found.append(key)
        atValue = true
        return true
    }

    /// Whether `key` was found before, as the same UTF-8 (names compare code
    /// point by code point, as JSON's do): by comparing it with each key found
    /// for the few keys of a type's object, by a set once an object has many
    /// (unknown) keys.
    private func isRepeated(_ key: FoundKey) throws -> Bool {
        if found.count < 16 {
            return withBytes(of: key) { name in found.contains { isKey($0, name) } }
        }
        if manyKeys == nil { manyKeys = Set(found.map { withBytes(of: $0) { Array($0) } }) }
        return manyKeys?.insert(withBytes(of: key) { Array($0) }).inserted == false
    }

    /// Whether the UTF-8 of `key` is `name`.
    private func isKey(_ key: FoundKey, _ name: UnsafeRawBufferPointer) -> Bool {
        key.count == name.count
            && (name.isEmpty || withBytes(of: key) { memcmp($0.baseAddress!, name.baseAddress!, name.count) == 0 })
    }

    /// Calls `body` with the UTF-8 of `key`.
    private func withBytes<R>(of key: FoundKey, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        let range = key.start..<key.start + key.count
        if key.unescaped {
            return try unescapedKeys.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[range])) }
        }
        return try body(UnsafeRawBufferPointer(rebasing: scanner.bytes[range]))
    }

    private func string(of key: FoundKey) -> String {
        withBytes(of: key) { String(decoding: $0, as: UTF8.self) }
    }

    /// Where the object ends, after checking the rest of it.
    func end() throws -> Int {
        while try scanKey() {}
        return scanner.offset
    }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        guard let value = try value(key, { try $0.read(T.self) }) else { throw missing(key) }
        return value
    }

    func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
        try value(key) { $0.readLiteral("null") ? nil : try $0.read(T.self) } ?? nil
    }

    func decode<T: JSONReadable>(_ type: T.Type, forKey key: Key) throws -> T {
        guard let value = try value(key, { try T.read(from: &$0) }) else { throw missing(key) }
        return value
    }

    func decodeIfPresent<T: JSONReadable>(_ type: T.Type, forKey key: Key) throws -> T? {
        try value(key) { $0.readLiteral("null") ? nil : try T.read(from: &$0) } ?? nil
    }

    func decodeContent(forKey key: Key) throws -> [Part] {
        try value(key) { reader -> [Part] in
            if reader.readLiteral("null") { return [] }
            if reader.peek() == UInt8(ascii: "\"") { return Part.parts(try reader.readString()) }
            return try [Part].read(from: &reader)
        } ?? []
    }

    private func missing(_ key: Key) -> DecodingError {
        .keyNotFound(key, .init(codingPath: [], debugDescription: "No value for \(key.stringValue)."))
    }
}
