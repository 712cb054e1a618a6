@testable import Ferry
import FerryProtocol
import Foundation
import GRDB
import Testing
import FerryTestSupport

@Suite struct ChangeCaptureTests {
    func entries(_ database: FerryDatabase) throws -> [OutboxEntry] {
        try database.read { db in try Outbox.pendingEntries(db, limit: nil) }
    }

    @Test func insertUpdateAndDeleteEachRecordOneEntryInTheSameTransaction() throws {
        let database = try NotesAndTasks.inMemory()
        try database.write { db in
            try db.execute(sql: "INSERT INTO note(id, title, body) VALUES ('n1', 'Groceries', 'milk')")
        }
        try database.write { db in
            try db.execute(sql: "UPDATE note SET body = 'milk, eggs' WHERE id = 'n1'")
        }
        try database.write { db in
            try db.execute(sql: "DELETE FROM note WHERE id = 'n1'")
        }
        let captured = try entries(database)
        #expect(captured.map(\.operation) == [.insert, .update, .delete])
        #expect(captured.allSatisfy { $0.table == "note" && $0.rowID == "n1" && $0.scope == nil && $0.baseVersion == nil })
        #expect(captured[0].columns == nil)
        #expect(captured[1].columns == ["body"])
        #expect(captured[2].columns == nil)
        #expect(captured.map(\.hlc) == captured.map(\.hlc).sorted())
        #expect(Set(captured.map(\.hlc)).count == 3)
    }

    @Test func rolledBackWritesLeaveNoEntry() throws {
        let database = try NotesAndTasks.inMemory()
        struct Abort: Error {}
        #expect(throws: Abort.self) {
            try database.write { db in
                try db.execute(sql: "INSERT INTO note(id, title) VALUES ('n1', 'x')")
                throw Abort()
            }
        }
        #expect(try entries(database).isEmpty)
        #expect(try database.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM note") } == 0)
    }

    @Test func anUpdateRecordsOnlyTheColumnsWhoseValuesChanged() throws {
        let database = try NotesAndTasks.inMemory()
        try database.write { db in
            try db.execute(sql: "INSERT INTO note(id, title, body, score, data) VALUES ('n1', 'a', NULL, 1.5, x'00')")
            // Same values: nothing changes, nothing is recorded.
            try db.execute(sql: "UPDATE note SET title = 'a', body = NULL, score = 1.5, data = x'00' WHERE id = 'n1'")
            // NULL to value, blob change, and one column untouched.
            try db.execute(sql: "UPDATE note SET body = '', data = x'01', title = 'a' WHERE id = 'n1'")
            // Value to NULL.
            try db.execute(sql: "UPDATE note SET score = NULL WHERE id = 'n1'")
        }
        let captured = try entries(database)
        #expect(captured.map(\.operation) == [.insert, .update, .update])
        #expect(captured[1].columns == ["body", "data"])
        #expect(captured[2].columns == ["score"])
    }

    @Test func everyKindOfWriteIsCaptured() throws {
        let database = try NotesAndTasks.inMemory()
        struct Note: Codable, PersistableRecord, FetchableRecord {
            var id: String
            var title: String
            var body: String?
            var score: Double?
        }
        try database.write { db in
            try Note(id: "record", title: "via GRDB record", body: nil, score: nil).insert(db)
            // Bulk import through INSERT ... SELECT.
            try db.execute(
                sql: """
                    WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 50)
                    INSERT INTO note(id, title) SELECT 'bulk-' || i, 'imported' FROM n
                    """)
            // Upsert: the conflicting insert becomes an update.
            try db.execute(
                sql: """
                    INSERT INTO note(id, title) VALUES ('record', 'renamed')
                    ON CONFLICT(id) DO UPDATE SET title = excluded.title
                    """)
        }
        let captured = try entries(database)
        #expect(captured.count == 52)
        #expect(captured.filter { $0.operation == .insert }.count == 51)
        #expect(captured.last?.operation == .update)
        #expect(captured.last?.columns == ["title"])
    }

    @Test func rowsReplacedByInsertOrReplaceAreCapturedAsDeletes() throws {
        let database = try singleTableDatabase(
            "CREATE TABLE category (id TEXT PRIMARY KEY NOT NULL, name TEXT NOT NULL UNIQUE COLLATE NOCASE)",
            syncing: SyncedTable("category"))
        try database.write { db in
            try db.execute(sql: "INSERT INTO category(id, name) VALUES ('c1', 'work')")
            // A different id with the same unique name: SQLite deletes c1 to make room.
            try db.execute(sql: "INSERT OR REPLACE INTO category(id, name) VALUES ('c2', 'work')")
        }
        let captured = try entries(database)
        #expect(captured.map(\.operation) == [.insert, .delete, .insert])
        #expect(captured.map(\.rowID) == ["c1", "c1", "c2"])
    }

    @Test func aCaseOnlyChangeInANocaseColumnIsAChange() throws {
        let database = try singleTableDatabase(
            "CREATE TABLE tag (id TEXT PRIMARY KEY NOT NULL, name TEXT COLLATE NOCASE)", syncing: SyncedTable("tag"))
        try database.write { db in
            try db.execute(sql: "INSERT INTO tag(id, name) VALUES ('t1', 'abc')")
            try db.execute(sql: "UPDATE tag SET name = 'ABC' WHERE id = 't1'")
        }
        #expect(try entries(database).map(\.columns) == [nil, ["name"]])
    }

    @Test func aMigrationMayDropAndRenameColumnsOfASyncedTable() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("app.sqlite")
        var migrator = NotesAndTasks.migrator()
        _ = try FerryDatabase(path: path, schema: FerrySchema(migrator: migrator, syncedTables: [SyncedTable("note")]))
        migrator.registerMigration("v2") { db in
            try db.execute(sql: "ALTER TABLE note DROP COLUMN score")
            try db.execute(sql: "ALTER TABLE note RENAME COLUMN body TO text")
        }
        let database = try FerryDatabase(path: path, schema: FerrySchema(migrator: migrator, syncedTables: [SyncedTable("note")]))
        try database.write { db in
            try db.execute(sql: "INSERT INTO note(id, title, text) VALUES ('n1', 'x', 'y')")
            try db.execute(sql: "UPDATE note SET text = 'z' WHERE id = 'n1'")
        }
        #expect(try entries(database).map(\.columns) == [nil, ["text"]])
    }

    @Test func scopeColumnIsCapturedForInsertsAndDeletes() throws {
        let database = try NotesAndTasks.inMemory()
        try database.write { db in
            try db.execute(sql: "INSERT INTO task(id, listScope) VALUES ('t1', 'list:groceries')")
            try db.execute(sql: "DELETE FROM task WHERE id = 't1'")
        }
        let captured = try entries(database)
        #expect(captured.map(\.scope) == ["list:groceries", "list:groceries"])
    }

    @Test func unsyncedTablesAreNotCaptured() throws {
        let database = try NotesAndTasks.inMemory()
        try database.write { db in
            try db.execute(sql: "INSERT INTO local_draft(text) VALUES ('scratch')")
        }
        #expect(try entries(database).isEmpty)
    }

    @Test func writesUnderTheGuardRecordNothing() throws {
        let database = try NotesAndTasks.inMemory()
        try database.writeWithoutCapture { db in
            try db.execute(sql: "INSERT INTO note(id, title) VALUES ('from-server', 'x')")
            try db.execute(sql: "UPDATE note SET title = 'y' WHERE id = 'from-server'")
        }
        #expect(try entries(database).isEmpty)
        // The guard ends with its transaction.
        try database.write { db in try db.execute(sql: "UPDATE note SET title = 'z' WHERE id = 'from-server'") }
        #expect(try entries(database).map(\.operation) == [.update])
    }

    @Test func theBaseVersionIsTheLastServerVersionSeen() throws {
        let database = try NotesAndTasks.inMemory()
        try database.writeWithoutCapture { db in
            try db.execute(sql: "INSERT INTO note(id, title) VALUES ('n1', 'x')")
            try db.execute(sql: "INSERT INTO ferry_rows(tbl, row_id, version) VALUES ('note', 'n1', 42)")
        }
        try database.write { db in try db.execute(sql: "UPDATE note SET title = 'mine' WHERE id = 'n1'") }
        #expect(try entries(database).map(\.baseVersion) == [42])
    }

    @Test func thePrimaryKeyCannotChange() throws {
        let database = try NotesAndTasks.inMemory()
        try database.write { db in try db.execute(sql: "INSERT INTO note(id, title) VALUES ('n1', 'x')") }
        let error = #expect(throws: DatabaseError.self) {
            try database.write { db in try db.execute(sql: "UPDATE note SET id = 'n2' WHERE id = 'n1'") }
        }
        #expect(error?.message?.contains("primary key `id` of synced table `note` cannot change") == true)
        #expect(try entries(database).count == 1)
    }

    @Test func captureFollowsTheTableWhenAMigrationAddsAColumnOrRebuildsIt() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("app.sqlite")
        var migrator = NotesAndTasks.migrator()
        let v1 = try FerryDatabase(path: path, schema: FerrySchema(migrator: migrator, syncedTables: [SyncedTable("note")]))
        try v1.write { db in try db.execute(sql: "INSERT INTO note(id, title) VALUES ('n1', 'x')") }

        migrator.registerMigration("v2-add-column") { db in
            try db.execute(sql: "ALTER TABLE note ADD COLUMN color TEXT")
        }
        migrator.registerMigration("v3-rebuild") { db in
            // Change `score` from REAL to TEXT: create, copy, drop, rename.
            try db.execute(
                sql: """
                    CREATE TABLE note_new (id TEXT PRIMARY KEY NOT NULL, title TEXT NOT NULL DEFAULT '', body TEXT,
                                           score TEXT, data BLOB, color TEXT);
                    INSERT INTO note_new SELECT id, title, body, CAST(score AS TEXT), data, color FROM note;
                    DROP TABLE note;
                    ALTER TABLE note_new RENAME TO note;
                    """)
        }
        let v3 = try FerryDatabase(path: path, schema: FerrySchema(migrator: migrator, syncedTables: [SyncedTable("note")]))
        // The migrations themselves recorded nothing: every device runs them.
        #expect(try entries(v3).count == 1)
        try v3.write { db in
            try db.execute(sql: "UPDATE note SET color = 'red', score = 'high' WHERE id = 'n1'")
            try db.execute(sql: "INSERT INTO note(id, title, color) VALUES ('n2', 'y', 'blue')")
            try db.execute(sql: "DELETE FROM note WHERE id = 'n2'")
        }
        let captured = try entries(v3)
        #expect(captured.map(\.operation) == [.insert, .update, .insert, .delete])
        #expect(captured[1].columns == ["color", "score"])
    }

    @Test func openingTwiceDoesNotRewriteTriggers() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("app.sqlite")
        let statements = Locked<[String]>([])
        var configuration = FerryConfiguration()
        configuration.sqlTrace = { sql in statements.withLock { $0.append(sql) } }
        _ = try FerryDatabase(path: path, schema: NotesAndTasks.schema, configuration: configuration)
        let first = statements.withLock { $0 }
        #expect(first.contains { $0.hasPrefix("CREATE TRIGGER") })
        statements.withLock { $0.removeAll() }
        _ = try FerryDatabase(path: path, schema: NotesAndTasks.schema, configuration: configuration)
        let second = statements.withLock { $0 }
        #expect(!second.isEmpty)
        #expect(!second.contains { $0.contains("CREATE TRIGGER") || $0.contains("DROP TRIGGER") || $0.contains("CREATE TABLE ferry") })
    }

    @Test func triggersOfTablesNoLongerSyncedAreDropped() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("app.sqlite")
        _ = try FerryDatabase(path: path, schema: NotesAndTasks.schema)
        let database = try FerryDatabase(path: path, schema: FerrySchema(migrator: NotesAndTasks.migrator(), syncedTables: [SyncedTable("note")]))
        try database.write { db in try db.execute(sql: "INSERT INTO task(id, listScope) VALUES ('t', 's')") }
        #expect(try entries(database).isEmpty)
        let names = try database.read { db in
            try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'trigger' ORDER BY name")
        }
        // Ferry's own synced table of attachment metadata keeps its triggers.
        #expect(
            names.filter { !$0.hasPrefix("ferry_capture_ferry_attachments_") }
                == [
                    "ferry_capture_note_attachments", "ferry_capture_note_delete", "ferry_capture_note_insert",
                    "ferry_capture_note_key", "ferry_capture_note_update",
                ])
    }

    @Test func aConnectionWithoutFerryCannotWriteASyncedTableSilently() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("app.sqlite")
        _ = try FerryDatabase(path: path, schema: NotesAndTasks.schema)
        let plain = try DatabaseQueue(path: path)
        #expect(throws: DatabaseError.self) {
            try plain.write { db in try db.execute(sql: "INSERT INTO note(id, title) VALUES ('sneaky', 'x')") }
        }
    }

    @Test func oddTableAndColumnNamesAreQuoted() throws {
        let database = try singleTableDatabase(
            #"CREATE TABLE "my ""odd"" table" ("the id" TEXT PRIMARY KEY NOT NULL, "it's" TEXT, "a\b" TEXT)"#,
            syncing: SyncedTable(#"my "odd" table"#))
        try database.write { db in
            try db.execute(sql: #"INSERT INTO "my ""odd"" table" VALUES ('r1', 'x', 'y')"#)
            try db.execute(sql: #"UPDATE "my ""odd"" table" SET "it's" = 'z', "a\b" = 'w'"#)
        }
        let captured = try entries(database)
        #expect(captured.map(\.table) == [#"my "odd" table"#, #"my "odd" table"#])
        #expect(captured[1].columns == ["it's", #"a\b"#])
    }
}
