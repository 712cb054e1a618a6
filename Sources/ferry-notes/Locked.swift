import Foundation

/// A value shared between the status callback and the command.
final class Locked<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Value
    init(_ value: Value) { stored = value }
    var value: Value { lock.withLock { stored } }
    func withLock<T>(_ body: (inout Value) throws -> T) rethrows -> T { try lock.withLock { try body(&stored) } }
    /// Sets a new value and returns the old one.
    func exchange(_ value: Value) -> Value { lock.withLock { defer { stored = value }; return stored } }
}
