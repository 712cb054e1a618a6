import FerryServer
/// The PostgreSQL store's schema, as numbered migrations. Each shipped
/// migration is frozen; changes go in new ones. Every instance runs the
/// missing ones on start, one instance at a time (an advisory lock), and
/// refuses to start on a database migrated by a newer Ferry.
enum PostgresSchema {
    struct Migration: Sendable {
        var version: Int
        var statements: [String]
    }

    /// The advisory lock key instances take while migrating ("ferry" in ASCII).
    static let migrationLock: Int64 = 0x6665_7272_79

    /// The channel pushes notify, so every instance hears of every commit.
    static let channel = "ferry_changes"

    static let migrations: [Migration] = [
        Migration(
            version: 1,
            statements: [
                // One row: the epoch and cursor key, and the tombstone horizon both
                // as a version (for merges) and as a change position (for cursors).
                """
                CREATE TABLE ferry_meta (
                    id int PRIMARY KEY CHECK (id = 1),
                    epoch text NOT NULL,
                    cursor_key bytea NOT NULL,
                    horizon_version bigint NOT NULL DEFAULT 0,
                    horizon_xid bigint NOT NULL DEFAULT 0,
                    horizon_seq bigint NOT NULL DEFAULT 0
                )
                """,
                // The store's one version counter.
                "CREATE SEQUENCE ferry_versions",
                // Current state of every row. `xid` is the writing transaction
                // (pg_current_xact_id); pulls page by (xid, version).
                """
                CREATE TABLE ferry_rows (
                    scope text NOT NULL,
                    tbl text NOT NULL,
                    row_id text NOT NULL,
                    version bigint NOT NULL,
                    xid bigint NOT NULL,
                    deleted boolean NOT NULL,
                    client_id text NOT NULL,
                    changed_at bigint NOT NULL,
                    cells text NOT NULL,
                    PRIMARY KEY (scope, tbl, row_id)
                )
                """,
                "CREATE INDEX ferry_rows_by_scope_position ON ferry_rows (scope, xid, version)",
                "CREATE INDEX ferry_rows_tombstones ON ferry_rows (changed_at) WHERE deleted",
                """
                CREATE TABLE ferry_history (
                    scope text NOT NULL,
                    tbl text NOT NULL,
                    row_id text NOT NULL,
                    col text NOT NULL,
                    version bigint NOT NULL,
                    value text NOT NULL,
                    PRIMARY KEY (scope, tbl, row_id, col, version)
                )
                """,
                """
                CREATE TABLE ferry_clients (
                    user_id text NOT NULL,
                    client_id text NOT NULL,
                    last_mutation_id bigint NOT NULL,
                    xid bigint NOT NULL,
                    PRIMARY KEY (user_id, client_id)
                )
                """,
                """
                CREATE TABLE ferry_results (
                    user_id text NOT NULL,
                    client_id text NOT NULL,
                    mutation_id bigint NOT NULL,
                    version bigint NOT NULL,
                    xid bigint NOT NULL,
                    result text NOT NULL,
                    PRIMARY KEY (user_id, client_id, mutation_id)
                )
                """,
                """
                CREATE TABLE ferry_conflicts (
                    id bigserial PRIMARY KEY,
                    user_id text NOT NULL,
                    client_id text NOT NULL,
                    mutation_id bigint NOT NULL,
                    scope text NOT NULL,
                    tbl text NOT NULL,
                    row_id text NOT NULL,
                    version bigint,
                    conflict text NOT NULL,
                    created_at bigint NOT NULL
                )
                """,
                """
                CREATE TABLE ferry_rejections (
                    id bigserial PRIMARY KEY,
                    user_id text NOT NULL,
                    client_id text NOT NULL,
                    mutation_id bigint NOT NULL,
                    scope text NOT NULL,
                    tbl text NOT NULL,
                    row_id text NOT NULL,
                    reason text NOT NULL,
                    mutation text NOT NULL,
                    created_at bigint NOT NULL
                )
                """,
                "CREATE TABLE ferry_scopes (scope text PRIMARY KEY, owner text)",
                """
                CREATE TABLE ferry_members (
                    scope text NOT NULL REFERENCES ferry_scopes (scope),
                    user_id text NOT NULL,
                    role text NOT NULL,
                    PRIMARY KEY (scope, user_id)
                )
                """,
                "CREATE INDEX ferry_members_by_user ON ferry_members (user_id)",
                "CREATE INDEX ferry_scopes_by_owner ON ferry_scopes (owner)",
            ]),
        Migration(
            version: 2,
            statements: [
                // Conflict notices: a value `user_id` had pushed and the server
                // applied, discarded by a later write that had not seen it. Pulls
                // of `scope` deliver them to every device of `user_id`, by
                // (xid, id) below the oldest running transaction, like rows.
                """
                CREATE TABLE ferry_notices (
                    id bigserial PRIMARY KEY,
                    xid bigint NOT NULL,
                    user_id text NOT NULL,
                    scope text NOT NULL,
                    by_user text NOT NULL,
                    by_client text NOT NULL,
                    version bigint NOT NULL,
                    notice text NOT NULL,
                    created_at bigint NOT NULL
                )
                """,
                "CREATE INDEX ferry_notices_by_reader ON ferry_notices (user_id, scope, xid, id)",
                "CREATE INDEX ferry_notices_by_age ON ferry_notices (created_at)",
            ]),
        Migration(
            version: 3,
            statements: [
                // Attachment bytes (PostgresBlobStore): one row per blob, complete
                // once every byte is in and hashed to `sha256`...
                """
                CREATE TABLE ferry_blobs (
                    scope text NOT NULL,
                    sha256 text NOT NULL,
                    length bigint NOT NULL,
                    received bigint NOT NULL,
                    complete boolean NOT NULL DEFAULT false,
                    modified_at timestamptz NOT NULL DEFAULT now(),
                    PRIMARY KEY (scope, sha256)
                )
                """,
                // ...and its bytes in chunks, by where each starts.
                """
                CREATE TABLE ferry_blob_chunks (
                    scope text NOT NULL,
                    sha256 text NOT NULL,
                    start bigint NOT NULL,
                    data bytea NOT NULL,
                    PRIMARY KEY (scope, sha256, start)
                )
                """,
            ]),
        Migration(
            version: 4,
            statements: [
                // The database the epoch was issued in (its oid): a dump loaded
                // into another database, of this cluster or another, has lost the
                // history after the dump, so it starts a new epoch.
                "ALTER TABLE ferry_meta ADD COLUMN database_oid bigint",
                // A tombstone collected into its deletion record (GarbageRules).
                "ALTER TABLE ferry_rows ADD COLUMN collected boolean NOT NULL DEFAULT false",
                // Collection looks only at tombstones not yet collected.
                "DROP INDEX ferry_rows_tombstones",
                "CREATE INDEX ferry_rows_tombstones ON ferry_rows (changed_at) WHERE deleted AND NOT collected",
            ]),
        Migration(
            version: 5,
            statements: [
                // A settlement: the user resolved or dismissed the notice named
                // here (its public id) on one device; pulls tell the user's other
                // devices, in the notice stream, to drop it.
                "ALTER TABLE ferry_notices ADD COLUMN settles text",
                "CREATE INDEX ferry_notices_settling ON ferry_notices (user_id, scope, settles) WHERE settles IS NOT NULL",
                // Every transaction below it had ended when the client first
                // pushed: its first pull starts its notices there (NULL: a client
                // from before this was kept, which starts at the beginning).
                "ALTER TABLE ferry_clients ADD COLUMN first_notice_xid bigint",
            ]),
        Migration(
            version: 6,
            statements: [
                // The change feed reads every scope's rows in change order.
                "CREATE INDEX ferry_rows_by_position ON ferry_rows (xid, version)",
                // When the server last applied a push from the client (ms since 1970).
                "ALTER TABLE ferry_clients ADD COLUMN last_push_at bigint",
                // Where each webhook's deliveries stand, and which instance
                // delivers it until when: one delivery pipeline, whichever
                // instance holds the lease.
                """
                CREATE TABLE ferry_webhooks (
                    name text PRIMARY KEY,
                    cursor text,
                    failures integer NOT NULL DEFAULT 0,
                    parked boolean NOT NULL DEFAULT false,
                    last_error text,
                    delivered_at bigint,
                    holder text,
                    lease_until bigint NOT NULL DEFAULT 0
                )
                """,
            ]),
        Migration(
            version: 7,
            statements: [
                // The hash of an upload's bytes so far (a SHA256Digest checkpoint),
                // written with each chunk: a resumed or windowed upload hashes only
                // its new bytes. NULL: none saved (an upload an older build began).
                "ALTER TABLE ferry_blobs ADD COLUMN hash_state bytea"
            ]),
        Migration(
            version: 8,
            statements: [
                // Who wrote an overwritten value (`user:client`) and when, by the
                // writer's clock: the console's row inspector shows them. NULL
                // for values overwritten before this was kept (or by an older build).
                "ALTER TABLE ferry_history ADD COLUMN client_id text, ADD COLUMN written_at bigint"
            ]),
        Migration(
            version: 9,
            statements: [
                // A run of a push's results that applied as written (AppliedRun):
                // mutation ids first…last, each giving its row the version after
                // the one before, from first_version. One row where ferry_results
                // kept one per mutation; every other result stays there.
                """
                CREATE TABLE ferry_applied_runs (
                    user_id text NOT NULL,
                    client_id text NOT NULL,
                    first_mutation_id bigint NOT NULL,
                    last_mutation_id bigint NOT NULL,
                    first_version bigint NOT NULL,
                    version bigint NOT NULL,
                    xid bigint NOT NULL,
                    PRIMARY KEY (user_id, client_id, first_mutation_id)
                )
                """,
                // Every recorded result, one row per mutation either way, a run's as
                // the push answered it (the JSON StoreCoding.resultJSON writes): for
                // an operator's query, and for counting what was applied.
                """
                CREATE VIEW ferry_recorded_results AS
                SELECT user_id, client_id, mutation_id, version, xid, result FROM ferry_results
                UNION ALL
                SELECT user_id, client_id, m, version, xid,
                    '{"conflicts":[],"mutationID":' || m || ',"replayed":false,"status":"applied","version":'
                        || (first_version + m - first_mutation_id) || '}'
                FROM ferry_applied_runs, generate_series(first_mutation_id, last_mutation_id) AS m
                """,
            ]),
        Migration(
            version: 10,
            statements: [
                // What each applied mutation said (MutationDigest), one row per push:
                // eight bytes per mutation, first…last. A replay of those ids is
                // checked against them: a different edit under an applied id is a
                // second copy of the client's database, not a replay.
                """
                CREATE TABLE ferry_mutation_digests (
                    user_id text NOT NULL,
                    client_id text NOT NULL,
                    first_mutation_id bigint NOT NULL,
                    last_mutation_id bigint NOT NULL,
                    version bigint NOT NULL,
                    digests bytea NOT NULL,
                    PRIMARY KEY (user_id, client_id, first_mutation_id)
                )
                """
            ]),
    ]

    static var latestVersion: Int { migrations.map(\.version).max() ?? 0 }
}
