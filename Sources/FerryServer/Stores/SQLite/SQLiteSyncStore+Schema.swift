import Crypto
import Foundation
import GRDB

extension SQLiteSyncStore {
    /// The store's schema. Each shipped migration is frozen; changes go in new ones.
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("server.v1") { db in
            try db.execute(
                sql: """
                    CREATE TABLE store_meta (
                        key TEXT PRIMARY KEY NOT NULL,
                        value NOT NULL
                    ) WITHOUT ROWID;

                    -- Current state of every row. `cells` is JSON: per column the
                    -- value, the version that set it, its HLC stamp and client.
                    CREATE TABLE rows (
                        scope TEXT NOT NULL,
                        tbl TEXT NOT NULL,
                        row_id TEXT NOT NULL,
                        version INTEGER NOT NULL,
                        deleted INTEGER NOT NULL,
                        client_id TEXT NOT NULL,
                        changed_at INTEGER NOT NULL,
                        cells TEXT NOT NULL,
                        PRIMARY KEY (scope, tbl, row_id)
                    ) WITHOUT ROWID;
                    CREATE INDEX rows_by_scope_version ON rows (scope, version);
                    CREATE INDEX rows_tombstones ON rows (changed_at) WHERE deleted = 1;

                    -- Overwritten values, so a conflict can report the value at its base.
                    CREATE TABLE history (
                        scope TEXT NOT NULL,
                        tbl TEXT NOT NULL,
                        row_id TEXT NOT NULL,
                        col TEXT NOT NULL,
                        version INTEGER NOT NULL,
                        value TEXT NOT NULL,
                        PRIMARY KEY (scope, tbl, row_id, col, version)
                    ) WITHOUT ROWID;

                    CREATE TABLE clients (
                        user_id TEXT NOT NULL,
                        client_id TEXT NOT NULL,
                        last_mutation_id INTEGER NOT NULL,
                        PRIMARY KEY (user_id, client_id)
                    ) WITHOUT ROWID;

                    -- The result of each applied mutation, returned again on replay.
                    CREATE TABLE results (
                        user_id TEXT NOT NULL,
                        client_id TEXT NOT NULL,
                        mutation_id INTEGER NOT NULL,
                        version INTEGER NOT NULL,
                        result TEXT NOT NULL,
                        PRIMARY KEY (user_id, client_id, mutation_id)
                    ) WITHOUT ROWID;

                    CREATE TABLE conflicts (
                        id INTEGER PRIMARY KEY,
                        user_id TEXT NOT NULL,
                        client_id TEXT NOT NULL,
                        mutation_id INTEGER NOT NULL,
                        scope TEXT NOT NULL,
                        tbl TEXT NOT NULL,
                        row_id TEXT NOT NULL,
                        version INTEGER,
                        conflict TEXT NOT NULL,
                        created_at INTEGER NOT NULL
                    );

                    CREATE TABLE rejections (
                        id INTEGER PRIMARY KEY,
                        user_id TEXT NOT NULL,
                        client_id TEXT NOT NULL,
                        mutation_id INTEGER NOT NULL,
                        scope TEXT NOT NULL,
                        tbl TEXT NOT NULL,
                        row_id TEXT NOT NULL,
                        reason TEXT NOT NULL,
                        mutation TEXT NOT NULL,
                        created_at INTEGER NOT NULL
                    );

                    CREATE TABLE scopes (
                        scope TEXT PRIMARY KEY NOT NULL,
                        owner TEXT
                    ) WITHOUT ROWID;

                    CREATE TABLE members (
                        scope TEXT NOT NULL REFERENCES scopes(scope),
                        user_id TEXT NOT NULL,
                        role TEXT NOT NULL,
                        PRIMARY KEY (scope, user_id)
                    ) WITHOUT ROWID;
                    CREATE INDEX members_by_user ON members (user_id);
                    """)
            try db.execute(
                sql: "INSERT INTO store_meta (key, value) VALUES ('epoch', ?), ('cursorKey', ?), ('version', 0), ('horizon', 0)",
                arguments: [UUID().uuidString, SymmetricKey(size: .bits256).withUnsafeBytes { Data($0) }]
            )
        }
        migrator.registerMigration("server.v2.notices") { db in
            try db.execute(
                sql: """
                    -- Conflict notices: a value `user_id` had pushed and the server
                    -- applied, discarded by a later write of `by_user`/`by_client`
                    -- that had not seen it. Pulls of `scope` deliver them to every
                    -- device of `user_id`. AUTOINCREMENT: ids are never reused, so
                    -- a notice cursor never skips a new notice.
                    CREATE TABLE notices (
                        id INTEGER PRIMARY KEY AUTOINCREMENT,
                        user_id TEXT NOT NULL,
                        scope TEXT NOT NULL,
                        by_user TEXT NOT NULL,
                        by_client TEXT NOT NULL,
                        version INTEGER NOT NULL,
                        notice TEXT NOT NULL,
                        created_at INTEGER NOT NULL
                    );
                    CREATE INDEX notices_by_reader ON notices (user_id, scope, id);
                    CREATE INDEX notices_by_age ON notices (created_at);
                    """)
        }
        migrator.registerMigration("server.v3.generations") { db in
            try db.execute(
                sql: """
                    -- One row per opening of the store (StoreHistory): cursors name
                    -- the generation that issued them, and a generation ends at the
                    -- version the file held when it was next opened. The empty id
                    -- stands for cursors issued before generations were kept.
                    CREATE TABLE store_generations (
                        id TEXT PRIMARY KEY NOT NULL,
                        started_at INTEGER NOT NULL,
                        ended_at INTEGER
                    ) WITHOUT ROWID;
                    INSERT INTO store_generations (id, started_at) VALUES ('', 0);
                    -- The generation a notice was recorded in names it with its id:
                    -- a store restored from a backup numbers notices again, and a
                    -- device must not take a new notice for one it already holds.
                    ALTER TABLE notices ADD COLUMN generation TEXT NOT NULL DEFAULT '';
                    -- A tombstone collected into its deletion record (GarbageRules).
                    ALTER TABLE rows ADD COLUMN collected INTEGER NOT NULL DEFAULT 0;
                    -- Collection looks only at tombstones not yet collected.
                    DROP INDEX rows_tombstones;
                    CREATE INDEX rows_tombstones ON rows (changed_at) WHERE deleted = 1 AND collected = 0;
                    """)
        }
        migrator.registerMigration("server.v4.user-conflicts") { db in
            try db.execute(
                sql: """
                    -- A settlement: the user resolved or dismissed the notice named
                    -- here (its public id) on one device; pulls tell the user's
                    -- other devices, in the notice stream, to drop it.
                    ALTER TABLE notices ADD COLUMN settles TEXT;
                    CREATE INDEX notices_settling ON notices (user_id, scope, settles) WHERE settles IS NOT NULL;
                    -- The newest notice when the client first pushed: its first
                    -- pull starts its notices there (NULL: a client from before
                    -- this was kept, which starts at the beginning).
                    ALTER TABLE clients ADD COLUMN first_notice INTEGER;
                    """)
        }
        migrator.registerMigration("server.v5.admin") { db in
            try db.execute(
                sql: """
                    -- The change feed reads every scope's rows in version order.
                    CREATE INDEX rows_by_version ON rows (version);
                    -- When the server last applied a push from the client (ms since 1970).
                    ALTER TABLE clients ADD COLUMN last_push_at INTEGER;
                    -- Where each webhook's deliveries stand, and which process
                    -- delivers it until when.
                    CREATE TABLE webhooks (
                        name TEXT PRIMARY KEY NOT NULL,
                        cursor TEXT,
                        failures INTEGER NOT NULL DEFAULT 0,
                        parked INTEGER NOT NULL DEFAULT 0,
                        last_error TEXT,
                        delivered_at INTEGER,
                        holder TEXT,
                        lease_until INTEGER NOT NULL DEFAULT 0
                    ) WITHOUT ROWID;
                    """)
        }
        migrator.registerMigration("server.v6.history-writers") { db in
            try db.execute(
                sql: """
                    -- Who wrote an overwritten value (`user:client`) and when, by the
                    -- writer's clock: the console's row inspector shows them. NULL
                    -- for values overwritten before this was kept.
                    ALTER TABLE history ADD COLUMN client_id TEXT;
                    ALTER TABLE history ADD COLUMN written_at INTEGER;
                    """)
        }
        migrator.registerMigration("server.v7.applied-runs") { db in
            try db.execute(
                sql: """
                    -- A run of a push's results that applied as written (AppliedRun):
                    -- mutation ids first…last, each giving its row the version after
                    -- the one before, from first_version. One row where `results`
                    -- kept one per mutation; every other result stays there.
                    CREATE TABLE applied_runs (
                        user_id TEXT NOT NULL,
                        client_id TEXT NOT NULL,
                        first_mutation_id INTEGER NOT NULL,
                        last_mutation_id INTEGER NOT NULL,
                        first_version INTEGER NOT NULL,
                        version INTEGER NOT NULL,
                        PRIMARY KEY (user_id, client_id, first_mutation_id)
                    ) WITHOUT ROWID;

                    -- Every recorded result, one row per mutation either way, a run's
                    -- as the push answered it (the JSON StoreCoding.resultJSON writes):
                    -- for an operator's query, and for counting what was applied.
                    CREATE VIEW recorded_results AS
                    WITH RECURSIVE expanded(user_id, client_id, mutation_id, last_mutation_id, version, result_version) AS (
                        SELECT user_id, client_id, first_mutation_id, last_mutation_id, version, first_version FROM applied_runs
                        UNION ALL
                        SELECT user_id, client_id, mutation_id + 1, last_mutation_id, version, result_version + 1
                        FROM expanded WHERE mutation_id < last_mutation_id)
                    SELECT user_id, client_id, mutation_id, version, result FROM results
                    UNION ALL
                    SELECT user_id, client_id, mutation_id, version,
                        '{"conflicts":[],"mutationID":' || mutation_id || ',"replayed":false,"status":"applied","version":' || result_version || '}'
                    FROM expanded;
                    """)
        }
        migrator.registerMigration("server.v8.mutation-digests") { db in
            try db.execute(
                sql: """
                    -- What each applied mutation said (MutationDigest), one row per push:
                    -- eight bytes per mutation, first…last. A replay of those ids is
                    -- checked against them: a different edit under an applied id is a
                    -- second copy of the client's database, not a replay.
                    CREATE TABLE mutation_digests (
                        user_id TEXT NOT NULL,
                        client_id TEXT NOT NULL,
                        first_mutation_id INTEGER NOT NULL,
                        last_mutation_id INTEGER NOT NULL,
                        version INTEGER NOT NULL,
                        digests BLOB NOT NULL,
                        PRIMARY KEY (user_id, client_id, first_mutation_id)
                    ) WITHOUT ROWID;
                    """)
        }
        return migrator
    }
}
