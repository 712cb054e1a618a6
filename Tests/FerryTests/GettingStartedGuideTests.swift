import Ferry
import Foundation
import GRDB
import Testing
import FerryTestSupport

/// The "Getting started" guide's code (`Ferry.docc/GettingStarted.md`), run as written.
@Suite struct GettingStartedGuideTests {
    @Test func theGuideWorksAsWritten() async throws {
        let directory = try TemporaryDirectory()

        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.create(table: "note") { t in
                t.primaryKey("id", .text)
                t.column("title", .text).notNull()
                t.column("body", .text)
            }
            try db.create(table: "task") { t in
                t.primaryKey("id", .text)
                t.column("listScope", .text).notNull()  // names a shared scope, e.g. "list:groceries"
                t.column("done", .boolean).notNull().defaults(to: false)
            }
        }

        let schema = FerrySchema(
            migrator: migrator,
            syncedTables: [
                SyncedTable("note"),  // the user's private scope
                SyncedTable("task", scope: .column("listScope")),
            ])
        let database = try FerryDatabase(path: directory.path("app.sqlite"), schema: schema)

        let id = UUID().uuidString
        try await database.write { db in
            try db.execute(sql: "INSERT INTO note(id, title) VALUES (?, ?)", arguments: [id, "Groceries"])
            try db.execute(sql: "UPDATE note SET body = ? WHERE id = ?", arguments: ["milk, eggs", id])
        }

        let titles = try await database.read { db in try String.fetchAll(db, sql: "SELECT title FROM note") }
        #expect(titles == ["Groceries"])

        // The guide's loop runs until its task is cancelled; here it stops after the first value.
        for try await count in database.outbox.observePendingCount() {
            #expect(count == 1)  // the insert and update coalesce
            break
        }

        let batch = try database.outbox.nextBatch(limit: 100)
        try database.outbox.markAcknowledged(batch)
        #expect(try database.outbox.purge() == 2)

        let snapshot = try await database.read { db in try SchemaSnapshot(db) }
        #expect(snapshot.version == "v1")
        #expect(snapshot.text.contains("table note\n  column id TEXT NOT NULL PRIMARY KEY(1)"))

        let stats = database.telemetry.snapshot()
        #expect(stats.writes.count == 4)  // write, nextBatch, markAcknowledged, purge
        #expect(stats.busyWaits == 0)
    }
}
