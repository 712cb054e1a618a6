import Foundation

/// A value guarded by a lock, shared between SQLite callbacks and callers
/// (and, across the package, between threads that are not tasks).
///
/// SQLite calls Ferry's SQL functions and busy handler synchronously on
/// whichever thread runs the statement, so an actor cannot guard this state.
/// `Mutex` from the Synchronization module would do, but needs macOS 15.
package final class Locked<Value: Sendable>: @unchecked Sendable {
    // @unchecked: `stored` is only read or written while `lock` is held.
    private let lock = NSLock()
    private var stored: Value

    package init(_ value: Value) {
        stored = value
    }

    package func withLock<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body(&stored)
    }

    /// The value now.
    package var value: Value { withLock { $0 } }

    /// Sets a new value and returns the old one.
    package func exchange(_ value: Value) -> Value {
        withLock { current in
            defer { current = value }
            return current
        }
    }
}
