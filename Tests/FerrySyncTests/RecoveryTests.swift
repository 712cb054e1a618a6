import Ferry
@testable import FerryServer
import FerryProtocol
import Foundation
import GRDB
import Testing
import FerryTestSupport

/// A reset from the server, a database file restored from an old copy, and
/// an app migration that adds a synced column.
@Suite struct RecoveryTests {
    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory()
    }

    /// The server collects tombstones past the device's cursor: the device
    /// refetches the scope, rows deleted on the server disappear, and its
    /// pending edits survive and are pushed.
    @Test func resetRefetchesTheScopeAndKeepsPendingEdits() async throws {
        let server = try await SyncServer.start()
        try await server.stopping {
            let a = try await Device.make("a", user: "alice", server: server, directory: directory)
            let b = try await Device.make("b", user: "alice", server: server, directory: directory)
            for id in ["1", "2", "3"] { try a.execute("INSERT INTO note(id, title) VALUES (?, ?)", [id, "note \(id)"]) }
            try await a.engine.sync()
            try await b.engine.sync()

            try b.execute("DELETE FROM note WHERE id = '2'")
            try await b.engine.sync()
            _ = try await server.store.collectGarbage(before: Date().addingTimeInterval(3600))

            try a.execute("UPDATE note SET body = 'edited offline' WHERE id = '3'")
            try a.execute("INSERT INTO note(id, title) VALUES ('4', 'new offline')")
            let summary = try await a.engine.sync()

            #expect(summary.resets == 1)
            #expect(summary.swept == 1)
            #expect(Set(try a.notes().keys) == ["1", "3", "4"])
            #expect(try a.note("3")?.body == "edited offline")
            let onServer = try await server.rows("note", in: "user:alice")
            #expect(Set(onServer.keys) == ["1", "3", "4"])
            #expect(onServer["3"]?["body"] == .text("edited offline"))
        }
    }

    /// Copy the database file, sync, put the copy back, edit, sync: every
    /// edit is on the server.
    @Test func restoredCopyTakesANewIdentityAndLosesNoEdit() async throws {
        let server = try await SyncServer.start()
        try await server.stopping {
            let path = directory.path("restored.sqlite")
            let copy = directory.path("backup.sqlite")
            let oldClientID: String
            do {
                let device = try await Device.make("restored", user: "alice", server: server, directory: directory)
                try device.execute("INSERT INTO note(id, title) VALUES ('before', 'synced before the copy')")
                try await device.engine.sync()
                oldClientID = try device.database.clientID
                try device.database.writer.backup(to: try DatabaseQueue(path: copy))
                try device.execute("INSERT INTO note(id, title) VALUES ('after', 'synced after the copy')")
                try device.execute("UPDATE note SET body = 'x' WHERE id = 'before'")
                try await device.engine.sync()
            }
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
            try FileManager.default.copyItem(atPath: copy, toPath: path)

            let restored = try await Device.make("restored", user: "alice", server: server, directory: directory)
            #expect(try restored.database.clientID == oldClientID)
            try restored.execute("INSERT INTO note(id, title) VALUES ('new1', 'first edit after restore')")
            try restored.execute("UPDATE note SET title = 'renamed after restore' WHERE id = 'before'")
            let summary = try await restored.engine.sync()

            #expect(summary.identityRenewed)
            #expect(try restored.database.clientID != oldClientID)
            let onServer = try await server.rows("note", in: "user:alice")
            #expect(onServer["new1"]?["title"] == .text("first edit after restore"))
            #expect(onServer["before"]?["title"] == .text("renamed after restore"))
            #expect(onServer["after"] != nil)
            // And the restored device caught up with what it had lost.
            #expect(try restored.note("after")?.title == "synced after the copy")
            #expect(try restored.note("before")?.body == "x")
        }
    }

    /// An app update adds `note.priority`: the engine refetches so the
    /// values the server already holds for it arrive.
    @Test func migrationAddingAColumnRefetches() async throws {
        let server = try await SyncServer.start()
        try await server.stopping {
            let newer = try await Device.make("newer", user: "alice", server: server, directory: directory, withPriority: true)
            try newer.execute("INSERT INTO note(id, title, priority) VALUES ('1', 'urgent', 5)")
            try await newer.engine.sync()

            do {
                let older = try await Device.make("older", user: "alice", server: server, directory: directory)
                try await older.engine.sync()
                #expect(try older.note("1")?.title == "urgent")
            }
            let upgraded = try await Device.make("older", user: "alice", server: server, directory: directory, withPriority: true)
            try await upgraded.engine.sync()
            let priority = try await upgraded.database.read { db in try Int.fetchOne(db, sql: "SELECT priority FROM note WHERE id = '1'") }
            #expect(priority == 5)
            #expect(try upgraded.database.outbox.pendingCount() == 0)
        }
    }

    /// A delete's tombstone is collected; then a device put back to a copy
    /// of its file from before the delete edits the row, and another device
    /// that never saw the row creates one with the same id. Neither brings
    /// the row back silently: each meets the deletion record and is told.
    @Test func aCollectedDeleteNeverSilentlyComesBack() async throws {
        let server = try await SyncServer.start()
        try await server.stopping {
            let copy = directory.path("phone-backup.sqlite")
            let laptop = try await Device.make("laptop", user: "alice", server: server, directory: directory)
            do {
                let phone = try await Device.make("phone", user: "alice", server: server, directory: directory)
                try laptop.execute("INSERT INTO note(id, title) VALUES ('doomed', 'to be deleted')")
                try await laptop.engine.sync()
                try await phone.engine.sync()
                try phone.database.writer.backup(to: try DatabaseQueue(path: copy))
                try laptop.execute("DELETE FROM note WHERE id = 'doomed'")
                try await laptop.engine.sync()
                try await phone.engine.sync()
                #expect(try phone.note("doomed") == nil)
            }
            let report = try await server.store.collectGarbage(before: Date().addingTimeInterval(3600))
            #expect(report.tombstonesRemoved == 1)

            // The phone, put back to its copy, still holds the row and edits it.
            let path = directory.path("phone.sqlite")
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
            try FileManager.default.copyItem(atPath: copy, toPath: path)
            let phone = try await Device.make("phone", user: "alice", server: server, directory: directory)
            #expect(try phone.note("doomed") != nil)
            try phone.execute("UPDATE note SET body = 'edited on the restored phone' WHERE id = 'doomed'")
            try await phone.engine.sync()
            #expect(try phone.database.conflicts.list().contains { $0.rowID == "doomed" && $0.kind == .updateLostToDelete })

            // A tablet that never saw the row inserts one with its id.
            let tablet = try await Device.make("tablet", user: "alice", server: server, directory: directory)
            try tablet.execute("INSERT INTO note(id, title) VALUES ('doomed', 'a new note, same id')")
            try await tablet.engine.sync()
            #expect(try tablet.database.conflicts.list().contains { $0.rowID == "doomed" && $0.kind == .updateLostToDelete })

            for device in [laptop, phone, tablet] {
                try await device.engine.sync()
                #expect(try device.note("doomed") == nil, "\(device.path)")
            }
            #expect(try await server.rows("note", in: "user:alice")["doomed"] == nil)
        }
    }
}
