import CFerrule

// The C functions ferrule calls. Each finds its Swift object in `user_data`, an
// `Unmanaged` reference retained once when it was handed to ferrule and
// released once by `releaseBox` (ferrule's `free_user_data`) or, when the C
// call that would have taken it fails, by the caller.

/// Releases a reference passed with `Unmanaged.passRetained`.
let releaseBox: ferrule_free_fn = { userData in
    guard let userData else { return }
    Unmanaged<AnyObject>.fromOpaque(userData).release()
}

/// Passes `object` to C, retained; balance it with `releaseBox` or `releaseUnused`.
func retainedBox(_ object: AnyObject) -> UnsafeMutableRawPointer {
    Unmanaged.passRetained(object).toOpaque()
}

/// Releases a box C did not take (its call failed).
func releaseUnused(_ box: UnsafeMutableRawPointer) {
    Unmanaged<AnyObject>.fromOpaque(box).release()
}

/// The object behind a box, borrowed for the callback.
func unbox<T: AnyObject>(_ userData: UnsafeMutableRawPointer?, as type: T.Type) -> T? {
    guard let userData else { return nil }
    return Unmanaged<T>.fromOpaque(userData).takeUnretainedValue()
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
