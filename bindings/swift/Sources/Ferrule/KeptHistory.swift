import CFerrule
import Foundation

// A typed `turn_start` hook is registered for the new messages alone
// (`"history": "new"`): each payload carries the messages added since the
// hook's last `turn_start` payload in the run, from index `messages_from`, and
// the hook keeps the history it was given for the run (in the consultation's
// run state, which ferrule frees when the run ends). Its payload's `messages`
// is the whole history all the same, each message decoded once, so a
// consultation costs the same at the thousandth turn as at the first.

/// A consultation, live until it is responded to: what a hook's body needs
/// of it besides the payload.
struct Consulted: @unchecked Sendable {
    /// Used only before the response, on the thread that responds.
    let handle: OpaquePointer
}

/// The history one hook has been given in one run.
final class KeptHistory: @unchecked Sendable {
    private let lock = NSLock()
    /// Guarded by `lock`.
    private var messages: [Message] = []

    /// Where a payload's messages start: absent for a hook registered
    /// without the history. Read by `JSONReader` itself, which skips the rest.
    private struct Start: ObjectReadable {
        let messagesFrom: Int?

        enum CodingKeys: String, CodingKey {
            case messagesFrom = "messages_from"
        }

        init(from decoder: Decoder) throws {
            try self.init(fields: decoder.container(keyedBy: CodingKeys.self))
        }

        init<Fields: FieldReader>(fields container: Fields) throws where Fields.Key == CodingKeys {
            messagesFrom = try container.decodeIfPresent(Int.self, forKey: .messagesFrom)
        }
    }

    /// Puts the whole history in `payload`, from the new messages it carries
    /// (`bytes` is its JSON) and those kept from the hook's earlier payloads in
    /// the run.
    static func complete(_ payload: inout TurnStartPayload, from bytes: UnsafeRawBufferPointer, _ consulted: Consulted)
        throws
    {
        let start: Start
        do {
            start = try JSONReader.decode(Start.self, from: bytes)
        } catch {
            throw FerruleError(code: .invalidJSON, message: "the turn_start payload did not decode: \(error)")
        }
        guard let from = start.messagesFrom else { return }
        payload.messages = try of(consulted).merge(from: from, payload.messages, count: payload.messageCount)
    }

    /// The history the consultation's hook keeps for its run, made on its
    /// first consultation in the run.
    private static func of(_ consulted: Consulted) throws -> KeptHistory {
        if let kept = unbox(ferrule_hook_run_state(consulted.handle), as: KeptHistory.self) { return kept }
        let kept = KeptHistory()
        if let error = handOver(kept, { ferrule_hook_set_run_state(consulted.handle, $0, releaseBox) }) {
            throw error
        }
        return kept
    }

    /// Puts `added` in place at index `from` and returns the whole history of
    /// `count` messages.
    private func merge(from: Int, _ added: [Message], count: Int) throws -> [Message] {
        lock.lock()
        defer { lock.unlock() }
        guard from >= 0, from <= messages.count else {
            throw FerruleError(
                code: .invalidJSON,
                message: "the turn_start payload's messages start at \(from), after the \(messages.count) kept")
        }
        messages.removeSubrange(from...)
        messages.append(contentsOf: added)
        guard messages.count == count else {
            throw FerruleError(
                code: .invalidJSON,
                message: "the history kept holds \(messages.count) messages, the payload says \(count)")
        }
        return messages
    }
}
