import Foundation
import GRDB

/// Ferry's own tables and their migrations.
///
/// They are recorded in `ferry_migrations`, apart from the app's
/// `grdb_migrations`, so the app's `DatabaseMigrator` never sees an
/// identifier it does not know (which would trip `hasBeenSuperseded` and
/// `eraseDatabaseOnSchemaChange`). Each migration runs in its own IMMEDIATE
/// transaction that re-checks whether it was applied, so two processes opening
/// one file at once apply it once.
enum FerryMigrations {
    struct Migration: Sendable {
        var identifier: String
        var migrate: @Sendable (Database) throws -> Void
    }

    static let all: [Migration] = [
        Migration(identifier: "ferry.v1.core") { db in
            // No CHECK constraints on ferry_outbox: only Ferry writes it, and an
            // `IN (...)` check doubled the cost of every captured insert.
            try db.execute(sql: """
                CREATE TABLE ferry_meta (
                    key TEXT PRIMARY KEY NOT NULL,
                    value
                );
                CREATE TABLE ferry_outbox (
                    seq INTEGER PRIMARY KEY,
                    tbl TEXT NOT NULL,
                    row_id TEXT NOT NULL,
                    op TEXT NOT NULL,
                    columns TEXT,
                    scope TEXT,
                    base_version INTEGER,
                    hlc INTEGER NOT NULL,
                    mutation_id INTEGER,
                    state TEXT NOT NULL DEFAULT 'pending',
                    reason TEXT,
                    settled_at INTEGER
                );
                CREATE TABLE ferry_rows (
                    tbl TEXT NOT NULL,
                    row_id TEXT NOT NULL,
                    version INTEGER NOT NULL,
                    PRIMARY KEY (tbl, row_id)
                ) WITHOUT ROWID;
                """)
            try db.execute(sql: "INSERT INTO ferry_meta(key, value) VALUES (?, ?)",
                           arguments: [FerryMeta.Key.clientID.rawValue, UUID().uuidString.lowercased()])
        },
    ]

    static func migrate(_ db: Database) throws {
        try db.execute(sql: """
            CREATE TABLE IF NOT EXISTS ferry_migrations (identifier TEXT PRIMARY KEY NOT NULL)
            """)
        for migration in all {
            try db.inTransaction(.immediate) {
                let applied = try Bool.fetchOne(db, sql: "SELECT 1 FROM ferry_migrations WHERE identifier = ?",
                                                arguments: [migration.identifier]) ?? false
                if !applied {
                    try migration.migrate(db)
                    try db.execute(sql: "INSERT INTO ferry_migrations(identifier) VALUES (?)",
                                   arguments: [migration.identifier])
                }
                return .commit
            }
        }
    }
}
