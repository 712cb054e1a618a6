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
            try db.execute(
                sql: """
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
            try db.execute(
                sql: "INSERT INTO ferry_meta(key, value) VALUES (?, ?)",
                arguments: [FerryMeta.Key.clientID.rawValue, UUID().uuidString.lowercased()])
        },
        Migration(identifier: "ferry.v2.sync") { db in
            try db.execute(
                sql: """
                    -- The values a handed-out mutation carries, frozen when its id is
                    -- assigned: a resend after a lost response is byte-identical.
                    CREATE TABLE ferry_frozen (
                        mutation_id INTEGER PRIMARY KEY,
                        payload TEXT NOT NULL
                    );
                    -- Where each followed scope's pull stands. `refetching` marks a
                    -- from-scratch fetch after a reset, finished by a sweep.
                    CREATE TABLE ferry_cursors (
                        scope TEXT PRIMARY KEY NOT NULL,
                        cursor TEXT,
                        refetching INTEGER NOT NULL DEFAULT 0
                    );
                    -- Rows a refetch has seen so far (for the sweep at its end).
                    CREATE TABLE ferry_refetch_seen (
                        scope TEXT NOT NULL,
                        tbl TEXT NOT NULL,
                        row_id TEXT NOT NULL,
                        PRIMARY KEY (scope, tbl, row_id)
                    ) WITHOUT ROWID;
                    -- Conflicts the server reported, until the app resolves them.
                    CREATE TABLE ferry_conflicts (
                        id INTEGER PRIMARY KEY,
                        tbl TEXT NOT NULL,
                        row_id TEXT NOT NULL,
                        scope TEXT NOT NULL,
                        kind TEXT NOT NULL,
                        column_name TEXT,
                        base TEXT,
                        local TEXT,
                        server TEXT,
                        resolution TEXT NOT NULL,
                        mutation_id INTEGER NOT NULL,
                        -- The row's server version the report came with: a
                        -- resolution is based on it, so it never conflicts again.
                        server_version INTEGER,
                        -- For an update lost to a delete: the whole local row, so
                        -- "mine" can re-create it.
                        row_values TEXT,
                        detected_at INTEGER NOT NULL
                    );
                    CREATE INDEX ferry_conflicts_row ON ferry_conflicts(tbl, row_id);
                    -- Pulled rows that could not be applied (a constraint, a type),
                    -- kept with their values and retried after later pages.
                    CREATE TABLE ferry_set_aside (
                        tbl TEXT NOT NULL,
                        row_id TEXT NOT NULL,
                        scope TEXT NOT NULL,
                        version INTEGER NOT NULL,
                        deleted INTEGER NOT NULL,
                        row_values TEXT NOT NULL,
                        reason TEXT NOT NULL,
                        set_aside_at INTEGER NOT NULL,
                        PRIMARY KEY (tbl, row_id)
                    ) WITHOUT ROWID;
                    """)
        },
        Migration(identifier: "ferry.v3.notices") { db in
            try db.execute(
                sql: """
                    -- A conflict notice (another writer's later write discarded a
                    -- value of this user's) lands here like a pushed conflict:
                    -- `notice_id` names it, `overridden_by` the other user.
                    ALTER TABLE ferry_conflicts ADD COLUMN notice_id TEXT;
                    ALTER TABLE ferry_conflicts ADD COLUMN overridden_by TEXT;
                    -- The server's row the report came with (JSON ServerRow), so
                    -- every resolution can write a whole row, held locally or not.
                    ALTER TABLE ferry_conflicts ADD COLUMN server_row TEXT;
                    -- Where each scope's notices stand. Apart from `cursor`: a
                    -- refetch after a reset does not deliver notices again.
                    ALTER TABLE ferry_cursors ADD COLUMN notice_cursor TEXT;
                    -- For a rejected entry: the server's row at the rejection
                    -- (JSON ServerRow, or 'absent'), restored when it is discarded.
                    ALTER TABLE ferry_outbox ADD COLUMN server_row TEXT;
                    -- Rows to read back from the server (`GET /v1/rows`) at the
                    -- next sync: a refused edit was dropped and no reply carried
                    -- the server's version of the row.
                    CREATE TABLE ferry_row_fetches (
                        tbl TEXT NOT NULL,
                        row_id TEXT NOT NULL,
                        scope TEXT, -- NULL: the user's own scope
                        PRIMARY KEY (tbl, row_id)
                    ) WITHOUT ROWID;
                    """)
        },
        Migration(identifier: "ferry.v4.attachments") { db in
            try db.execute(
                sql: """
                    -- Attachment metadata: a synced table Ferry manages, in the
                    -- scope of the row each belongs to (NULL: the user's own), so
                    -- other devices learn of the attachment and fetch its bytes.
                    CREATE TABLE ferry_attachments (
                        id TEXT PRIMARY KEY NOT NULL,
                        tbl TEXT NOT NULL,
                        row_id TEXT NOT NULL,
                        scope TEXT,
                        name TEXT,
                        content_type TEXT,
                        size INTEGER NOT NULL,
                        sha256 TEXT NOT NULL,
                        created_at INTEGER NOT NULL
                    );
                    CREATE INDEX ferry_attachments_row ON ferry_attachments(tbl, row_id);
                    -- Where this device's copy of each attachment's bytes stands (never synced).
                    CREATE TABLE ferry_attachment_files (
                        id TEXT PRIMARY KEY NOT NULL,
                        state TEXT NOT NULL,
                        transferred INTEGER NOT NULL DEFAULT 0,
                        reason TEXT,
                        last_opened_at INTEGER
                    );
                    """)
        },
        Migration(identifier: "ferry.v5.refused-values") { db in
            try db.execute(
                sql: """
                    -- For a rejected entry: the values its mutation carried (JSON
                    -- column → value), so the refused edit is kept with its reason
                    -- even after a pull gives the row other writers' values.
                    ALTER TABLE ferry_outbox ADD COLUMN refused_values TEXT;
                    """)
        },
        Migration(identifier: "ferry.v6.recovery") { db in
            try db.execute(
                sql: """
                    -- The newest edit stamp of the row's values as last pulled:
                    -- when a server that lost history is refilled, a device's copy
                    -- with a newer stamp than the server's goes back to it.
                    ALTER TABLE ferry_rows ADD COLUMN hlc INTEGER;
                    -- A from-scratch fetch because the server lost the history the
                    -- cursor came from: it ends by sending back what the server
                    -- lacks, never by a sweep.
                    ALTER TABLE ferry_cursors ADD COLUMN recovering INTEGER NOT NULL DEFAULT 0;
                    -- The cursor held before the scope was started over (a new
                    -- column): the refetch names it, so a server that lost that
                    -- history says so instead of being mirrored.
                    ALTER TABLE ferry_cursors ADD COLUMN previous_cursor TEXT;
                    """)
        },
        Migration(identifier: "ferry.v7.attachment-owners") { db in
            try db.execute(
                sql: """
                    -- Rows with attachments deleted on this device since the last
                    -- write Ferry ran: their attachments go with them once the
                    -- write's transaction shows the row really gone (a REPLACE
                    -- deletes and re-inserts it).
                    CREATE TABLE ferry_deleted_owners (
                        tbl TEXT NOT NULL,
                        row_id TEXT NOT NULL,
                        PRIMARY KEY (tbl, row_id)
                    ) WITHOUT ROWID;
                    """)
        },
        Migration(identifier: "ferry.v8.settled-notices") { db in
            try db.execute(
                sql: """
                    -- Conflict notices resolved or dismissed here, until the server
                    -- has them: it tells the user's other devices to drop theirs.
                    CREATE TABLE ferry_settled_notices (
                        scope TEXT NOT NULL,
                        notice_id TEXT NOT NULL,
                        PRIMARY KEY (scope, notice_id)
                    ) WITHOUT ROWID;
                    """)
        },
        Migration(identifier: "ferry.v9.pending-index") { db in
            // Queries name the state as a literal (`OutboxRecord.State.condition`): SQLite matches a
            // partial index against a bound value only by preparing the statement again at each run.
            // The sync's reads of pending entries name their index (`OutboxRecord.pendingEntries`).
            try db.execute(
                sql: """
                    -- The pending entries alone, in order: settled ones stay until
                    -- the app purges them, and a drain, a pull's rebase and every
                    -- "anything left?" would otherwise read all of them first.
                    CREATE INDEX ferry_outbox_pending ON ferry_outbox(seq) WHERE state = 'pending';
                    -- Whether the server refused a row before (asked as a batch is
                    -- taken), and the rejected count after every sync.
                    CREATE INDEX ferry_outbox_rejected ON ferry_outbox(tbl, row_id) WHERE state = 'rejected';
                    """)
        },
        Migration(identifier: "ferry.v10.frozen-in-outbox") { db in
            // A handed-out mutation's frozen payload moves onto its first entry: written by the update that
            // gives the entry its id and cleared by the one that settles it, instead of a row of its own
            // inserted and deleted for every mutation a drain sends (a tenth of the device's share).
            try db.execute(
                sql: """
                    ALTER TABLE ferry_outbox ADD COLUMN frozen TEXT;
                    -- Each handed-out mutation's first entry, found in one pass over the pending ones.
                    UPDATE ferry_outbox SET frozen =
                        (SELECT payload FROM ferry_frozen WHERE ferry_frozen.mutation_id = ferry_outbox.mutation_id)
                    WHERE seq IN (SELECT min(seq) FROM ferry_outbox INDEXED BY ferry_outbox_pending
                                  WHERE state = 'pending' AND mutation_id IS NOT NULL GROUP BY mutation_id);
                    DROP TABLE ferry_frozen;
                    """)
        },
    ]

    /// Whether every migration is applied (read only).
    static func isComplete(_ db: Database) throws -> Bool {
        guard try db.tableExists("ferry_migrations") else { return false }
        let applied = Set(try String.fetchAll(db, sql: "SELECT identifier FROM ferry_migrations"))
        return all.allSatisfy { applied.contains($0.identifier) }
    }

    static func migrate(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE IF NOT EXISTS ferry_migrations (identifier TEXT PRIMARY KEY NOT NULL)
                """)
        for migration in all {
            try db.inTransaction(.immediate) {
                let applied =
                    try Bool.fetchOne(
                        db, sql: "SELECT 1 FROM ferry_migrations WHERE identifier = ?",
                        arguments: [migration.identifier]) ?? false
                if !applied {
                    try migration.migrate(db)
                    try db.execute(
                        sql: "INSERT INTO ferry_migrations(identifier) VALUES (?)",
                        arguments: [migration.identifier])
                }
                return .commit
            }
        }
    }
}
