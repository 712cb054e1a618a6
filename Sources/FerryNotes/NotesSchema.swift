import Ferry
import GRDB

/// The notes app's schema: its tables, its migrations, and which tables
/// sync. Version 1 is the first shipped; its fixture file and snapshot are
/// committed under `Tests/FerryNotesTests/Fixtures`, so the next version
/// has a tested path from it.
///
/// Synced: `note` and `notebook` (each row in the scope its `scope` column
/// names: the user's own `user:<id>`, or a shared notebook's scope) and
/// `category` (the user's own). Local, kept in step by triggers for every
/// write, pulled rows included: `note_fts` (FTS5, diacritics folded,
/// prefix indexes) and `note_tag` (one row per tag of a live note, ordered
/// for `ls --tag`).
///
/// ```swift
/// let database = try FerryDatabase(path: path, schema: NotesSchema.schema)
/// ```
public enum NotesSchema {
    public static let schema = FerrySchema(
        migrator: migrator,
        syncedTables: [
            SyncedTable("note", scope: .column("scope")),
            SyncedTable("notebook", scope: .column("scope")),
            SyncedTable("category"),
        ])

    /// The version a database made by this build ends at.
    public static let version = "v2"

    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in try createVersion1(db) }
        migrator.registerMigration("v2") { db in try addConflictNumbers(db) }
        return migrator
    }

    /// Version 2: the number `conflicts` shows for each conflict, never
    /// given twice (the library's conflict ids are reused once a conflict
    /// is resolved, so a `resolve 1` from shell history could reach
    /// another conflict). A number names one conflict by its id and the
    /// moment it was detected. Local: never synced.
    static func addConflictNumbers(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE notes_conflict_number (
                    number INTEGER PRIMARY KEY AUTOINCREMENT,
                    conflict_id INTEGER NOT NULL,
                    detected_at REAL NOT NULL,
                    UNIQUE (conflict_id, detected_at)
                );
                """)
    }

    /// Version 1. Shipped: never edit it; add a migration instead. Public
    /// so a benchmark can make an unsynced copy of the same tables.
    public static func createVersion1(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE notebook (
                    id TEXT PRIMARY KEY NOT NULL,
                    name TEXT NOT NULL,
                    scope TEXT NOT NULL,
                    owner TEXT NOT NULL,
                    created_at INTEGER NOT NULL
                );
                CREATE INDEX notebook_by_name ON notebook(name);

                CREATE TABLE category (
                    id TEXT PRIMARY KEY NOT NULL,
                    name TEXT NOT NULL,
                    color TEXT
                );
                CREATE INDEX category_by_name ON category(name);

                CREATE TABLE note (
                    id TEXT PRIMARY KEY NOT NULL,
                    title TEXT NOT NULL,
                    body TEXT NOT NULL DEFAULT '',
                    category TEXT,
                    tags TEXT NOT NULL DEFAULT '[]',
                    author TEXT NOT NULL,
                    notebook_id TEXT,
                    scope TEXT NOT NULL,
                    created_at INTEGER NOT NULL,
                    updated_at INTEGER NOT NULL,
                    deleted_at INTEGER
                );
                -- One index per list query, newest first (see NoteQuery).
                CREATE INDEX note_live ON note(updated_at DESC, id DESC) WHERE deleted_at IS NULL;
                CREATE INDEX note_deleted ON note(updated_at DESC, id DESC) WHERE deleted_at IS NOT NULL;
                CREATE INDEX note_by_category ON note(category, updated_at DESC, id DESC) WHERE deleted_at IS NULL;
                CREATE INDEX note_by_notebook ON note(notebook_id, updated_at DESC, id DESC) WHERE deleted_at IS NULL;

                -- Tags of live notes, ordered as `ls --tag` lists them.
                CREATE TABLE note_tag (
                    tag TEXT NOT NULL,
                    updated_at INTEGER NOT NULL,
                    note_id TEXT NOT NULL,
                    PRIMARY KEY (tag, updated_at, note_id)
                ) WITHOUT ROWID;
                CREATE INDEX note_tag_by_note ON note_tag(note_id);

                -- (No INSERT OR IGNORE in these triggers: a pulled row arrives by
                -- an upsert, whose conflict handling would override it.)
                -- Search. FTS5 keys rows by integer; `note` has a text key and an
                -- implicit rowid that VACUUM may renumber, so each note gets a
                -- stable integer here (an INTEGER PRIMARY KEY keeps its values).
                CREATE TABLE note_key (
                    key INTEGER PRIMARY KEY,
                    note_id TEXT NOT NULL UNIQUE
                );
                CREATE VIRTUAL TABLE note_fts USING fts5(
                    title, body, tags,
                    tokenize='unicode61 remove_diacritics 2', prefix='2 3'
                );
                -- Rank by BM25 with a match in the title worth most, then tags.
                INSERT INTO note_fts(note_fts, rank) VALUES ('rank', 'bm25(5.0, 1.0, 2.0)');

                CREATE TRIGGER note_after_insert AFTER INSERT ON note BEGIN
                    INSERT INTO note_key(note_id) SELECT new.id WHERE NOT EXISTS (SELECT 1 FROM note_key WHERE note_id = new.id);
                    INSERT INTO note_fts(rowid, title, body, tags)
                        SELECT key, new.title, new.body, new.tags FROM note_key WHERE note_id = new.id AND new.deleted_at IS NULL;
                    INSERT INTO note_tag(tag, updated_at, note_id)
                        SELECT DISTINCT value, new.updated_at, new.id FROM json_each(new.tags)
                        WHERE new.deleted_at IS NULL AND json_valid(new.tags);
                END;
                CREATE TRIGGER note_after_update AFTER UPDATE ON note BEGIN
                    INSERT INTO note_key(note_id) SELECT new.id WHERE NOT EXISTS (SELECT 1 FROM note_key WHERE note_id = new.id);
                    DELETE FROM note_fts WHERE rowid = (SELECT key FROM note_key WHERE note_id = old.id);
                    INSERT INTO note_fts(rowid, title, body, tags)
                        SELECT key, new.title, new.body, new.tags FROM note_key WHERE note_id = new.id AND new.deleted_at IS NULL;
                    DELETE FROM note_tag WHERE note_id = old.id;
                    INSERT INTO note_tag(tag, updated_at, note_id)
                        SELECT DISTINCT value, new.updated_at, new.id FROM json_each(new.tags)
                        WHERE new.deleted_at IS NULL AND json_valid(new.tags);
                END;
                CREATE TRIGGER note_after_delete AFTER DELETE ON note BEGIN
                    DELETE FROM note_fts WHERE rowid = (SELECT key FROM note_key WHERE note_id = old.id);
                    DELETE FROM note_key WHERE note_id = old.id;
                    DELETE FROM note_tag WHERE note_id = old.id;
                END;

                -- This device's settings: never synced.
                CREATE TABLE notes_setting (
                    key TEXT PRIMARY KEY NOT NULL,
                    value TEXT NOT NULL
                );
                -- Server work queued while offline: shared scopes to create, members to add.
                CREATE TABLE notes_server_task (
                    seq INTEGER PRIMARY KEY AUTOINCREMENT,
                    kind TEXT NOT NULL,
                    scope TEXT NOT NULL,
                    user TEXT,
                    role TEXT
                );
                """)
    }
}
