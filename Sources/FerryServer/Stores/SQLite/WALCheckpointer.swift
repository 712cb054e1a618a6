import Dispatch
import GRDB
import GRDBSQLite
import Synchronization

/// Copies the store's WAL back into its database file on a connection of
/// its own, beside the writer, instead of inside the commit of the push
/// that took the WAL past its threshold.
///
/// SQLite's automatic checkpoint runs in the `COMMIT` that takes the WAL
/// past 1,000 pages, while the push waits for its reply: in a drain of
/// 100k offline edits it was a fifth of the server's CPU, all of it on the
/// request's path (BENCHMARKS.md). The writer's WAL hook, which replaces
/// that automatic checkpoint, hands the work to a serial queue: a `PASSIVE`
/// checkpoint there copies what no reader still needs while the reply goes
/// out and the next push is read, and the writer's next transaction starts
/// the WAL over once all of it was copied, as before.
///
/// Should the queue fall behind (a checkpoint a reader holds back, writes
/// that never pause), the writer checkpoints in its own commit once the WAL
/// reaches ``inlinePages``, as SQLite's automatic checkpoint would: the WAL
/// stays bounded. A checkpoint that fails (a full disk) is left to the next
/// commit; it changes nothing the store holds.
///
/// ```swift
/// let checkpointer = WALCheckpointer(path: pool.path)
/// try pool.writeWithoutTransaction { db in checkpointer.install(on: db) }
/// // … pushes; checkpoints run on the checkpointer's queue …
/// try pool.writeWithoutTransaction { db in checkpointer.uninstall(from: db) }
/// try await checkpointer.close()
/// ```
package final class WALCheckpointer: Sendable {
    /// The WAL's length in pages at which a checkpoint is started (SQLite's own default).
    package let pages: Int32
    /// The WAL's length in pages at which the writer checkpoints in its own commit.
    package let inlinePages: Int32
    private let path: String
    private let queue = DispatchQueue(label: "ferry.store.checkpoint")
    /// Opened at the first checkpoint: most stores (a test's, a small app's) never reach one.
    private let connection = Mutex<DatabaseQueue?>(nil)
    /// A checkpoint is queued or running.
    private let scheduled = Atomic<Bool>(false)
    /// The hook is on a writer, holding a retain of the checkpointer.
    private let installed = Atomic<Bool>(false)
    private let counts = Mutex(Counts())
    private let walPages = Atomic<Int32>(0)

    /// How many checkpoints ran where.
    package struct Counts: Sendable, Equatable {
        /// On the checkpointer's queue.
        package var background = 0
        /// In the writer's commit, the WAL past ``WALCheckpointer/inlinePages``: counted as begun, since one
        /// that meets the queue's checkpoint at work copies nothing and answers `SQLITE_BUSY`.
        package var inline = 0
    }

    package init(path: String, pages: Int32 = 1000, inlinePages: Int32 = 4000) {
        precondition(0 < pages && pages < inlinePages, "a checkpoint starts before the writer has to take one")
        self.path = path
        self.pages = pages
        self.inlinePages = inlinePages
    }

    package var runs: Counts { counts.withLock { $0 } }

    /// The WAL's length in pages after the writer's last commit.
    package var lastWALPages: Int32 { walPages.load(ordering: .acquiring) }

    /// Makes the checkpointer the WAL hook of `writer`, the store's one
    /// writing connection, in place of SQLite's automatic checkpoint. The
    /// hook keeps the checkpointer alive until ``uninstall(from:)``.
    package func install(on writer: Database) {
        guard let connection = writer.sqliteConnection, !installed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        sqlite3_wal_hook(connection, walHook, Unmanaged.passRetained(self).toOpaque())
    }

    /// Takes the hook off `writer` (SQLite then checkpoints nothing by
    /// itself until the connection closes, which checkpoints the WAL
    /// whole); a second call, or one on a closed connection, changes nothing
    /// more.
    package func uninstall(from writer: Database) {
        guard installed.exchange(false, ordering: .acquiringAndReleasing) else { return }
        if let connection = writer.sqliteConnection { sqlite3_wal_hook(connection, nil, nil) }
        Unmanaged.passUnretained(self).release()
    }

    /// Waits for the checkpoint queued or running, if any.
    package func settle() async {
        await withCheckedContinuation { continuation in queue.async { continuation.resume() } }
    }

    /// Waits for the checkpoint queued or running, then closes the
    /// checkpointer's connection.
    package func close() async throws {
        await settle()
        try connection.withLock { connection in
            try connection?.close()
            connection = nil
        }
    }

    /// Called by the writer's WAL hook after each commit, with the WAL's length in pages.
    fileprivate func committed(walPages: Int32, writer: OpaquePointer?, database: UnsafePointer<CChar>?) {
        self.walPages.store(walPages, ordering: .releasing)
        if walPages >= inlinePages {
            // What SQLite's own hook does past its threshold.
            sqlite3_wal_checkpoint_v2(writer, database, SQLITE_CHECKPOINT_PASSIVE, nil, nil)
            counts.withLock { $0.inline += 1 }
            return
        }
        guard walPages >= pages, !scheduled.exchange(true, ordering: .acquiringAndReleasing) else { return }
        queue.async { [self] in
            checkpoint()
            // Cleared after the run: a commit meanwhile saw the WAL as this run found it.
            scheduled.store(false, ordering: .releasing)
        }
    }

    private func checkpoint() {
        connection.withLock { connection in
            do {
                if connection == nil {
                    var configuration = Configuration()
                    // As the writer: the copy reaches the file before the WAL can start over.
                    configuration.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = FULL") }
                    connection = try DatabaseQueue(path: path, configuration: configuration)
                }
                try connection?.writeWithoutTransaction { db in _ = try db.checkpoint(.passive) }
                counts.withLock { $0.background += 1 }
            } catch {
                // Nothing the store holds changed; the next commit past the threshold tries again.
            }
        }
    }
}

/// SQLite's WAL hook: after a commit, with the WAL's length in pages.
private func walHook(
    context: UnsafeMutableRawPointer?, writer: OpaquePointer?, database: UnsafePointer<CChar>?, walPages: Int32
) -> Int32 {
    if let context {
        Unmanaged<WALCheckpointer>.fromOpaque(context).takeUnretainedValue().committed(walPages: walPages, writer: writer, database: database)
    }
    return SQLITE_OK
}
