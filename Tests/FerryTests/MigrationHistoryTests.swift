import Ferry
import Foundation
import GRDB
import Testing

/// Database files saved by every version of the example schema upgrade to
/// exactly what a fresh install has, keeping their awkward data.
@Suite struct MigrationHistoryTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")

    static func fixture(_ version: String) -> URL {
        fixtures.appendingPathComponent("notes-\(version).sqlite")
    }

    static func tester(to version: String) -> MigrationTester {
        MigrationTester(
            schema: NotesExample.schema(at: version),
            snapshotsDirectory: fixtures.appendingPathComponent("schemas"))
    }

    func notes(_ database: FerryDatabase) throws -> [Row] {
        try database.read { db in try Row.fetchAll(db, sql: "SELECT * FROM note ORDER BY id") }
    }

    @Test func everyCommittedSnapshotMatchesAFreshInstallOfItsVersion() throws {
        for version in NotesExample.versions {
            let committed = try String(contentsOf: Self.fixtures.appendingPathComponent("schemas/\(version).schema.txt"), encoding: .utf8)
            let fresh = try MigrationTester(schema: NotesExample.schema(at: version)).freshInstallSnapshot(includingFerryObjects: false)
            #expect(fresh.text == committed, "\(version): \(fresh.difference(from: SchemaSnapshot(text: committed)))")
        }
    }

    @Test func upgradeFrom1To2() throws {
        try Self.tester(to: "v2").upgrade(fixture: Self.fixture("v1")) { database in
            let rows = try notes(database)
            #expect(rows.count == NotesExample.awkwardNotes.count)
            for (row, expected) in zip(rows, NotesExample.awkwardNotes) {
                #expect(row["title"] as String == expected.title)
                #expect(row["body"] as String? == expected.body)
                #expect(row["pinned"] as String? == expected.pinned)
            }
            // Tags are synced from v2 on.
            try database.write { db in
                try db.execute(sql: "INSERT INTO tag(id, noteId, name) VALUES ('t-new', ?, 'urgent')", arguments: [rows[0]["id"] as String])
            }
            #expect(try database.outbox.pendingMutations().last?.table == "tag")
        }
    }

    @Test func upgradeFrom2To3() throws {
        try Self.tester(to: "v3").upgrade(fixture: Self.fixture("v2")) { database in
            let rows = try notes(database)
            #expect(rows.map { $0["pinned"] as Int } == [0, 1, 0, 0, 1])
            #expect(rows.allSatisfy { ($0["categoryId"] as String?) == nil })
            let tags = try database.read { db in try Row.fetchAll(db, sql: "SELECT noteId, name FROM tag ORDER BY id") }
            #expect(tags.map { $0["name"] as String } == ["ünïcödé", "", "🏷️"])
            // Foreign keys still hold after the rebuild: deleting a note cascades to its tags.
            try database.write { db in try db.execute(sql: "DELETE FROM note WHERE id = ?", arguments: [tags[0]["noteId"] as String]) }
            #expect(try database.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM tag") } == 1)
        }
    }

    @Test func upgradeFrom1To3() throws {
        try Self.tester(to: "v3").upgrade(fixture: Self.fixture("v1")) { database in
            let rows = try notes(database)
            #expect(rows.map { $0["title"] as String } == NotesExample.awkwardNotes.map(\.title))
            #expect(rows.map { $0["body"] as String? } == NotesExample.awkwardNotes.map(\.body))
            #expect(rows[3]["body"] as String == NotesExample.longText)
            #expect(rows.map { $0["pinned"] as Int } == [0, 1, 0, 0, 1])

            // Capture follows the rebuilt table and the new column.
            try database.write { db in
                try db.execute(sql: "INSERT INTO category(id, name) VALUES ('c1', 'Work')")
                try db.execute(sql: "UPDATE note SET categoryId = 'c1', pinned = 1 WHERE id = ?", arguments: [rows[0]["id"] as String])
            }
            let mutations = try database.outbox.pendingMutations()
            // The edits saved by v1 are still pending, and now read in the v3 shape.
            #expect(mutations.count == NotesExample.awkwardNotes.count + 1)
            let first = try #require(mutations.first)
            #expect(first.values["categoryId"] == "c1".databaseValue)
            #expect(first.values["pinned"] == 1.databaseValue)
            #expect(mutations.contains { $0.table == "category" })
        }
    }

    @Test func theLatestVersionsOwnFileOpensUnchanged() throws {
        try Self.tester(to: "v3").upgrade(fixture: Self.fixture("v3")) { database in
            let categories = try database.read { db in try String.fetchAll(db, sql: "SELECT name FROM category ORDER BY id") }
            #expect(categories == ["Ünïcödé", ""])
            #expect(try notes(database).map { $0["categoryId"] as String? } == [nil, nil, "c-1", nil, nil])
        }
    }

    @Test func aMigrationThatDivergesFromAFreshInstallIsCaught() throws {
        // A data-dependent migration: files with notes get an index a fresh install lacks.
        var migrator = NotesExample.migrator()
        migrator.registerMigration("v4") { db in
            if try Int.fetchOne(db, sql: "SELECT count(*) FROM note")! > 0 {
                try db.execute(sql: "CREATE INDEX note_on_title ON note(title)")
            }
        }
        let tester = MigrationTester(schema: FerrySchema(migrator: migrator, syncedTables: NotesExample.syncedTables(at: "v3")))
        let error = #expect(throws: FerryError.self) {
            try tester.upgrade(fixture: Self.fixture("v1")) { _ in }
        }
        #expect(error?.code == .schemaMismatch)
        #expect(error?.message.contains("- index note_on_title on note(title COLLATE BINARY)") == true, "\(error?.message ?? "")")
    }

    @Test func anEditedShippedMigrationIsCaughtByTheCommittedSnapshot() throws {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.execute(sql: "CREATE TABLE note (id TEXT PRIMARY KEY NOT NULL, title TEXT, body TEXT, pinned TEXT, createdAt TEXT NOT NULL)")
        }
        let tester = MigrationTester(
            schema: FerrySchema(migrator: migrator, syncedTables: [SyncedTable("note")]),
            snapshotsDirectory: Self.fixtures.appendingPathComponent("schemas"))
        let error = #expect(throws: FerryError.self) {
            try tester.upgrade(fixture: Self.fixture("v1")) { _ in }
        }
        #expect(error?.code == .schemaMismatch)
        #expect(error?.message.contains("column title TEXT NOT NULL") == true, "\(error?.message ?? "")")
    }

    /// Writes the fixture files and snapshots. Run once when a version ships:
    /// `FERRY_WRITE_FIXTURES=1 swift test --filter MigrationHistoryTests/writeFixtures`.
    @Test(.enabled(if: ProcessInfo.processInfo.environment["FERRY_WRITE_FIXTURES"] == "1"))
    func writeFixtures() throws {
        let schemas = Self.fixtures.appendingPathComponent("schemas")
        try FileManager.default.createDirectory(at: schemas, withIntermediateDirectories: true)
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("ferry-fixtures-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }

        for version in NotesExample.versions {
            let snapshot = try MigrationTester(schema: NotesExample.schema(at: version)).freshInstallSnapshot(includingFerryObjects: false)
            try snapshot.text.write(to: schemas.appendingPathComponent("\(version).schema.txt"), atomically: true, encoding: .utf8)
        }
        for version in NotesExample.versions {
            let database = try FerryDatabase(
                path: scratch.appendingPathComponent("\(version).sqlite").path,
                schema: NotesExample.schema(at: version))
            try database.write { db in
                for (n, note) in NotesExample.awkwardNotes.enumerated() {
                    // v3 stores pinned as an INTEGER: the v1/v2 text mapped as the v3 migration maps it.
                    let pinned: DatabaseValueConvertible? = version == "v3" ? (note.pinned == "true" ? 1 : 0) : note.pinned
                    try db.execute(
                        sql: "INSERT INTO note(id, title, body, pinned, createdAt) VALUES (?, ?, ?, ?, ?)",
                        arguments: [note.id, note.title, note.body, pinned, "2026-0\(n + 1)-01T00:00:00Z"])
                }
                if version == "v3" {
                    try db.execute(sql: "INSERT INTO category(id, name) VALUES ('c-1', 'Ünïcödé'), ('c-2', '')")
                    try db.execute(sql: "UPDATE note SET categoryId = 'c-1' WHERE id = ?", arguments: [NotesExample.awkwardNotes[2].id])
                }
                if version != "v1" {
                    let ids = NotesExample.awkwardNotes.map(\.id)
                    for (n, (noteID, name)) in [(ids[1], "ünïcödé"), (ids[1], ""), (ids[2], "🏷️")].enumerated() {
                        try db.execute(sql: "INSERT INTO tag(id, noteId, name) VALUES (?, ?, ?)", arguments: ["tag-\(n)", noteID, name])
                    }
                }
            }
            let target = Self.fixture(version)
            try? FileManager.default.removeItem(at: target)
            try database.writer.writeWithoutTransaction { db in
                try db.execute(sql: "VACUUM INTO ?", arguments: [target.path])
            }
        }
    }
}
