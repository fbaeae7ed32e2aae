import CFerrule
import Foundation

/// A run of an agent. Read its events with `for await event in run.events`
/// and its outcome with `try await run.result`. Cancel it with `cancel()`, by
/// cancelling a task that awaits `result` or reads `events`, or by releasing
/// the `Run` while the run goes on (as freeing the last C handle does).
public final class Run: Sendable {
    /// The run's id ("run-7"), as ferrule's logs name it.
    public let id: String
    /// The run's events in order, ending after `.runEnd`. One reader at a
    /// time; the events wait in memory until read or until the `Run` is
    /// released. Cancelling the task reading them cancels the run; breaking out
    /// of the loop does not (read on later, or await `result`).
    public let events: EventStream
    private let handle: RunHandle
    private let sink: EventSink

    init(agent: OpaquePointer, input: String) throws {
        let (events, continuation) = AsyncStream.makeStream(of: EventSink.Delivered.self)
        let sink = EventSink(continuation)
        let box = retainedBox(sink)
        var run: OpaquePointer?
        let error = withUTF8Arg(input) { text, length in
            FerruleError.take(ferrule_agent_start(agent, text, length, EventSink.deliver, box, EventSink.finish, &run))
        }
        if let error {
            releaseUnused(box)
            throw error
        }
        guard let run else { throw FerruleError(code: .nullArg, message: "no run") }
        let handle = RunHandle(run)
        continuation.onTermination = { termination in
            if case .cancelled = termination { handle.cancel() }
        }
        self.id = String(borrowed: ferrule_run_id(run))
        self.events = EventStream(events, sink: sink)
        self.handle = handle
        self.sink = sink
    }

    /// Releasing the `Run` of a live run cancels it (the run still ends
    /// properly, and an awaited `result` still arrives).
    deinit { handle.cancel() }

    /// The run's outcome, once it has ended: for every status (a failed run has
    /// its error inside). Cancelling the awaiting task cancels the run; the
    /// result then has status `cancelled`. Throws only when the result JSON
    /// cannot be read.
    public var result: RunResult {
        get async throws {
            try await withTaskCancellationHandler {
                try await sink.result()
            } onCancel: { [handle] in
                handle.cancel()
            }
        }
    }

    /// Cancels the run: running tools' tasks are cancelled, nothing new starts,
    /// and the run ends `cancelled` (unless it already ended). Never blocks.
    public func cancel() { handle.cancel() }

    /// Queues a user or system message into the live run: it enters the
    /// transcript before the next model request (never between a call and its
    /// result), marked as an injection. Throws `alreadyCompleted` once the run
    /// is over. Never blocks.
    public func inject(_ message: Message) throws {
        HandOff.publish()
        try withUTF8Arg(JSONCoding.text(message)) { try FerruleError.check(ferrule_run_inject(handle.pointer, $0, $1)) }
    }
}

/// One owned `ferrule_run` handle, freed with the last reference.
final class RunHandle: Sendable {
    nonisolated(unsafe) let pointer: OpaquePointer

    init(_ pointer: OpaquePointer) { self.pointer = pointer }

    deinit { ferrule_run_free(pointer) }

    func cancel() { ferrule_run_cancel(pointer) }
}

/// Where a run's events go: the stream, and the result for `Run.result`.
/// ferrule holds it (as the event callback's `user_data`) until the run has
/// ended. Events are decoded on ferrule's event thread once the stream has a
/// reader, and by the reader for those delivered before; a run nobody reads
/// decodes only its result.
final class EventSink: Sendable {
    /// An event as the stream holds it.
    enum Delivered: Sendable {
        case json(Data)
        case decoded(Event)
    }

    private struct State {
        var hasReader = false
        /// The last event delivered, `run_end` once the run has ended: as JSON,
        /// or its result when it was decoded already.
        var last: Data?
        var ended: RunResult?
        var outcome: Result<RunResult, Error>?
        var waiters: [CheckedContinuation<RunResult, Error>] = []
    }

    private let continuation: AsyncStream<Delivered>.Continuation
    private let state = Locked(State())

    init(_ continuation: AsyncStream<Delivered>.Continuation) { self.continuation = continuation }

    /// The stream has a reader from now on.
    func startReading() { state.withLock { $0.hasReader = true } }

    /// ferrule's event callback: one event at a time, in order, on an event thread.
    static let deliver: ferrule_event_fn = { userData, json, length in
        guard let sink = unbox(userData, as: EventSink.self), let json else { return }
        sink.receive(Data(UnsafeRawBufferPointer(start: json, count: length)))
    }

    private func receive(_ json: Data) {
        guard state.withLock({ $0.hasReader }) else {
            state.withLock { $0.last = json }
            continuation.yield(.json(json))
            return
        }
        let event = Event(json: json)
        state.withLock { state in
            state.last = json
            if case .runEnd(_, let result) = event { state.ended = result }
        }
        continuation.yield(.decoded(event))
    }

    /// ferrule's `free_user_data`: it runs once, right after `run_end` (the
    /// last event), on the same thread. The result is that event's.
    static let finish: ferrule_free_fn = { userData in
        guard let userData, let sink = unbox(userData, as: EventSink.self) else { return }
        sink.end()
        releaseUnused(userData)
    }

    private func end() {
        let (last, ended) = state.withLock { ($0.last ?? Data(), $0.ended) }
        let outcome: Result<RunResult, Error> = Result {
            try ended ?? JSONCoding.decode(RunEnd.self, from: last).result
        }.mapError { error in
            FerruleError(code: .invalidJSON, message: "the run_end event did not decode: \(error)")
        }
        let waiters = state.withLock { state in
            state.outcome = outcome
            defer { state.waiters = [] }
            return state.waiters
        }
        continuation.finish()
        for waiter in waiters { waiter.resume(with: outcome) }
    }

    /// The result in a `run_end` event.
    private struct RunEnd: Decodable { let result: RunResult }

    func result() async throws -> RunResult {
        try await withCheckedThrowingContinuation { waiter in
            let outcome: Result<RunResult, Error>? = state.withLock { state in
                if state.outcome == nil { state.waiters.append(waiter) }
                return state.outcome
            }
            if let outcome { waiter.resume(with: outcome) }
        }
    }
}

/// A run's events: `for await event in run.events`. It ends after `.runEnd`.
/// Events are decoded from their JSON once read (those delivered before the
/// first read wait as JSON), so a run nobody reads pays no decoding.
public struct EventStream: AsyncSequence, Sendable {
    public typealias Element = Event
    private let delivered: AsyncStream<EventSink.Delivered>
    private let sink: EventSink

    init(_ delivered: AsyncStream<EventSink.Delivered>, sink: EventSink) {
        self.delivered = delivered
        self.sink = sink
    }

    public func makeAsyncIterator() -> Iterator {
        sink.startReading()
        return Iterator(delivered: delivered.makeAsyncIterator())
    }

    public struct Iterator: AsyncIteratorProtocol {
        var delivered: AsyncStream<EventSink.Delivered>.Iterator

        public mutating func next() async -> Event? {
            switch await delivered.next() {
            case .json(let data): Event(json: data)
            case .decoded(let event): event
            case nil: nil
            }
        }
    }
}
