@testable import Ferry
import FerryProtocol
import FerryTesting
import Foundation
import GRDB
import Synchronization
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

    /// Pushes fail while `offline` is set; the mutations of every push that
    /// got through are counted by client id.
    final class Link: Sendable {
        let offline = Mutex(false)
        let sent = Mutex<[String: Int]>([:])

        func transport(_ inner: any SyncTransport) -> any SyncTransport {
            ForwardingTransport(
                inner,
                willPush: { [self] request in
                    if offline.withLock({ $0 }) { throw SyncTransportError.unreachable("offline") }
                    sent.withLock { $0[request.clientID, default: 0] += request.mutations.count }
                })
        }
    }

    /// The copy numbered its own edits (handed them out to a push that
    /// failed) before the original moved past those ids. Opened again, it
    /// finds the server ahead of it, but does not settle what it handed out
    /// unseen: it sends those first, the server finds them different, and
    /// they go out under a new id.
    @Test(arguments: StoreKind.available)
    func aCopyThatHandedOutItsOwnEditsBeforeTheOriginalMovedOnLosesNone(kind: StoreKind) async throws {
        try await SyncServer.with(kind) { server in
            let original = try await Device.make("original", user: "alice", server: server, directory: directory)
            try original.execute("INSERT INTO note(id, title) VALUES ('before', 'synced before the copy')")
            try await original.engine.sync()
            try original.database.writer.backup(to: try DatabaseQueue(path: directory.path("copy.sqlite")))
            let link = Link()
            let copy = try await Device.make(
                "copy", user: "alice", server: server, directory: directory, transport: link.transport)
            try await copy.engine.sync()
            link.offline.withLock { $0 = true }
            for n in 0..<3 { try copy.execute("INSERT INTO note(id, title) VALUES (?, 'by the copy')", ["c\(n)"]) }
            await #expect(throws: (any Error).self) { try await copy.engine.sync() }
            #expect(try await copy.database.read(ClientIdentity.handedOut) == 3, "numbered, frozen and not sent")

            for n in 0..<10 { try original.execute("INSERT INTO note(id, title) VALUES (?, 'by the original')", ["o\(n)"]) }
            try await original.engine.sync()

            link.offline.withLock { $0 = false }
            let reopened = try await Device.make(
                "copy", user: "alice", server: server, directory: directory, transport: link.transport)
            let summary = try await reopened.engine.sync()
            #expect(summary.identityRenewed)
            let onServer = try await server.rows("note", in: "user:alice")
            for n in 0..<3 { #expect(onServer["c\(n)"]?["title"] == .text("by the copy"), "c\(n)") }
            let expectedCount = 1 + 10 + 3
            #expect(onServer.count == expectedCount)
            #expect(try reopened.database.outbox.pendingCount() == 0)
        }
    }

    /// The copy was made while the original had a push out (ids handed out,
    /// no reply). The original then sent those and more; the copy, opened,
    /// sends the same ones under the same ids: the server answers them as
    /// replays, and they are settled, not sent again under the new id.
    @Test(arguments: StoreKind.available)
    func editsBothCopiesHeldAreSettledNotSentTwice(kind: StoreKind) async throws {
        try await SyncServer.with(kind) { server in
            let link = Link()
            let original = try await Device.make(
                "original", user: "alice", server: server, directory: directory, transport: link.transport)
            try original.execute("INSERT INTO note(id, title) VALUES ('before', 'synced before the copy')")
            try await original.engine.sync()
            for n in 0..<3 { try original.execute("INSERT INTO note(id, title) VALUES (?, 'both hold it')", ["h\(n)"]) }
            link.offline.withLock { $0 = true }
            await #expect(throws: (any Error).self) { try await original.engine.sync() }
            try original.database.writer.backup(to: try DatabaseQueue(path: directory.path("copy.sqlite")))
            link.offline.withLock { $0 = false }
            for n in 0..<5 { try original.execute("INSERT INTO note(id, title) VALUES (?, 'by the original')", ["o\(n)"]) }
            try await original.engine.sync()

            let copy = try await Device.make(
                "copy", user: "alice", server: server, directory: directory, transport: link.transport)
            #expect(try await copy.database.read(ClientIdentity.handedOut) == 3)
            for n in 0..<4 { try copy.execute("INSERT INTO note(id, title) VALUES (?, 'by the copy')", ["c\(n)"]) }
            let summary = try await copy.engine.sync()
            #expect(summary.identityRenewed)
            let newID = try copy.database.clientID
            #expect(newID != (try original.database.clientID))
            let sentUnderNewID = link.sent.withLock { $0[newID] ?? 0 }
            #expect(sentUnderNewID == 4, "only the copy's own edits go under its new id")
            let onServer = try await server.rows("note", in: "user:alice")
            let expectedCount = 1 + 3 + 5 + 4
            #expect(onServer.count == expectedCount)
            for n in 0..<4 { #expect(onServer["c\(n)"]?["title"] == .text("by the copy"), "c\(n)") }
            #expect(try copy.database.outbox.pendingCount() == 0)
        }
    }
}
