import Ferry
@testable import FerryServer
import FerryProtocol
import Foundation
import GRDB
import Testing
import FerryTestSupport

/// The README's "Sync with the server" guide, run as written against the
/// real server, with a second device making the conflict it resolves.
@Suite struct ReadmeSyncGuideTests {
    private static func schema() -> FerrySchema {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.create(table: "note") { t in
                t.primaryKey("id", .text)
                t.column("title", .text).notNull()
                t.column("body", .text)
            }
            try db.create(table: "task") { t in
                t.primaryKey("id", .text)
                t.column("listScope", .text).notNull()
                t.column("done", .boolean).notNull().defaults(to: false)
            }
        }
        return FerrySchema(migrator: migrator, syncedTables: [
            SyncedTable("note"),
            SyncedTable("task", scope: .column("listScope")),
        ])
    }

    struct SignIn {
        let server: SyncServer
        func freshToken() async throws -> String { try await server.token("alice") }
    }

    @Test func theSyncGuideWorksAsWritten() async throws {
        let directory = try TemporaryDirectory()
        let server = try await SyncServer.start(tables: ServerTables(rules: ["note": TableRule(policy: .manual)]))
        defer { Task { await server.stop() } }
        try await server.store.createScope("list:groceries", owner: "alice")
        let signIn = SignIn(server: server)
        let token = try await signIn.freshToken()
        let database = try FerryDatabase(path: directory.path("app.sqlite"), schema: Self.schema())
        let serverURL = server.baseURL

        // Another device edits the same note, so there is a conflict to resolve.
        let other = try FerryDatabase(path: directory.path("other.sqlite"), schema: Self.schema())
        let otherEngine = try SyncEngine(database: other, transport: HTTPSyncTransport(baseURL: serverURL),
                                         configuration: SyncConfiguration(userID: "alice"), token: token)
        try await other.write { db in try db.execute(sql: "INSERT INTO note(id, title) VALUES ('n1', 'milk')") }
        try await otherEngine.sync()

        // --- the guide ---
        let engine = try SyncEngine(
            database: database,
            transport: HTTPSyncTransport(baseURL: serverURL),
            configuration: SyncConfiguration(userID: "alice", sharedScopes: ["list:groceries"]),
            token: token,
            tokenRefresher: { try await signIn.freshToken() })

        var summary = try await engine.sync()
        print("pushed \(summary.pushed), pulled \(summary.pulled), conflicts \(summary.conflicts)")
        #expect(summary.pulled == 1)

        // Both edit the title offline; the other device is first.
        try await database.write { db in try db.execute(sql: "UPDATE note SET title = 'eggs' WHERE id = 'n1'") }
        try await other.write { db in try db.execute(sql: "UPDATE note SET title = 'bread' WHERE id = 'n1'") }
        try await otherEngine.sync()
        summary = try await engine.sync()
        #expect(summary.conflicts == 1)

        await engine.start()
        let statuses = Task {
            for await status in engine.statusUpdates() {
                print(status.phase, status.pendingCount, status.conflictCount, status.lastError ?? "no error")
                if status.conflictCount == 0 && status.pendingCount == 0 && status.phase == .idle && status.pushed > 0 { break }
            }
        }
        let seen = Task {
            for try await conflicts in database.conflicts.observe() {
                for conflict in conflicts {
                    print(conflict.table, conflict.rowID, conflict.column ?? "the row",
                          "base:", conflict.base ?? .null, "mine:", conflict.mine ?? .null, "theirs:", conflict.theirs ?? .null)
                }
                if conflicts.isEmpty { return }
            }
        }

        let conflict = try #require(try database.conflicts.list().first)
        #expect(conflict.mine == "eggs" && conflict.theirs == "bread" && conflict.resolution == .unresolved)
        if let conflict = try database.conflicts.list().first {
            try database.conflicts.resolve(conflict, with: .mine)
        }

        for rejected in try database.outbox.rejectedMutations() {
            print(rejected.table, rejected.rowID, rejected.reason)
            try database.outbox.discard(rejected)
        }
        // --- end of the guide ---

        try await seen.value
        await statuses.value
        await engine.stop()
        try await otherEngine.sync()
        let title = try await other.read { db in try String.fetchOne(db, sql: "SELECT title FROM note WHERE id = 'n1'") }
        #expect(title == "eggs")
    }
}
