@testable import Ferry
@testable import FerryServer
import FerryProtocol
import Foundation
import GRDB
import Testing
import FerryTestSupport

/// Every choice settles every conflict, on a table whose columns are all
/// NOT NULL, whether the device holds the row, lost it to a delete, or
/// never had it; and the settled replicas converge without new conflicts.
@Suite struct ConflictResolutionTests {
    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory()
    }

    struct TaskRow: Hashable {
        var title: String
        var owner: String
        var done: Int64
        var due: String
    }

    private func task(_ device: Device) throws -> TaskRow? {
        try device.database.read { db in
            try Row.fetchOne(db, sql: "SELECT title, owner, done, due FROM task WHERE id = 't1'").map {
                TaskRow(title: $0["title"], owner: $0["owner"], done: $0["done"], due: $0["due"])
            }
        }
    }

    private func settle(_ devices: [Device]) async throws {
        for _ in 0..<2 {
            for device in devices { try await device.engine.sync() }
        }
    }

    /// Two devices holding the task, and the server.
    private func twoDevices(_ server: SyncServer) async throws -> (Device, Device) {
        let a = try await Device.make("a", user: "alice", server: server, directory: directory)
        let b = try await Device.make("b", user: "alice", server: server, directory: directory)
        try a.execute("INSERT INTO task(id, title, owner, done, due) VALUES ('t1', 'pack', 'alice', 0, '2026-12-01')")
        try await settle([a, b])
        return (a, b)
    }

    /// Both devices retitle the task; `a` is first, so `b` holds the conflict.
    private func columnConflict(_ server: SyncServer) async throws -> (Device, Device, SyncConflict) {
        let (a, b) = try await twoDevices(server)
        try a.execute("UPDATE task SET title = 'from a' WHERE id = 't1'")
        try b.execute("UPDATE task SET title = 'from b' WHERE id = 't1'")
        try await a.engine.sync()
        try await b.engine.sync()
        return (a, b, try #require(try b.database.conflicts.list().first))
    }

    /// `b`'s applied update is discarded by `a`'s delete: `b` holds a
    /// notice and no row. Every choice works from there.
    @Test(arguments: [ConflictChoice.mine, .theirs, .merged(["title": "pack twice", "done": 1])])
    func everyChoiceSettlesAnUpdateLostToADelete(choice: ConflictChoice) async throws {
        try await SyncServer.with(.sqlite) { server in
            let (a, b) = try await twoDevices(server)
            try b.execute("UPDATE task SET title = 'pack light' WHERE id = 't1'")
            try await b.engine.sync()
            try a.execute("DELETE FROM task WHERE id = 't1'")
            try await settle([a, b])
            #expect(try task(b) == nil)
            let notice = try #require(try b.database.conflicts.list().first)
            #expect(notice.kind == .updateLostToDelete)

            try b.database.conflicts.resolve(notice, with: choice)
            let expected: TaskRow? =
                switch choice {
                case .mine: TaskRow(title: "pack light", owner: "alice", done: 0, due: "2026-12-01")
                case .theirs: nil
                case .merged: TaskRow(title: "pack twice", owner: "alice", done: 1, due: "2026-12-01")
                }
            #expect(try task(b) == expected)
            try a.database.conflicts.list().forEach(a.database.conflicts.dismiss)
            try await settle([b, a])
            #expect(try task(a) == expected && task(b) == expected)
            #expect(try a.database.conflicts.count() == 0 && b.database.conflicts.count() == 0)
        }
    }

    /// `a` deletes over `b`'s applied update, which it never pulled: its
    /// reply carries the server's row, so "theirs" restores the whole task
    /// on a device that no longer holds it.
    @Test(arguments: [ConflictChoice.mine, .theirs, .merged(["done": 1])])
    func everyChoiceSettlesADeleteThatOverrodeAnUpdate(choice: ConflictChoice) async throws {
        try await SyncServer.with(.sqlite) { server in
            let (a, b) = try await twoDevices(server)
            try b.execute("UPDATE task SET title = 'pack light' WHERE id = 't1'")
            try await b.engine.sync()
            try a.execute("DELETE FROM task WHERE id = 't1'")
            try await a.engine.sync()
            let conflict = try #require(try a.database.conflicts.list().first)
            #expect(conflict.kind == .deleteOverrodeUpdate && conflict.theirs == .text("pack light"))
            #expect(try task(a) == nil)

            try a.database.conflicts.resolve(conflict, with: choice)
            let expected: TaskRow? =
                switch choice {
                case .mine: nil
                case .theirs: TaskRow(title: "pack light", owner: "alice", done: 0, due: "2026-12-01")
                case .merged: TaskRow(title: "pack light", owner: "alice", done: 1, due: "2026-12-01")
                }
            #expect(try task(a) == expected)
            try await settle([a, b])
            #expect(try task(a) == expected && task(b) == expected)
            #expect(try a.database.conflicts.count() == 0)
            // `b` was told its applied title was discarded by the delete, and that alice settled it on `a`:
            // one user, one conflict, settled once.
            #expect(try b.database.conflicts.count() == 0)
        }
    }

    /// A column conflict under `manual`, settled every way on a row the
    /// device holds, and on one it deleted since.
    @Test(arguments: [ConflictChoice.mine, .theirs, .merged(["title": "pack both"])], [false, true])
    func everyChoiceSettlesAColumnConflict(choice: ConflictChoice, deletedLocally: Bool) async throws {
        try await SyncServer.with(.sqlite, tables: ServerTables(rules: ["task": TableRule(policy: .manual)])) { server in
            let (a, b, conflict) = try await columnConflict(server)
            #expect(conflict.kind == .column && conflict.resolution == .unresolved)
            if deletedLocally {
                // Dropping the local row while the conflict waits: the choice re-creates it.
                try await b.database.writeWithoutCapture { db in try db.execute(sql: "DELETE FROM task") }
            }

            try b.database.conflicts.resolve(conflict, with: choice)
            let title =
                switch choice {
                case .mine: "from b"
                case .theirs: "from a"
                default: "pack both"
                }
            let expected = TaskRow(title: title, owner: "alice", done: 0, due: "2026-12-01")
            #expect(try task(b) == expected)
            try await settle([b, a])
            #expect(try task(a) == expected && task(b) == expected)
            #expect(try a.database.conflicts.count() == 0 && b.database.conflicts.count() == 0)
        }
    }

    /// A value for a column the table does not have fails clearly, and
    /// leaves the conflict in place.
    @Test func aMergedValueForAnUnknownColumnIsRefused() async throws {
        try await SyncServer.with(.sqlite, tables: ServerTables(rules: ["task": TableRule(policy: .manual)])) { server in
            let (_, b, conflict) = try await columnConflict(server)
            #expect(throws: FerryError.self) { try b.database.conflicts.resolve(conflict, with: .merged(["colour": "red"])) }
            #expect(try b.database.conflicts.count() == 1)
        }
    }

    /// Two app versions share a server: a v2 device (with `priority`)
    /// deletes a note a v1 device edits offline. The v1 user keeps their
    /// edit: the row comes back with v2's column as it was when deleted.
    @Test func anOlderAppVersionsMineAfterADeleteKeepsTheColumnsItDoesNotKnow() async throws {
        let server = try await SyncServer.start()
        try await server.stopping {
            let v2 = try await Device.make("v2", user: "alice", server: server, directory: directory, withPriority: true)
            let v1 = try await Device.make("v1", user: "alice", server: server, directory: directory)
            try v2.execute("INSERT INTO note(id, title, priority) VALUES ('n', 'plan', 3)")
            try await v2.engine.sync()
            try await v1.engine.sync()

            try v2.execute("DELETE FROM note WHERE id = 'n'")
            try await v2.engine.sync()
            try v1.execute("UPDATE note SET title = 'plan, edited on v1' WHERE id = 'n'")
            try await v1.engine.sync()
            let conflict = try #require(try v1.database.conflicts.list().first { $0.rowID == "n" })
            #expect(conflict.kind == .updateLostToDelete)
            try v1.database.conflicts.resolve(conflict, with: .mine)
            try await settle([v1, v2])

            let onServer = try #require(try await server.rows("note", in: "user:alice")["n"])
            #expect(onServer["title"] == .text("plan, edited on v1"))
            #expect(onServer["priority"] == .integer(3))
            let priority = try await v2.database.read { db in try Int64.fetchOne(db, sql: "SELECT priority FROM note WHERE id = 'n'") }
            #expect(priority == 3)
            #expect(try v2.note("n")?.title == "plan, edited on v1")
        }
    }
}
