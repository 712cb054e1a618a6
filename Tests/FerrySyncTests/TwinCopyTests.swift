@testable import Ferry
import FerryProtocol
import FerryTesting
import Foundation
import GRDB
import Testing
import FerryTestSupport

/// A copy of a device's database syncing beside its original under the same
/// client id (a phone's backup restored onto a new phone while the old one
/// still syncs): the server tells the copy's edits from replays of the
/// original's (`clientIDReused`), the copy takes a new identity, and no edit
/// of either is lost.
@Suite(.postgresTurns) struct TwinCopyTests {
    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory()
    }

    /// The copy is made after the original synced (and checks in once, in
    /// step with the server). The original then pushes `originalRows` more
    /// edits; the copy makes 30 of its own and pushes them in batches of 10,
    /// numbered from where the copy stood. With 15, the server is past every
    /// id of the copy's first batch; with 5, only part of it.
    @Test(arguments: StoreKind.available.flatMap { kind in [15, 5].map { (kind, $0) } })
    func aCopySyncingBesideItsOriginalLosesNoEdit(kind: StoreKind, originalRows: Int) async throws {
        try await SyncServer.with(kind) { server in
            let original = try await Device.make("original", user: "alice", server: server, directory: directory)
            try original.execute("INSERT INTO note(id, title) VALUES ('before', 'synced before the copy')")
            try await original.engine.sync()
            try original.database.writer.backup(to: try DatabaseQueue(path: directory.path("copy.sqlite")))
            let copy = try await Device.make(
                "copy", user: "alice", server: server, directory: directory, configure: { $0.pushBatchSize = 10 })
            #expect(try copy.database.clientID == original.database.clientID)
            #expect(try await copy.engine.sync().identityRenewed == false, "in step with the server: nothing to tell yet")

            for n in 0..<originalRows {
                try original.execute("INSERT INTO note(id, title) VALUES (?, 'by the original')", ["o\(n)"])
            }
            try await original.engine.sync()
            for n in 0..<30 {
                try copy.execute("INSERT INTO note(id, title) VALUES (?, 'by the copy')", ["c\(n)"])
            }
            let summary = try await copy.engine.sync()
            #expect(summary.identityRenewed)
            #expect(try copy.database.clientID != original.database.clientID)
            #expect(summary.pushed == 30)
            #expect(try copy.database.outbox.pendingCount() == 0)

            let onServer = try await server.rows("note", in: "user:alice")
            #expect(onServer.count == 1 + originalRows + 30)
            for n in 0..<30 { #expect(onServer["c\(n)"]?["title"] == .text("by the copy"), "c\(n)") }
            for n in 0..<originalRows { #expect(onServer["o\(n)"]?["title"] == .text("by the original"), "o\(n)") }

            // Both go on syncing, each under its own id, and end with every row.
            try original.execute("UPDATE note SET body = 'original again' WHERE id = 'before'")
            try copy.execute("INSERT INTO note(id, title) VALUES ('c-last', 'by the copy, later')")
            try await original.engine.sync()
            try await copy.engine.sync()
            try await original.engine.sync()
            let query = "SELECT id, title, body FROM note ORDER BY id"
            let originalRowsNow = try await original.database.read { db in try Row.fetchAll(db, sql: query) }
            #expect(originalRowsNow.count == 1 + originalRows + 31)
            #expect(try await copy.database.read { db in try Row.fetchAll(db, sql: query) } == originalRowsNow)
        }
    }
}
