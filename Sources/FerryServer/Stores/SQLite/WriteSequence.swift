import Synchronization

/// Counts the store's write transactions so a read can tell that the file
/// did not change since another read: odd while a write transaction is
/// open, even between them (a sequence lock). A read that finds the same
/// even count before it begins and after it ends saw the file as every
/// write up to that count left it, and a later read that finds that count
/// again sees the very same file.
///
/// It counts the writes of this process, made through
/// `SQLiteSyncStore.write`. The one command that writes beside a running
/// server, `ferry-server grant`, writes scopes and members, which a pull
/// does not read (the route checks access before the store reads); a
/// command that wrote rows, notices, clients or the store's meta beside a
/// running server would need the server to read every pull.
///
/// ```swift
/// let before = writes.stable          // nil while a write is open
/// let answer = try await pool.read { … }
/// if let before, writes.stable == before { … }   // `answer` is the file as of `before`
/// ```
package final class WriteSequence: Sendable {
    private let count = Mutex<UInt64>(0)

    package init() {}

    /// The count when no write transaction is open; `nil` while one is.
    package var stable: UInt64? {
        count.withLock { $0 % 2 == 0 ? $0 : nil }
    }

    /// Marks a write transaction begun, before its `BEGIN`.
    package func begin() {
        count.withLock { $0 &+= 1 }
    }

    /// Marks it ended, after its `COMMIT` or rollback.
    package func end() {
        count.withLock { $0 &+= 1 }
    }
}
