import Ferry
import GRDB

/// The schema `ferry-test-worker` opens; tests open the same file with it.
public enum ItemSchema {
    public static func migrator() -> DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.execute(
                sql: """
                    CREATE TABLE item (id TEXT PRIMARY KEY NOT NULL, writer TEXT NOT NULL, revision INTEGER NOT NULL, payload TEXT)
                    """)
        }
        return migrator
    }

    public static let schema = FerrySchema(migrator: migrator(), syncedTables: [SyncedTable("item")])

    /// Every item's revision, by id.
    public static func revisions(_ db: Database) throws -> [String: Int] {
        try Dictionary(uniqueKeysWithValues: Row.fetchAll(db, sql: "SELECT id, revision FROM item").map { ($0["id"] as String, $0["revision"] as Int) })
    }
}
