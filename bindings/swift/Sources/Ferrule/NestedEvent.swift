import Foundation

extension Event: Decodable {
    /// Reads an event inside another (the one an `.agentEvent` carries) as
    /// `init(json:)` reads any: one that does not decode is `.unknown`.
    public init(from decoder: Decoder) throws {
        let value = try JSONValue(from: decoder)
        self.init(json: try JSONCoding.encode(value))
    }
}
