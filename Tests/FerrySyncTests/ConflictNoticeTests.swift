import Ferry
import FerryHTTPClient
@testable import FerryServer
import FerryProtocol
import Foundation
import GRDB
import Testing
import FerryTestSupport

/// The writer whose applied value the server later discards is told, on
/// every device, once: by a conflict notice on its next pull. Run on both
/// stores, through the real HTTP server.
@Suite(.postgresTurns) struct ConflictNoticeTests {
    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory()
    }

    /// Syncs every device twice, in order: whatever one learns, all hear.
    private func settle(_ devices: [Device]) async throws {
        for _ in 0..<2 {
            for device in devices { try await device.engine.sync() }
        }
    }

    /// Three devices of alice's, each holding note `n1`.
    private func threeDevicesWithANote(_ server: SyncServer) async throws -> (Device, Device, Device) {
        let a = try await Device.make("a", user: "alice", server: server, directory: directory)
        let b = try await Device.make("b", user: "alice", server: server, directory: directory)
        let c = try await Device.make("c", user: "alice", server: server, directory: directory)
        try a.execute("INSERT INTO note(id, title, body) VALUES ('n1', 'draft', 'empty')")
        try await settle([a, b, c])
        return (a, b, c)
    }

    /// `b` updates and syncs (applied); `a`, which never saw it, deletes.
    /// The delete wins; `b` and `c` (alice's other devices) are each told
    /// once that b's value was discarded, and "mine" brings the row back.
    @Test(arguments: StoreKind.available)
    func aDeleteOverAnAppliedUpdateIsReportedToTheWriter(kind: StoreKind) async throws {
        try await SyncServer.with(kind) { server in
            let (a, b, c) = try await threeDevicesWithANote(server)

            try b.execute("UPDATE note SET body = 'edited on b' WHERE id = 'n1'")
            try await b.engine.sync()
            try a.execute("DELETE FROM note WHERE id = 'n1'")
            try await a.engine.sync()
            let summary = try await b.engine.sync()
            #expect(summary.conflicts == 1)
            try await settle([a, b, c])

            // The deleting device learned from its push reply what it overrode.
            #expect(try a.database.conflicts.list().map(\.kind) == [.deleteOverrodeUpdate])
            for device in [b, c] {
                let conflicts = try device.database.conflicts.list()
                #expect(conflicts.count == 1)
                let notice = try #require(conflicts.first)
                #expect(notice.kind == .updateLostToDelete && notice.column == "body")
                #expect(notice.base == .text("empty") && notice.mine == .text("edited on b") && notice.theirs == nil)
                #expect(notice.resolution == .keptServer && notice.overriddenBy == "alice" && notice.mutationID == 0)
                #expect(notice.serverRow?.deleted == true)
                #expect(notice.serverRow?.values["title"] == .text("draft"))
                #expect(try device.note("n1") == nil)
            }

            let notice = try #require(try b.database.conflicts.list().first)
            try b.database.conflicts.resolve(notice, with: .mine)
            try await settle([b, a, c])
            for device in [a, b, c] {
                #expect(try device.note("n1") == Note(title: "draft", body: "edited on b", counter: 0))
            }
            // The conflict is alice's, not a device's: resolved on b, it is settled on a and c too.
            for device in [a, b, c] { #expect(try device.database.conflicts.count() == 0) }
        }
    }

    /// The device whose push overrode its own user's value learns of it from
    /// its reply, the user's other devices from the notice: one loss. The
    /// overrider dismissing it settles it everywhere; a new device of the
    /// user is not handed the old conflicts, but hears of new ones; another
    /// user cannot settle alice's notices.
    @Test(arguments: StoreKind.available)
    func aConflictSettledOnOneDeviceIsSettledOnEveryDeviceOfTheUser(kind: StoreKind) async throws {
        try await SyncServer.with(kind) { server in
            let (a, b, c) = try await threeDevicesWithANote(server)
            try b.execute("UPDATE note SET body = 'edited on b' WHERE id = 'n1'")
            try await b.engine.sync()
            try a.execute("UPDATE note SET body = 'edited on a' WHERE id = 'n1'")
            try await a.engine.sync()
            try await settle([a, b, c])
            for device in [a, b, c] { #expect(try device.database.conflicts.count() == 1) }

            // Bob cannot settle alice's notice, whatever id he sends.
            let noticeID = try #require(
                try await b.database.read { db in
                    try String.fetchOne(db, sql: "SELECT notice_id FROM ferry_conflicts")
                })
            let transport = HTTPSyncTransport(baseURL: server.baseURL, requestTimeout: .seconds(10))
            _ = try await transport.push(
                PushRequest(
                    clientID: "bobs-phone", mutations: [],
                    settled: [.init(scope: "user:alice", id: noticeID)]),
                token: try await server.token("bob"))
            try await settle([b, c])
            for device in [b, c] { #expect(try device.database.conflicts.count() == 1) }

            // A new device of alice's gets none of the conflicts of before its first sync.
            let d = try await Device.make("d", user: "alice", server: server, directory: directory)
            try await d.engine.sync()
            #expect(try d.database.conflicts.count() == 0)

            // The overrider dismisses its reply's conflict: every device drops the notice.
            let own = try #require(try a.database.conflicts.list().first)
            #expect(own.kind == .column && own.mine == .text("edited on a"))
            try a.database.conflicts.dismiss(own)
            try await settle([a, b, c, d])
            for device in [a, b, c, d] { #expect(try device.database.conflicts.count() == 0) }

            // A new loss after d's first sync reaches d too.
            try c.execute("UPDATE note SET title = 'from c' WHERE id = 'n1'")
            try await c.engine.sync()
            try b.execute("UPDATE note SET title = 'from b' WHERE id = 'n1'")  // b had not seen c's title
            try await b.engine.sync()
            try await settle([a, c, d])
            for (name, device) in [("a", a), ("c", c), ("d", d)] {
                let conflicts = try device.database.conflicts.list()
                #expect(conflicts.map(\.mine) == [.text("from c")], "\(name)")
            }
        }
    }

    /// The delete is applied first, then `b`'s update arrives: `b` is told
    /// by its push reply, and nobody else hears of it (no value applied on
    /// the server was discarded).
    @Test(arguments: StoreKind.available)
    func anUpdateLostToAnAppliedDeleteIsReportedOnlyToItsWriter(kind: StoreKind) async throws {
        try await SyncServer.with(kind) { server in
            let (a, b, c) = try await threeDevicesWithANote(server)

            try a.execute("DELETE FROM note WHERE id = 'n1'")
            try await a.engine.sync()
            try b.execute("UPDATE note SET body = 'edited on b' WHERE id = 'n1'")
            try await b.engine.sync()
            try await settle([a, b, c])

            let conflicts = try b.database.conflicts.list()
            #expect(conflicts.map(\.kind) == [.updateLostToDelete])
            #expect(conflicts.first?.overriddenBy == nil && conflicts.first?.mine == .text("edited on b"))
            #expect(try a.database.conflicts.count() == 0)
            #expect(try c.database.conflicts.count() == 0)
            for device in [a, b, c] { #expect(try device.note("n1") == nil) }
        }
    }

    /// Alice's applied value in a shared scope is overwritten by Bob, who
    /// had not seen it. Under the policies where Bob's value wins, both of
    /// Alice's devices are told once, Bob by his push reply; where Alice's
    /// value stands, only Bob is told. Carol, who cannot read the scope,
    /// hears nothing.
    @Test(arguments: StoreKind.available, ConflictPolicy.allCases)
    func anOverwrittenValueIsReportedToItsWriter(kind: StoreKind, policy: ConflictPolicy) async throws {
        try await SyncServer.with(kind, tables: ServerTables(rules: ["item": TableRule(policy: policy)])) { server in
            try await server.store.createScope("team-blue", owner: "alice")
            try await server.store.setMember("bob", role: .write, in: "team-blue")
            let shared: (inout SyncConfiguration) -> Void = { $0.sharedScopes = ["team-blue"] }
            let a1 = try await Device.make("a1", user: "alice", server: server, directory: directory, configure: shared)
            let a2 = try await Device.make("a2", user: "alice", server: server, directory: directory, configure: shared)
            let bob = try await Device.make("bob", user: "bob", server: server, directory: directory, configure: shared)
            let carol = try await Device.make("carol", user: "carol", server: server, directory: directory, configure: shared)
            try a1.execute("INSERT INTO item(id, listScope, name) VALUES ('i1', 'team-blue', 'tent')")
            try await settle([a1, a2, bob, carol])

            try a1.execute("UPDATE item SET name = 'from alice' WHERE id = 'i1'")
            try await Task.sleep(for: .milliseconds(5))
            try bob.execute("UPDATE item SET name = 'from bob' WHERE id = 'i1'")
            try await a1.engine.sync()
            try await bob.engine.sync()
            try await settle([a1, a2, bob, carol])

            let bobWins = policy == .lastWriteWins || policy == .clientWins
            let winner = bobWins ? "from bob" : "from alice"
            for device in [a1, a2, bob] {
                let name = try await device.database.read { db in try String.fetchOne(db, sql: "SELECT name FROM item WHERE id = 'i1'") }
                #expect(name == winner)
            }
            #expect(try bob.database.conflicts.count() == 1)
            for device in [a1, a2] {
                let conflicts = try device.database.conflicts.list()
                #expect(conflicts.count == (bobWins ? 1 : 0))
                if let notice = conflicts.first {
                    #expect(notice.kind == .column && notice.column == "name" && notice.scope == "team-blue")
                    #expect(notice.base == .text("tent") && notice.mine == .text("from alice") && notice.theirs == .text("from bob"))
                    #expect(notice.overriddenBy == "bob" && notice.resolution == .keptServer)
                }
            }
            #expect(try carol.database.conflicts.count() == 0)
            #expect(try await carol.database.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM item") } == 0)
        }
    }

    /// A notice cursor the server refuses starts the scope's notices over;
    /// a notice already stored is not stored again.
    @Test func aRefusedNoticeCursorDeliversNothingTwice() async throws {
        try await SyncServer.with(.sqlite) { server in
            let a = try await Device.make("a", user: "alice", server: server, directory: directory)
            let b = try await Device.make("b", user: "alice", server: server, directory: directory)
            try a.execute("INSERT INTO note(id, title) VALUES ('n1', 'draft')")
            try await settle([a, b])
            try b.execute("UPDATE note SET title = 'b' WHERE id = 'n1'")
            try await b.engine.sync()
            try a.execute("DELETE FROM note WHERE id = 'n1'")
            try await settle([a, b])
            #expect(try b.database.conflicts.count() == 1)

            try b.execute("UPDATE ferry_cursors SET notice_cursor = 'not-a-cursor'")
            try await b.engine.sync()
            try await b.engine.sync()
            #expect(try b.database.conflicts.count() == 1)
            let cursor = try await b.database.read { db in
                try String.fetchOne(db, sql: "SELECT notice_cursor FROM ferry_cursors WHERE scope = 'user:alice'")
            }
            #expect(cursor != nil && cursor != "not-a-cursor")
        }
    }
    /// A device restored from a copy made before a notice arrived receives
    /// it again (the copy never held it), once; a device that held it, and
    /// syncs on, never gets it twice.
    @Test func aRestoredCopyReceivesTheNoticeItLostOnce() async throws {
        try await SyncServer.with(.sqlite) { server in
            let a = try await Device.make("a", user: "alice", server: server, directory: directory)
            let path = directory.path("b.sqlite")
            let backup = directory.path("b-backup.sqlite")
            do {
                let b = try await Device.make("b", user: "alice", server: server, directory: directory)
                try a.execute("INSERT INTO note(id, title) VALUES ('n1', 'draft')")
                try await settle([a, b])
                try b.execute("UPDATE note SET title = 'edited on b' WHERE id = 'n1'")
                try await b.engine.sync()
                try b.database.writer.backup(to: try DatabaseQueue(path: backup))
                try a.execute("DELETE FROM note WHERE id = 'n1'")
                try await settle([a, b])
                #expect(try b.database.conflicts.count() == 1)
                try b.database.close()
            }
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
            try FileManager.default.copyItem(atPath: backup, toPath: path)

            let restored = try await Device.make("b", user: "alice", server: server, directory: directory)
            #expect(try restored.database.conflicts.count() == 0)
            try await restored.engine.sync()
            try await restored.engine.sync()
            let notices = try restored.database.conflicts.list()
            #expect(notices.map(\.kind) == [.updateLostToDelete])
            #expect(notices.first?.mine == .text("edited on b"))
            #expect(try restored.note("n1") == nil)
        }
    }
}
