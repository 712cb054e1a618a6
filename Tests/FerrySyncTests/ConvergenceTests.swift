import Ferry
@testable import FerryServer
import FerryProtocol
import Foundation
import GRDB
import Testing
import FerryTestSupport

/// Two devices edit offline, then sync through the real server on loopback,
/// and end with the same rows; nothing either wrote vanishes unreported.
@Suite struct ConvergenceTests {
    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory()
    }

    /// Creates a note on `a` and syncs both devices so both hold it.
    private func sharedNote(_ a: Device, _ b: Device) async throws -> String {
        let id = UUID().uuidString
        try a.execute("INSERT INTO note(id, title, body) VALUES (?, 'draft', 'empty')", [id])
        try await a.engine.sync()
        try await b.engine.sync()
        #expect(try b.note(id) == Note(title: "draft", body: "empty", counter: 0))
        return id
    }

    @Test func differentColumnsBothApply() async throws {
        let server = try await SyncServer.start()
        try await server.stopping {
            let a = try await Device.make("a", user: "alice", server: server, directory: directory)
            let b = try await Device.make("b", user: "alice", server: server, directory: directory)
            let id = try await sharedNote(a, b)

            try a.execute("UPDATE note SET title = 'Groceries' WHERE id = ?", [id])
            try b.execute("UPDATE note SET body = 'milk, eggs' WHERE id = ?", [id])
            try await a.engine.sync()
            let summary = try await b.engine.sync()
            try await a.engine.sync()

            #expect(summary.conflicts == 0)
            let expected = Note(title: "Groceries", body: "milk, eggs", counter: 0)
            #expect(try a.note(id) == expected)
            #expect(try b.note(id) == expected)
            #expect(try await server.rows("note", in: "user:alice")[id]?["title"] == .text("Groceries"))
            #expect(try a.database.conflicts.count() == 0 && b.database.conflicts.count() == 0)
            #expect(try a.database.outbox.pendingCount() == 0 && b.database.outbox.pendingCount() == 0)
        }
    }

    /// The same column, edited on both devices: `a` reaches the server
    /// first, `b` (whose edit is later) second.
    @Test(arguments: ConflictPolicy.allCases)
    func sameColumnFollowsThePolicy(policy: ConflictPolicy) async throws {
        let server = try await SyncServer.start(tables: ServerTables(rules: ["note": TableRule(policy: policy)]))
        try await server.stopping {
            let a = try await Device.make("a", user: "alice", server: server, directory: directory)
            let b = try await Device.make("b", user: "alice", server: server, directory: directory)
            let id = try await sharedNote(a, b)

            try a.execute("UPDATE note SET title = 'from a' WHERE id = ?", [id])
            try await Task.sleep(for: .milliseconds(5))
            try b.execute("UPDATE note SET title = 'from b' WHERE id = ?", [id])
            try await a.engine.sync()
            let summary = try await b.engine.sync()
            try await a.engine.sync()

            let winner =
                switch policy {
                case .lastWriteWins, .clientWins: "from b"
                case .serverWins, .manual: "from a"
                }
            #expect(try a.note(id)?.title == winner)
            #expect(try b.note(id)?.title == winner)
            #expect(summary.conflicts == 1)

            // Whatever the policy did, `b` is told, with base, mine and theirs.
            let conflicts = try b.database.conflicts.list()
            #expect(conflicts.count == 1)
            let conflict = try #require(conflicts.first)
            #expect(conflict.kind == .column && conflict.column == "title")
            #expect(conflict.base == .text("draft"))
            #expect(conflict.mine == .text("from b"))
            #expect(conflict.theirs == .text("from a"))
            let expectedResolution: Conflict.Resolution =
                switch policy {
                case .lastWriteWins, .clientWins: .keptLocal
                case .serverWins: .keptServer
                case .manual: .unresolved
                }
            #expect(conflict.resolution == expectedResolution)

            // Resolving as "mine" is an ordinary edit, and it does not conflict again.
            try b.database.conflicts.resolve(conflict, with: .mine)
            #expect(try b.database.conflicts.count() == 0)
            try await b.engine.sync()
            try await a.engine.sync()
            #expect(try a.note(id)?.title == "from b")
            #expect(try b.note(id)?.title == "from b")
            #expect(try b.database.conflicts.count() == 0)
        }
    }

    @Test func mergedResolutionWritesTheGivenValues() async throws {
        let server = try await SyncServer.start(tables: ServerTables(rules: ["note": TableRule(policy: .manual)]))
        try await server.stopping {
            let a = try await Device.make("a", user: "alice", server: server, directory: directory)
            let b = try await Device.make("b", user: "alice", server: server, directory: directory)
            let id = try await sharedNote(a, b)
            try a.execute("UPDATE note SET title = 'milk' WHERE id = ?", [id])
            try b.execute("UPDATE note SET title = 'eggs' WHERE id = ?", [id])
            try await a.engine.sync()
            try await b.engine.sync()

            let conflict = try #require(try b.database.conflicts.list().first)
            try b.database.conflicts.resolve(conflict, with: .merged(["title": "milk, eggs"]))
            try await b.engine.sync()
            try await a.engine.sync()
            #expect(try a.note(id)?.title == "milk, eggs")
            #expect(try b.note(id)?.title == "milk, eggs")
            #expect(throws: FerryError.self) { try b.database.conflicts.resolve(conflict, with: .theirs) }
        }
    }

    /// `a` deletes, `b` updates: the delete wins, `b` is told, and "mine"
    /// brings the row back everywhere.
    @Test func deleteWinsOverAnUpdateAndMineRecreates() async throws {
        let server = try await SyncServer.start()
        try await server.stopping {
            let a = try await Device.make("a", user: "alice", server: server, directory: directory)
            let b = try await Device.make("b", user: "alice", server: server, directory: directory)
            let id = try await sharedNote(a, b)

            try a.execute("DELETE FROM note WHERE id = ?", [id])
            try b.execute("UPDATE note SET body = 'still needed' WHERE id = ?", [id])
            try await a.engine.sync()
            try await b.engine.sync()
            try await a.engine.sync()

            #expect(try a.note(id) == nil)
            #expect(try b.note(id) == nil)
            let conflicts = try b.database.conflicts.list()
            #expect(conflicts.map(\.kind) == [.updateLostToDelete])
            #expect(conflicts.first?.mine == .text("still needed"))

            try b.database.conflicts.resolve(try #require(conflicts.first), with: .mine)
            #expect(try b.note(id) == Note(title: "draft", body: "still needed", counter: 0))
            try await b.engine.sync()
            try await a.engine.sync()
            #expect(try a.note(id) == Note(title: "draft", body: "still needed", counter: 0))
            #expect(try await server.rows("note", in: "user:alice")[id] != nil)
        }
    }

    /// `b` updates first, `a` deletes after without having seen it: the
    /// delete still wins, and `a` is told what it overrode.
    @Test func deleteOverridingAnUpdateIsReported() async throws {
        let server = try await SyncServer.start()
        try await server.stopping {
            let a = try await Device.make("a", user: "alice", server: server, directory: directory)
            let b = try await Device.make("b", user: "alice", server: server, directory: directory)
            let id = try await sharedNote(a, b)

            try b.execute("UPDATE note SET body = 'edited' WHERE id = ?", [id])
            try a.execute("DELETE FROM note WHERE id = ?", [id])
            try await b.engine.sync()
            try await a.engine.sync()
            try await b.engine.sync()

            #expect(try a.note(id) == nil)
            #expect(try b.note(id) == nil)
            let conflict = try #require(try a.database.conflicts.list().first)
            #expect(conflict.kind == .deleteOverrodeUpdate)
            #expect(conflict.column == "body" && conflict.theirs == .text("edited"))
        }
    }

    @Test func sharedScopeRowsReachOtherMembers() async throws {
        let server = try await SyncServer.start()
        try await server.stopping {
            try await server.store.createScope("team-blue", owner: "alice")
            try await server.store.setMember("bob", role: .write, in: "team-blue")
            let a = try await Device.make("a", user: "alice", server: server, directory: directory) { $0.sharedScopes = ["team-blue"] }
            let b = try await Device.make("b", user: "bob", server: server, directory: directory) { $0.sharedScopes = ["team-blue"] }
            try a.execute("INSERT INTO item(id, listScope, name) VALUES ('i1', 'team-blue', 'tent')")
            try a.execute("INSERT INTO note(id, title) VALUES ('private', 'only alice')")
            try await a.engine.sync()
            try await b.engine.sync()
            let names = try await b.database.read { db in try String.fetchAll(db, sql: "SELECT name FROM item") }
            #expect(names == ["tent"])
            #expect(try b.notes().isEmpty)
        }
    }
}
