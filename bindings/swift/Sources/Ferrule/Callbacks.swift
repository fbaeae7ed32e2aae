import CFerrule
import Foundation

// The C functions ferrule calls. Each finds its Swift object in `user_data`, an
// `Unmanaged` reference retained once when it was handed to ferrule and
// released once by `releaseBox` (ferrule's `free_user_data`) or, when the C
// call that would have taken it fails, by the caller.

/// Releases a reference passed with `Unmanaged.passRetained`.
let releaseBox: ferrule_free_fn = { userData in
    guard let userData else { return }
    HandOff.receive()
    Unmanaged<AnyObject>.fromOpaque(userData).release()
}

/// Hands `object` to the C function `call` as its `user_data`, to be freed with
/// `releaseBox`: retained once for C, and released again here when the call
/// fails (C did not take it then). Returns the call's error.
func handOver(_ object: AnyObject, _ call: (UnsafeMutableRawPointer) -> OpaquePointer?) -> FerruleError? {
    HandOff.publish()
    let box = Unmanaged.passRetained(object).toOpaque()
    guard let error = FerruleError.take(call(box)) else { return nil }
    Unmanaged<AnyObject>.fromOpaque(box).release()
    return error
}

/// The object behind a box, borrowed for the callback.
func unbox<T: AnyObject>(_ userData: UnsafeMutableRawPointer?, as type: T.Type) -> T? {
    guard let userData else { return nil }
    HandOff.receive()
    return Unmanaged<T>.fromOpaque(userData).takeUnretainedValue()
}

/// Makes hand-offs through ferrule visible to the thread sanitizer, which
/// cannot see ferrule's own synchronisation (Rust atomics and futexes, not
/// instrumented) and so would report every object one thread gives C and
/// another gets back in a callback. Each hand-over to C publishes and each
/// callback receives, through one lock. Compiled in only for sanitizer builds
/// (`-Xswiftc -DFERRULE_TSAN`, as `make test` passes); otherwise these are empty.
enum HandOff {
    #if FERRULE_TSAN
        private static let lock = NSLock()

        static func publish() {
            lock.lock()
            lock.unlock()
        }

        static func receive() { publish() }
    #else
        @inline(__always) static func publish() {}
        @inline(__always) static func receive() {}
    #endif
}

/// Cancels a task when ferrule stops waiting for its request (a tool call that
/// timed out or a hook in a cancelled run).
final class TaskCanceller: Sendable {
    private let task: Task<Void, Never>

    init(_ task: Task<Void, Never>) { self.task = task }

    static let onCancel: ferrule_cancel_fn = { userData in
        unbox(userData, as: TaskCanceller.self)?.task.cancel()
    }
}
