@testable import Ferry
import FerryTesting
@testable import FerryServer
import FerryProtocol
import Foundation
import GRDB
import Testing
import FerryTestSupport

/// A server that lost history — its store restored from a backup, wiped, or
/// loaded from a dump into another database — is refilled by its devices,
/// never mirrored (ARCHITECTURE.md server semantic 6): every device keeps every
/// row, the server holds them all again, and a new device receives them.
@Suite(.postgresTurns) struct LostServerHistoryTests {
    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory()
    }

    var storeDirectory: URL { directory.url.appending(path: "server") }

    func copyStore(to name: String) throws {
        let copy = directory.url.appending(path: name)
        try? FileManager.default.removeItem(at: copy)
        try FileManager.default.copyItem(at: storeDirectory, to: copy)
    }

    func restoreStore(from name: String?) throws {
        try FileManager.default.removeItem(at: storeDirectory)
        if let name { try FileManager.default.copyItem(at: directory.url.appending(path: name), to: storeDirectory) }
    }

    /// Stops the server and closes its store, so its files can be copied.
    func shutDown(_ server: SyncServer) async throws {
        await server.stop()
        try await server.store.close()
    }

    /// The laptop writes `sql` and syncs it with `server`.
    func laptopWrites(_ sql: String, on server: SyncServer) async throws {
        let laptop = try await Device.make("laptop", user: "alice", server: server, directory: directory)
        try laptop.execute(sql)
        try await laptop.engine.sync()
    }

    /// The laptop, set to take whatever `server` holds.
    func mirroringLaptop(on server: SyncServer) async throws -> Device {
        try await Device.make(
            "laptop", user: "alice", server: server, directory: directory, configure: { $0.lostServerHistory = .mirror })
    }

    func titles(_ device: Device) throws -> [String: String] {
        try device.notes().compactMapValues(\.title)
    }

    /// Back up the store, write more (new notes, an edit), restore the backup,
    /// and let a third device write on the restored server until its version
    /// passes the old devices' cursors: each old device still learns that its
    /// cursor points into lost history, sends back what the server lacks, and
    /// nothing is lost anywhere.
    @Test func aStoreRestoredFromABackupIsRefilledByItsDevices() async throws {
        var server = try await SyncServer.start(in: directory)
        do {
            let laptop = try await Device.make("laptop", user: "alice", server: server, directory: directory)
            let phone = try await Device.make("phone", user: "alice", server: server, directory: directory)
            for id in ["n1", "n2"] { try laptop.execute("INSERT INTO note(id, title) VALUES (?, ?)", [id, "note \(id)"]) }
            try await laptop.engine.sync()
            try await phone.engine.sync()
        }
        try await shutDown(server)
        try copyStore(to: "backup")

        server = try await SyncServer.start(in: directory)
        do {
            let laptop = try await Device.make("laptop", user: "alice", server: server, directory: directory)
            let phone = try await Device.make("phone", user: "alice", server: server, directory: directory)
            try laptop.execute("INSERT INTO note(id, title) VALUES ('n3', 'written after the backup')")
            try await laptop.engine.sync()
            try phone.execute("INSERT INTO note(id, title) VALUES ('n4', 'also after the backup')")
            try phone.execute("UPDATE note SET title = 'n1 renamed after the backup' WHERE id = 'n1'")
            try await phone.engine.sync()
            try await laptop.engine.sync()
            #expect(try titles(laptop) == titles(phone))
        }
        try await shutDown(server)
        try restoreStore(from: "backup")

        server = try await SyncServer.start(in: directory)
        try await server.stopping {
            // A new device writes first, past every version the old ones saw.
            let tablet = try await Device.make("tablet", user: "alice", server: server, directory: directory)
            for index in 5...12 { try tablet.execute("INSERT INTO note(id, title) VALUES (?, ?)", ["n\(index)", "tablet \(index)"]) }
            try await tablet.engine.sync()

            let laptop = try await Device.make("laptop", user: "alice", server: server, directory: directory)
            let phone = try await Device.make("phone", user: "alice", server: server, directory: directory)
            let phoneSummary = try await phone.engine.sync()
            // n3, n4 and n1's new title went back.
            #expect(phoneSummary.sentBack == 3, "\(phoneSummary)")
            let laptopSummary = try await laptop.engine.sync()
            #expect(laptopSummary.sentBack == 0, "the phone had sent it all back already: \(laptopSummary)")
            try await tablet.engine.sync()

            let expected = [
                "n1": "n1 renamed after the backup", "n2": "note n2", "n3": "written after the backup",
                "n4": "also after the backup",
            ].merging((5...12).map { ("n\($0)", "tablet \($0)") }) { $1 }
            for device in [laptop, phone, tablet] { #expect(try titles(device) == expected, "\(device.path)") }
            let onServer = try await server.rows("note", in: "user:alice")
            #expect(onServer.mapValues { $0["title"] } == expected.mapValues { .text($0) })
            let fresh = try await Device.make("fresh", user: "alice", server: server, directory: directory)
            try await fresh.engine.sync()
            #expect(try titles(fresh) == expected)
        }
    }

    /// The data directory is lost: the first device to sync puts every note
    /// back, and the other finds them there.
    @Test func aWipedStoreIsRefilledByItsDevices() async throws {
        var server = try await SyncServer.start(in: directory)
        do {
            let laptop = try await Device.make("laptop", user: "alice", server: server, directory: directory)
            let phone = try await Device.make("phone", user: "alice", server: server, directory: directory)
            for index in 1...30 { try laptop.execute("INSERT INTO note(id, title) VALUES (?, ?)", ["n\(index)", "note \(index)"]) }
            try await laptop.engine.sync()
            try await phone.engine.sync()
            // Pending when the server dies: an edit of one column of a row it will lose.
            try phone.execute("UPDATE note SET body = 'edited offline' WHERE id = 'n7'")
        }
        try await shutDown(server)
        try restoreStore(from: nil)

        server = try await SyncServer.start(in: directory)
        try await server.stopping {
            let phone = try await Device.make("phone", user: "alice", server: server, directory: directory)
            let laptop = try await Device.make("laptop", user: "alice", server: server, directory: directory)
            let summary = try await phone.engine.sync()
            #expect(summary.sentBack == 30, "\(summary)")
            try await laptop.engine.sync()
            let onServer = try await server.rows("note", in: "user:alice")
            #expect(onServer.count == 30)
            // The pending edit did not make a partial row: the whole row went.
            #expect(onServer["n7"]?["title"] == .text("note 7") && onServer["n7"]?["body"] == .text("edited offline"))
            #expect(try laptop.notes().count == 30 && laptop.note("n7")?.body == "edited offline")
            #expect(try phone.database.outbox.pendingCount() == 0)
        }
    }

    /// `push()` on a wiped server recovers as `sync()` does: the pull that
    /// finds the lost history and sends back what the server lacks comes
    /// first, then the pending edit, and the push does not fail.
    @Test func aPushToAWipedStoreRecoversAsASyncDoes() async throws {
        var server = try await SyncServer.start(in: directory)
        do {
            let phone = try await Device.make("phone", user: "alice", server: server, directory: directory)
            for index in 1...10 { try phone.execute("INSERT INTO note(id, title) VALUES (?, ?)", ["n\(index)", "note \(index)"]) }
            try await phone.engine.sync()
            try phone.execute("UPDATE note SET body = 'edited offline' WHERE id = 'n3'")
        }
        try await shutDown(server)
        try restoreStore(from: nil)

        server = try await SyncServer.start(in: directory)
        try await server.stopping {
            let phone = try await Device.make("phone", user: "alice", server: server, directory: directory)
            let summary = try await phone.engine.push()
            #expect(summary.sentBack == 10, "\(summary)")
            let onServer = try await server.rows("note", in: "user:alice")
            #expect(onServer.count == 10)
            #expect(onServer["n3"]?["body"] == .text("edited offline"))
            #expect(try phone.database.outbox.pendingCount() == 0)
        }
    }

    /// An attachment of a row sent back comes back too: its metadata with
    /// the row, its bytes uploaded again, so a new device opens it.
    @Test func anAttachmentOfARowSentBackComesBackWithItsBytes() async throws {
        let scan = Data((0..<70_000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) })
        var server = try await SyncServer.start(in: directory)
        let id: String
        do {
            let laptop = try await Device.make("laptop", user: "alice", server: server, directory: directory)
            try laptop.execute("INSERT INTO note(id, title) VALUES ('n1', 'scanned')")
            id = try await laptop.database.attachments.add(data: scan, to: "note", row: "n1", name: "scan.png").id
            try await laptop.engine.sync()
        }
        try await shutDown(server)
        try restoreStore(from: nil)

        server = try await SyncServer.start(in: directory)
        try await server.stopping {
            let laptop = try await Device.make("laptop", user: "alice", server: server, directory: directory)
            let summary = try await laptop.engine.sync()
            #expect(summary.sentBack == 2 && summary.attachmentsUploaded == 1, "\(summary)")
            let tablet = try await Device.make("tablet", user: "alice", server: server, directory: directory)
            try await tablet.engine.sync()
            let attachment = try #require(try tablet.database.attachments.attachment(id: id))
            #expect(attachment.name == "scan.png")
            #expect(try Data(contentsOf: try await tablet.engine.open(attachment)) == scan)
        }
    }

    /// A device pointed at another server on purpose takes that server's data.
    @Test func aDeviceThatMirrorsTakesTheServerAsItIs() async throws {
        var server = try await SyncServer.start(in: directory)
        try await laptopWrites("INSERT INTO note(id, title) VALUES ('old', 'on the old server')", on: server)
        try await shutDown(server)
        try restoreStore(from: nil)
        server = try await SyncServer.start(in: directory)
        try await server.stopping {
            let laptop = try await mirroringLaptop(on: server)
            let summary = try await laptop.engine.sync()
            #expect(summary.sentBack == 0 && summary.swept == 1, "\(summary)")
            #expect(try laptop.notes().isEmpty)
            #expect(try await server.rows("note", in: "user:alice").isEmpty)
        }
    }

    /// A device that mirrors a store restored from a backup takes the
    /// backup's row, though it knew a newer version of it: the versions it
    /// held were of the history the server lost.
    @Test func aDeviceThatMirrorsTakesARestoredRowAsTheServerHasIt() async throws {
        var server = try await SyncServer.start(in: directory)
        try await laptopWrites("INSERT INTO note(id, title) VALUES ('n1', 'in the backup')", on: server)
        try await shutDown(server)
        try copyStore(to: "backup")
        server = try await SyncServer.start(in: directory)
        try await laptopWrites("UPDATE note SET title = 'renamed after the backup' WHERE id = 'n1'", on: server)
        try await shutDown(server)
        try restoreStore(from: "backup")
        server = try await SyncServer.start(in: directory)
        try await server.stopping {
            let laptop = try await mirroringLaptop(on: server)
            let summary = try await laptop.engine.sync()
            #expect(summary.sentBack == 0, "\(summary)")
            #expect(try titles(laptop) == ["n1": "in the backup"])
            #expect(try await server.rows("note", in: "user:alice").count == 1)
        }
    }

    /// PostgreSQL: a `pg_dump` of the store loaded into a fresh database
    /// after more was written: the devices refill it.
    @Test(.enabled(if: PostgresTestDatabase.shouldRun))
    func aPostgresDumpLoadedIntoAFreshDatabaseIsRefilledByItsDevices() async throws {
        let original = try await PostgresTestDatabase.create()
        let restored = try await PostgresTestDatabase.create()
        defer {
            Task {
                try? await original.drop(); try? await restored.drop()
            }
        }
        let dump = directory.path("store.sql")

        var server = try await SyncServer.start(store: .postgres, sharing: original)
        try await server.stopping {
            let laptop = try await Device.make("laptop", user: "alice", server: server, directory: directory)
            let phone = try await Device.make("phone", user: "alice", server: server, directory: directory)
            for id in ["n1", "n2"] { try laptop.execute("INSERT INTO note(id, title) VALUES (?, ?)", [id, "note \(id)"]) }
            try await laptop.engine.sync()
            try await phone.engine.sync()
            try original.pgDump(to: dump)
            try laptop.execute("INSERT INTO note(id, title) VALUES ('n3', 'written after the dump')")
            try laptop.execute("UPDATE note SET title = 'n2 renamed after the dump' WHERE id = 'n2'")
            try await laptop.engine.sync()
            try await phone.engine.sync()
        }
        try restored.load(dump: dump)

        server = try await SyncServer.start(store: .postgres, sharing: restored)
        try await server.stopping {
            let phone = try await Device.make("phone", user: "alice", server: server, directory: directory)
            let laptop = try await Device.make("laptop", user: "alice", server: server, directory: directory)
            let summary = try await phone.engine.sync()
            #expect(summary.sentBack == 2, "\(summary)")
            try await laptop.engine.sync()
            let expected = ["n1": "note n1", "n2": "n2 renamed after the dump", "n3": "written after the dump"]
            for device in [laptop, phone] { #expect(try titles(device) == expected) }
            #expect(try await server.rows("note", in: "user:alice").mapValues { $0["title"] } == expected.mapValues { .text($0) })
            let fresh = try await Device.make("fresh", user: "alice", server: server, directory: directory)
            try await fresh.engine.sync()
            #expect(try titles(fresh) == expected)
        }
    }

    /// The store is copied while it serves; a device then pushes a note but
    /// its pull fails, so its cursor still points before the copy. Restored
    /// from the copy, the store knows that cursor: only the server saying it
    /// applied less for this device than it acknowledged tells the loss, and
    /// the device sends the note back before it pushes anything new.
    @Test func aPushAcknowledgedAfterTheCopyIsSentBackThoughTheCursorIsOlder() async throws {
        var server = try await SyncServer.start(in: directory)
        let copy = directory.path("live-copy.sqlite")
        do {
            let faults = Locked<FaultInjectingTransport?>(nil)
            let laptop = try await Device.make(
                "laptop", user: "alice", server: server, directory: directory,
                transport: { inner in
                    let transport = FaultInjectingTransport(wrapping: inner)
                    faults.withLock { $0 = transport }
                    return transport
                })
            try laptop.execute("INSERT INTO note(id, title) VALUES ('n1', 'before the copy')")
            try await laptop.engine.sync()
            try await server.sqlite!.pool.backup(to: try DatabaseQueue(path: copy))
            try laptop.execute("INSERT INTO note(id, title) VALUES ('n2', 'pushed after the copy')")
            faults.withLock { $0 }?.inject(.dropResponse, on: .pull, times: 100)
            _ = try? await laptop.engine.sync()
            #expect(try laptop.database.outbox.pendingCount() == 0, "n2 was acknowledged")
        }
        try await shutDown(server)
        let file = storeDirectory.appending(path: SQLiteSyncStore.fileName).path
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: file + suffix) }
        try FileManager.default.copyItem(atPath: copy, toPath: file)

        server = try await SyncServer.start(in: directory)
        try await server.stopping {
            let laptop = try await Device.make("laptop", user: "alice", server: server, directory: directory)
            try laptop.execute("INSERT INTO note(id, title) VALUES ('n3', 'after the restore')")
            let summary = try await laptop.engine.sync()
            #expect(summary.sentBack >= 1, "\(summary)")
            let onServer = try await server.rows("note", in: "user:alice")
            #expect(Set(onServer.keys) == ["n1", "n2", "n3"])
            let phone = try await Device.make("phone", user: "alice", server: server, directory: directory)
            try await phone.engine.sync()
            #expect(Set(try phone.notes().keys) == ["n1", "n2", "n3"])
        }
    }
}
