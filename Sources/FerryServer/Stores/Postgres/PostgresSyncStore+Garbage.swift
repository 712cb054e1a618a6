import Foundation
import PostgresNIO

extension PostgresSyncStore {
    /// Removes tombstones last changed before `cutoff` (DESIGN.md server
    /// semantic 6). The horizon moves past every tombstone removed, both as
    /// a version (a stale edit of a removed row conflicts) and as a change
    /// position (a cursor behind it gets a reset). History no longer needed
    /// to tell a base value, and replay results older than the horizon, go
    /// too; each client's newest result stays.
    public func collectGarbage(before cutoff: Date) async throws -> GarbageReport {
        let cutoffMilliseconds = Int64((cutoff.timeIntervalSince1970 * 1000).rounded(.down))
        let logger = self.logger
        return try await transaction(.serializable) { connection, _ in
            // Notices expire with the tombstone retention.
            try await connection.query("DELETE FROM ferry_notices WHERE created_at < \(cutoffMilliseconds)", logger: logger)
            var horizon: Int64 = 0
            var position = ChangePosition.start
            for try await (version, xid, seq) in try await connection.query(
                "SELECT horizon_version, horizon_xid, horizon_seq FROM ferry_meta", logger: logger
            ).decode((Int64, Int64, Int64).self) {
                horizon = version
                position = ChangePosition(major: xid, minor: seq)
            }
            // Only tombstones every pull can already see: collecting one a pull
            // cannot read yet would put the horizon ahead of every cursor.
            let readable = "xid < pg_snapshot_xmin(pg_current_snapshot())::text::bigint"
            let doomed = PostgresQuery(unsafeSQL: """
                SELECT version, xid FROM ferry_rows WHERE deleted AND changed_at < \(cutoffMilliseconds) AND \(readable)
                """)
            var removed = 0
            for try await (version, xid) in try await connection.query(doomed, logger: logger).decode((Int64, Int64).self) {
                removed += 1
                horizon = max(horizon, version)
                position = max(position, ChangePosition(major: xid, minor: version))
            }
            guard removed > 0 else { return GarbageReport(horizon: horizon, tombstonesRemoved: 0) }
            try await connection.query("""
                DELETE FROM ferry_history h USING ferry_rows r
                WHERE r.scope = h.scope AND r.tbl = h.tbl AND r.row_id = h.row_id
                    AND r.deleted AND r.changed_at < \(cutoffMilliseconds) AND r.\(unescaped: readable)
                """, logger: logger)
            try await connection.query(
                "DELETE FROM ferry_rows WHERE deleted AND changed_at < \(cutoffMilliseconds) AND \(unescaped: readable)", logger: logger
            )
            // Keep, per column, the newest value at or below the horizon: it is
            // the value at any base a client can still hold.
            try await connection.query("""
                DELETE FROM ferry_history h WHERE h.version < \(horizon) AND EXISTS (
                    SELECT 1 FROM ferry_history newer
                    WHERE newer.scope = h.scope AND newer.tbl = h.tbl AND newer.row_id = h.row_id AND newer.col = h.col
                        AND newer.version > h.version AND newer.version <= \(horizon))
                """, logger: logger)
            try await connection.query("""
                DELETE FROM ferry_results r WHERE r.version < \(horizon) AND r.mutation_id < (
                    SELECT c.last_mutation_id FROM ferry_clients c WHERE c.user_id = r.user_id AND c.client_id = r.client_id)
                """, logger: logger)
            try await connection.query("""
                UPDATE ferry_meta SET horizon_version = \(horizon), horizon_xid = \(position.major), horizon_seq = \(position.minor)
                """, logger: logger)
            return GarbageReport(horizon: horizon, tombstonesRemoved: removed)
        }
    }
}
