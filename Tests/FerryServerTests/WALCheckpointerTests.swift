@testable import FerryServer
import FerryProtocol
import FerryTestSupport
import Foundation
import GRDB
import Testing

/// The embedded store's WAL is copied back into its file beside the
/// writer, not in the commit of the push that filled it, and stays bounded
/// when that falls behind.
@Suite struct WALCheckpointerTests {
    /// Pushes that write about 16,000 pages, back to back: checkpoints run
    /// on the checkpointer's queue, the WAL stays within twice the writer's
    /// bound, and every row is in the file after it closes. Without the
    /// hook, SQLite's own checkpoint would run in the commits and the queue
    /// would count none; with no checkpoint at all, the WAL would hold
    /// every page written.
    @Test func pushesPastTheThresholdAreCheckpointedBesideTheWriter() async throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteSyncStore(directory: directory.url)
        let text = String(repeating: "ferry ", count: 400)  // 2,400 bytes: a leaf cell and an overflow page a row
        var next: Int64 = 1
        for _ in 0..<120 {
            let mutations = (0..<100).map { index -> Mutation in
                defer { next += 1 }
                return Mutations.upsert(next, row: "row-\(next)", ["body": .text(text + "\(index)")])
            }
            let receipt = try await store.push(PushRequest(clientID: "c1", mutations: mutations), userID: "alice", rules: PushRules())
            #expect(receipt.response.lastAppliedMutationID == next - 1)
        }
        await store.checkpointer.settle()
        #expect(store.checkpointer.runs.background >= 1)
        let wal = directory.url.appending(path: SQLiteSyncStore.fileName + "-wal").path
        let walBytes = (try FileManager.default.attributesOfItem(atPath: wal)[.size] as? Int) ?? 0
        #expect(walBytes < 2 * Int(store.checkpointer.inlinePages) * 4096)
        try await store.close()
        try await store.close()  // a second close changes nothing

        let reopened = try DatabaseQueue(path: directory.url.appending(path: SQLiteSyncStore.fileName).path)
        let (count, check) = try await reopened.read { db in
            (try Int.fetchOne(db, sql: "SELECT count(*) FROM rows WHERE scope = 'user:alice'"), try String.fetchOne(db, sql: "PRAGMA integrity_check"))
        }
        #expect(count == 12000)
        #expect(check == "ok")
        try reopened.close()
    }

    /// A reader holding an old snapshot keeps any checkpoint from
    /// finishing, so the WAL cannot start over: past `inlinePages` the
    /// writer checkpoints in its own commit, as SQLite would, and once the
    /// reader is gone the WAL starts over again.
    @Test func aWALTheQueueCannotCopyIsCheckpointedByTheWriter() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.url.appending(path: "file.sqlite").path
        let pool = try DatabasePool(path: path)
        let checkpointer = WALCheckpointer(path: path, pages: 8, inlinePages: 24)
        try await pool.writeWithoutTransaction { db in
            try db.execute(sql: "CREATE TABLE blob (id INTEGER PRIMARY KEY, bytes BLOB NOT NULL)")
            checkpointer.install(on: db)
        }
        func insert(_ count: Int) async throws {
            for _ in 0..<count {
                try await pool.write { db in
                    try db.execute(sql: "INSERT INTO blob (bytes) VALUES (zeroblob(8192))")
                }
            }
        }
        func walPages() throws -> Int {
            let size = (try FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int) ?? 0
            return size / 4096
        }

        // A reader's snapshot, held on a thread of its own.
        let reader = try DatabaseQueue(path: path)
        let (held, heldSignal) = AsyncStream.makeStream(of: Void.self)
        let release = DispatchSemaphore(value: 0)
        let finished = DispatchSemaphore(value: 0)
        Thread {
            try? reader.read { db in
                _ = try Int.fetchOne(db, sql: "SELECT count(*) FROM blob")
                heldSignal.yield()
                release.wait()
            }
            finished.signal()
        }.start()
        for await _ in held { break }

        try await insert(20)  // 3 pages a row: the WAL passes 24 pages
        await checkpointer.settle()
        #expect(checkpointer.runs.inline >= 1)
        #expect(try walPages() >= 40)

        release.signal()
        finished.wait()
        try reader.close()
        // The reader gone, a checkpoint copies the WAL whole and the writer's next transaction starts it over
        // from its beginning. A writer's checkpoint that meets the queue's at work copies nothing, so a few
        // commits may pass first; the WAL must start over within ten.
        var pages = Int32.max
        for _ in 0..<10 where pages >= 24 {
            try await insert(1)
            await checkpointer.settle()
            pages = checkpointer.lastWALPages
        }
        #expect(pages < 24)

        try await pool.writeWithoutTransaction { db in checkpointer.uninstall(from: db) }
        try await checkpointer.close()
        try pool.close()
    }
}
