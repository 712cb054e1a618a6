@testable import FerryServer
import FerryProtocol
import Foundation
import GRDB
import Testing
import FerryTestSupport

/// What only the SQLite store has: a file another process can hold.
/// (The rules every store keeps are in ``SyncStoreConformanceTests``.)
@Suite struct SQLiteStoreTests {
    /// Another process holding the write lock past the busy timeout: the
    /// store answers `unavailable` (503) itself, so the HTTP layer needs no
    /// SQLite, and works again once the lock is gone.
    /// Which of a push's rows the store holds, asked in one statement per
    /// scope and table: live rows and tombstones, in two scopes and two
    /// tables, with ids JSON would escape; a key it cannot ask about that
    /// way is returned for a lookup of its own.
    @Test func theRowsAPushMeetsAreFoundTogether() async throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteSyncStore(directory: directory.url)
        let keys = [
            RowKey(scope: "user:a", table: "note", rowID: "n-1"), RowKey(scope: "user:a", table: "note", rowID: #"q"u\o/te"#),
            RowKey(scope: "user:a", table: "tag", rowID: "t-1"), RowKey(scope: "team:b", table: "note", rowID: "n-1"),
            RowKey(scope: "team:b", table: "note", rowID: "gone"),
        ]
        try await store.write { db in
            for (index, key) in keys.enumerated() {
                try db.execute(
                    sql: """
                        INSERT INTO rows (scope, tbl, row_id, version, deleted, client_id, changed_at, cells)
                        VALUES (?, ?, ?, ?, ?, 'c', 0, '{}')
                        """, arguments: [key.scope, key.table, key.rowID, index + 1, key.rowID == "gone"])
            }
        }
        let new = [
            RowKey(scope: "user:a", table: "note", rowID: "n-2"), RowKey(scope: "team:b", table: "tag", rowID: "n-1"),
            RowKey(scope: "user:b", table: "note", rowID: "n-1"),
        ]
        let unusual = [RowKey(scope: "user:a", table: "note", rowID: "nul\u{0}"), RowKey(scope: "user:é", table: "note", rowID: "n-1")]
        let held = try await store.write { db in try SQLiteSyncStore.heldKeys(db, new + keys + keys + unusual) }
        #expect(held == Set(keys + unusual))
        try await store.close()
    }

    @Test func aFileHeldByAnotherWriterAnswersUnavailable() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.url.appending(path: SQLiteSyncStore.fileName).path
        let store = try SQLiteSyncStore(path: path, busyTimeout: .milliseconds(200))
        let holder = try DatabaseQueue(path: path)
        let push = PushRequest(clientID: "c1", mutations: [Mutations.upsert(1, ["t": "a"])])
        // Another writer takes the lock on a thread of its own and keeps it until released.
        let (held, heldSignal) = AsyncStream.makeStream(of: Void.self)
        let release = DispatchSemaphore(value: 0)
        let finished = DispatchSemaphore(value: 0)
        Thread {
            try? holder.write { db in
                try db.execute(sql: "UPDATE store_meta SET value = value WHERE key = 'version'")
                heldSignal.yield()
                release.wait()
            }
            finished.signal()
        }.start()
        for await _ in held { break }
        let error = await #expect(throws: FerryServerError.self) {
            try await store.push(push, userID: "alice", rules: PushRules())
        }
        #expect(error?.code == .unavailable)
        #expect(error?.status == 503)
        release.signal()
        finished.wait()
        #expect(try await store.push(push, userID: "alice", rules: PushRules()).response.lastAppliedMutationID == 1)
        try holder.close()
        try await store.close()
    }
}
