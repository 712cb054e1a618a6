import Foundation

/// A value guarded by a lock, shared between SQLite callbacks and callers.
///
/// SQLite calls Ferry's SQL functions and busy handler synchronously on
/// whichever thread runs the statement, so an actor cannot guard this state.
/// `Mutex` from the Synchronization module would do, but needs macOS 15.
final class Locked<Value: Sendable>: @unchecked Sendable {
    // @unchecked: `value` is only read or written while `lock` is held.
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) {
        self.value = value
    }

    func withLock<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
