import CFerrule
import Foundation

/// A run of an agent. Read its events with `for await event in run.events`
/// and its outcome with `try await run.result`. Cancel it with `cancel()`, by
/// cancelling a task that awaits `result` or reads `events`, or by releasing
/// the `Run` and its `events` while the run goes on (as freeing the last C
/// handle does).
public final class Run: Sendable {
    /// The run's id ("run-7"), as ferrule's logs name it.
    public let id: String
    /// The run's events in order, ending after `.runEnd`. One reader at a
    /// time; the events wait in memory until read or until the `Run` is
    /// released. Cancelling the task reading them cancels the run and ends the
    /// stream for good (a later reader sees no events, not even `.runEnd`; the
    /// outcome is in `result`); breaking out of the loop does neither (read on
    /// later, or await `result`).
    public let events: EventStream
    private let handle: RunHandle
    private let sink: EventSink

    init(agent: OpaquePointer, input: String) throws {
        let (events, continuation) = AsyncStream.makeStream(of: EventSink.Delivered.self)
        let sink = EventSink(continuation)
        var run: OpaquePointer?
        let error = withUTF8Arg(input) { text, length in
            handOver(sink) { ferrule_agent_start(agent, text, length, EventSink.deliver, $0, EventSink.finish, &run) }
        }
        if let error { throw error }
        guard let run else { throw FerruleError(code: .nullArg, message: "no run") }
        let handle = RunHandle(run)
        // The stream ends early when its reader's task is cancelled, or when it
        // is released with the Run: then the run is cancelled.
        continuation.onTermination = { termination in
            if case .cancelled = termination { handle.cancel() }
        }
        sink.attach(handle)
        self.id = String(borrowed: ferrule_run_id(run))
        self.events = EventStream(events, sink: sink)
        self.handle = handle
        self.sink = sink
    }

    /// The run's outcome, once it has ended and let go of the host's tools,
    /// hooks and event callback (as `ferrule_run_wait`): for every status (a
    /// failed run has its error inside). Cancelling the awaiting task cancels the
    /// run; the result then has status `cancelled`. Throws only when the result
    /// JSON cannot be read.
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
        let json = try JSONCoding.text(message)
        HandOff.publish()
        try withUTF8Arg(json) { try FerruleError.check(ferrule_run_inject(handle.pointer, $0, $1)) }
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
    /// A burst of events (or one event) as the stream holds it.
    enum Delivered: Sendable {
        case json(Data)
        case decoded([Event])
    }

    private struct State {
        var reading = false
        /// Events of bursts delivered to a reader and not read yet: a reader
        /// that stops leaves them to the next.
        var pending: ArraySlice<Event> = []
        /// The result of a `run_end` decoded on the event thread (a reader was
        /// there when it came).
        var ended: RunResult?
        /// The run's handle, until the result is known.
        var handle: RunHandle?
        /// The last event was delivered and ferrule let go of this sink.
        var finished = false
        var outcome: Result<RunResult, Error>?
        var waiters: [CheckedContinuation<RunResult, Error>] = []
    }

    private let continuation: AsyncStream<Delivered>.Continuation
    private let state = Locked(State())

    init(_ continuation: AsyncStream<Delivered>.Continuation) { self.continuation = continuation }

    /// Starts a reader; false when another is reading.
    func startReading() -> Bool {
        state.withLock { state in
            defer { state.reading = true }
            return !state.reading
        }
    }

    /// Keeps a burst's events for the reader (after any left of the last).
    func keepBurst(_ events: [Event]) { state.withLock { $0.pending.append(contentsOf: events) } }

    /// The next event of the bursts kept, if any; the events read are let go.
    func nextOfBurst() -> Event? {
        state.withLock { state in
            defer { if state.pending.isEmpty { state.pending = [] } }
            return state.pending.popFirst()
        }
    }

    /// The reader is gone; another may start.
    func stopReading() { state.withLock { $0.reading = false } }

    /// ferrule's event callback: one burst of events at a time, in order, on an event thread.
    static let deliver: ferrule_event_fn = { userData, json, length in
        guard let sink = unbox(userData, as: EventSink.self), let json else { return }
        sink.receive(Data(UnsafeRawBufferPointer(start: json, count: length)))
    }

    private func receive(_ json: Data) {
        guard state.withLock({ $0.reading }) else {
            continuation.yield(.json(json))
            return
        }
        let events = Event.events(json: json)
        if case .runEnd(_, let result, _) = events.last { state.withLock { $0.ended = result } }
        continuation.yield(.decoded(events))
    }

    /// ferrule's `free_user_data`: it runs once, right after `run_end` (the
    /// last event), on the same thread.
    static let finish: ferrule_free_fn = { userData in
        guard let userData, let sink = unbox(userData, as: EventSink.self) else { return }
        sink.continuation.finish()
        let handle = sink.state.withLock { state in
            state.finished = true
            return state.handle
        }
        if let handle { sink.settle(handle) }
        releaseBox(userData)
    }

    /// Gives the sink the run's handle, once `ferrule_agent_start` returned it.
    func attach(_ handle: RunHandle) {
        let finished = state.withLock { state in
            state.handle = handle
            return state.finished
        }
        if finished { settle(handle) }
    }

    /// Reads the result with `ferrule_run_wait`, which returns once the run let
    /// go of the host's user data: at once or nearly, since the run has ended,
    /// but it may not be called on ferrule's callback threads, so a dispatch
    /// thread does it. A result decoded from `run_end` is not asked for again
    /// (ferrule would serialize it again): the call then only waits. Then
    /// wakes every waiter.
    private func settle(_ handle: RunHandle) {
        DispatchQueue.global().async { [self] in
            var text: UnsafeMutablePointer<CChar>?
            var length = 0
            let outcome: Result<RunResult, Error>
            let ended = state.withLock { $0.ended }
            var refused = ended == nil ? nil : FerruleError.take(ferrule_run_wait(handle.pointer, nil, nil))
            if ended == nil || refused?.code == .nullArg {
                // No result yet, or a libferrule older than the wait without the text.
                refused = FerruleError.take(ferrule_run_wait(handle.pointer, &text, &length))
            }
            if let error = refused {
                outcome = .failure(error)
            } else if let ended {
                outcome = .success(ended)
            } else {
                let json = UnsafeRawBufferPointer(start: text, count: length)
                outcome = Result { try JSONReader.decode(RunResult.self, from: json) }.mapError { error in
                    FerruleError(code: .invalidJSON, message: "the run result did not decode: \(error)")
                }
            }
            ferrule_string_free(text)
            let waiters = state.withLock { state in
                state.outcome = outcome
                state.handle = nil
                defer { state.waiters = [] }
                return state.waiters
            }
            for waiter in waiters { waiter.resume(with: outcome) }
        }
    }

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
/// first read wait as JSON), so a run nobody reads pays no decoding. One
/// reader at a time: a second iterator made while the first is alive ends at
/// once.
public struct EventStream: AsyncSequence, Sendable {
    public typealias Element = Event
    private let delivered: AsyncStream<EventSink.Delivered>
    private let sink: EventSink

    init(_ delivered: AsyncStream<EventSink.Delivered>, sink: EventSink) {
        self.delivered = delivered
        self.sink = sink
    }

    public func makeAsyncIterator() -> Iterator {
        guard sink.startReading() else { return Iterator(delivered: nil, reader: nil) }
        return Iterator(delivered: delivered.makeAsyncIterator(), reader: Reader(sink))
    }

    public struct Iterator: AsyncIteratorProtocol {
        var delivered: AsyncStream<EventSink.Delivered>.Iterator?
        let reader: Reader?

        public mutating func next() async -> Event? {
            guard let reader else { return nil }
            while true {
                if let event = reader.sink.nextOfBurst() { return event }
                switch await delivered?.next() {
                case .json(let data): reader.sink.keepBurst(Event.events(json: data))
                case .decoded(let events): reader.sink.keepBurst(events)
                case nil: return nil
                }
            }
        }
    }

    /// Marks the stream read while an iterator lives.
    final class Reader: Sendable {
        let sink: EventSink

        init(_ sink: EventSink) { self.sink = sink }

        deinit { sink.stopReading() }
    }
}
