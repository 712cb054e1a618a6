import Ferry
import GRDB

/// A small app schema for capture tests: a private table and a shared one.
enum NotesAndTasks {
    static func migrator() -> DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.execute(
                sql: """
                    CREATE TABLE note (id TEXT PRIMARY KEY NOT NULL, title TEXT NOT NULL DEFAULT '', body TEXT, score REAL, data BLOB);
                    CREATE TABLE task (id TEXT PRIMARY KEY NOT NULL, listScope TEXT NOT NULL, done INTEGER NOT NULL DEFAULT 0);
                    CREATE TABLE local_draft (id INTEGER PRIMARY KEY, text TEXT);
                    """)
        }
        return migrator
    }

    static let schema = FerrySchema(
        migrator: migrator(),
        syncedTables: [
            SyncedTable("note"),
            SyncedTable("task", scope: .column("listScope")),
        ])

    static func inMemory(configuration: FerryConfiguration = FerryConfiguration()) throws -> FerryDatabase {
        try FerryDatabase(writer: DatabaseQueue(), schema: schema, configuration: configuration)
    }
}
