import Ferry
import GRDB

/// The three-version example schema of the migration history tests.
///
/// - v1: notes.
/// - v2: adds tags (a table referencing notes) and indexes.
/// - v3: adds categories and a `categoryId` column, and changes `pinned`
///   from TEXT ('true'/'false') to INTEGER through a create-copy-drop-rename
///   rebuild.
///
/// Shipped migrations never change: database files saved by each version are
/// committed in `Fixtures/`, and the schema of each version in
/// `Fixtures/schemas/`.
enum NotesExample {
    static let versions = ["v1", "v2", "v3"]

    static func migrator() -> DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.execute(
                sql: """
                    CREATE TABLE note (
                        id TEXT PRIMARY KEY NOT NULL,
                        title TEXT NOT NULL,
                        body TEXT,
                        pinned TEXT,
                        createdAt TEXT NOT NULL
                    )
                    """)
        }
        migrator.registerMigration("v2") { db in
            try db.execute(
                sql: """
                    CREATE TABLE tag (
                        id TEXT PRIMARY KEY NOT NULL,
                        noteId TEXT NOT NULL REFERENCES note(id) ON DELETE CASCADE,
                        name TEXT NOT NULL
                    );
                    CREATE INDEX tag_on_noteId ON tag(noteId);
                    CREATE INDEX note_on_createdAt ON note(createdAt);
                    """)
        }
        migrator.registerMigration("v3") { db in
            try db.execute(
                sql: """
                    CREATE TABLE category (
                        id TEXT PRIMARY KEY NOT NULL,
                        name TEXT NOT NULL UNIQUE
                    );
                    CREATE TABLE note_new (
                        id TEXT PRIMARY KEY NOT NULL,
                        title TEXT NOT NULL,
                        body TEXT,
                        pinned INTEGER NOT NULL DEFAULT 0,
                        createdAt TEXT NOT NULL,
                        categoryId TEXT REFERENCES category(id) ON DELETE SET NULL
                    );
                    INSERT INTO note_new(id, title, body, pinned, createdAt, categoryId)
                        SELECT id, title, body, CASE pinned WHEN 'true' THEN 1 ELSE 0 END, createdAt, NULL FROM note;
                    DROP TABLE note;
                    ALTER TABLE note_new RENAME TO note;
                    CREATE INDEX note_on_createdAt ON note(createdAt);
                    CREATE INDEX note_on_categoryId ON note(categoryId);
                    """)
        }
        return migrator
    }

    static func syncedTables(at version: String) -> [SyncedTable] {
        switch version {
        case "v1": [SyncedTable("note")]
        case "v2": [SyncedTable("note"), SyncedTable("tag")]
        default: [SyncedTable("note"), SyncedTable("tag"), SyncedTable("category")]
        }
    }

    static func schema(at version: String) -> FerrySchema {
        FerrySchema(migrator: migrator(), syncedTables: syncedTables(at: version), upTo: version)
    }

    /// Text that breaks naive code: empty, long, and far from ASCII.
    static let longText = String(repeating: "Lorem ipsum dolor sit amet, ", count: 4_000)
    static let awkwardNotes: [(id: String, title: String, body: String?, pinned: String?)] = [
        ("3f1c0a4e-0000-4000-8000-000000000001", "", nil, nil),
        ("3f1c0a4e-0000-4000-8000-000000000002", "naïve café — ünïcödé", "", "true"),
        ("3f1c0a4e-0000-4000-8000-000000000003", "日本語のメモ 📝👩‍👩‍👧", "עברית ← right to left", "false"),
        ("3f1c0a4e-0000-4000-8000-000000000004", "long", longText, "yes"),
        ("3f1c0a4e-0000-4000-8000-000000000005", "quote ' and \" and \\ and \u{7} bell", "line\nbreaks\r\n\ttab", "true"),
    ]
}
