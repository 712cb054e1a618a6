import FerryServer
import Crypto
import Foundation
import PostgresNIO

extension PostgresSyncStore {
    /// Runs the migrations this database lacks, under an advisory lock so
    /// instances starting together migrate once, and returns the cursor codec.
    ///
    /// - Throws: `FerryServerError` `internalError` (fatal) when the
    ///   database was migrated by a newer Ferry.
    func migrate() async throws -> PullCursorCodec {
        let logger = self.logger
        return try await client.withConnection { connection in
            // A migration of a big table, or the wait for another instance's,
            // may take longer than a request may; the limits come back after.
            try await connection.query("SET statement_timeout = 0", logger: logger)
            try await connection.query("SET lock_timeout = 0", logger: logger)
            try await connection.query("SELECT pg_advisory_lock(\(PostgresSchema.migrationLock))", logger: logger)
            do {
                let codec = try await Self.migrate(connection, logger: logger)
                try await connection.query("SELECT pg_advisory_unlock(\(PostgresSchema.migrationLock))", logger: logger)
                try await connection.query("RESET statement_timeout", logger: logger)
                try await connection.query("RESET lock_timeout", logger: logger)
                return codec
            } catch {
                // A session lock dies with its connection.
                try? await connection.close()
                throw error
            }
        }
    }

    private static func migrate(_ connection: PostgresConnection, logger: Logger) async throws -> PullCursorCodec {
        try await connection.query(
            """
            CREATE TABLE IF NOT EXISTS ferry_schema_migrations (
                version int PRIMARY KEY,
                applied_at timestamptz NOT NULL DEFAULT now()
            )
            """, logger: logger)
        var applied: Set<Int> = []
        for try await version in try await connection.query("SELECT version FROM ferry_schema_migrations", logger: logger).decode(Int.self) {
            applied.insert(version)
        }
        let newest = applied.max() ?? 0
        guard newest <= PostgresSchema.latestVersion else {
            throw FerryServerError(
                .internalError,
                "the database's Ferry schema is at version \(newest), newer than this ferry-server knows (\(PostgresSchema.latestVersion)); run a newer ferry-server"
            )
        }
        for migration in PostgresSchema.migrations where !applied.contains(migration.version) {
            try await connection.query("BEGIN", logger: logger)
            do {
                for statement in migration.statements {
                    try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
                try await connection.query("INSERT INTO ferry_schema_migrations (version) VALUES (\(migration.version))", logger: logger)
                try await connection.query("COMMIT", logger: logger)
            } catch {
                _ = try? await connection.query("ROLLBACK", logger: logger)
                throw error
            }
            logger.info("PostgreSQL schema migrated", metadata: ["version": "\(migration.version)"])
        }
        let key = SymmetricKey(size: .bits256).withUnsafeBytes { Data($0) }
        try await connection.query(
            "INSERT INTO ferry_meta (id, epoch, cursor_key) VALUES (1, \(UUID().uuidString), \(key)) ON CONFLICT (id) DO NOTHING",
            logger: logger
        )
        try await renewEpochIfRestored(connection, logger: logger)
        for try await (epoch, cursorKey) in try await connection.query("SELECT epoch, cursor_key FROM ferry_meta", logger: logger)
            .decode((String, Data).self)
        {
            return PullCursorCodec(epoch: epoch, key: SymmetricKey(data: cursorKey))
        }
        throw FerryServerError(.internalError, "the database has no Ferry epoch; it is damaged")
    }

    /// A dump loaded into another database has lost the history after the
    /// dump: the devices hold it, and must send it back rather than mirror
    /// the loss (``StoreHistory``). Such a database starts a new epoch, so
    /// every cursor points into lost history. Loaded into a new cluster, its
    /// rows are also stamped with transaction ids the cluster has not reached:
    /// new changes would sort before them and cursors would skip them, so
    /// they are restamped at zero.
    private static func renewEpochIfRestored(_ connection: PostgresConnection, logger: Logger) async throws {
        let query: PostgresQuery = """
            SELECT COALESCE((SELECT max(xid) FROM ferry_rows), 0) >= pg_snapshot_xmax(pg_current_snapshot())::text::bigint,
                (SELECT database_oid FROM ferry_meta) IS DISTINCT FROM (SELECT oid::bigint FROM pg_database WHERE datname = current_database()),
                (SELECT database_oid IS NULL FROM ferry_meta)
            """
        for try await (ahead, moved, unrecorded) in try await connection.query(query, logger: logger).decode((Bool, Bool, Bool).self) {
            try await connection.query("BEGIN", logger: logger)
            if ahead {
                logger.warning("rows are stamped ahead of this PostgreSQL cluster (a restored dump?); restamping them")
                try await connection.query("UPDATE ferry_rows SET xid = 0", logger: logger)
                try await connection.query("UPDATE ferry_clients SET xid = 0", logger: logger)
                try await connection.query("UPDATE ferry_results SET xid = 0", logger: logger)
                try await connection.query("UPDATE ferry_applied_runs SET xid = 0", logger: logger)
                try await connection.query("UPDATE ferry_notices SET xid = 0", logger: logger)
            }
            if ahead || (moved && !unrecorded) {
                logger.warning("the Ferry data was loaded into another database (a restored dump?); starting a new epoch: devices send back what it lacks")
                try await connection.query("UPDATE ferry_meta SET epoch = \(UUID().uuidString), horizon_xid = 0, horizon_seq = 0", logger: logger)
            }
            try await connection.query(
                """
                UPDATE ferry_meta SET database_oid = (SELECT oid::bigint FROM pg_database WHERE datname = current_database())
                """, logger: logger)
            try await connection.query("COMMIT", logger: logger)
        }
    }
}
