import FerryProtocol
import FerryServer
import Foundation
import PostgresNIO

extension PostgresSyncStore {
    /// Collects garbage by `GarbageRules` (in `Stores/Pipeline`). Only tombstones of transactions
    /// below the snapshot's `xmin` go: collecting one a pull cannot read yet
    /// would put the horizon ahead of every cursor. The horizon moves as a
    /// version (a stale edit of a removed row conflicts) and as a change
    /// position (a cursor behind it gets a reset).
    public func collectGarbage(before cutoff: Date) async throws -> GarbageReport {
        let cutoff = GarbageRules.milliseconds(cutoff)
        let logger = self.logger
        return try await transaction(.serializable) { connection, _ in
            try await connection.query("DELETE FROM ferry_notices WHERE created_at < \(cutoff)", logger: logger)
            var horizon: Int64 = 0
            var position = ChangePosition.start
            for try await (version, xid, seq) in try await connection.query(
                "SELECT horizon_version, horizon_xid, horizon_seq FROM ferry_meta", logger: logger
            ).decode((Int64, Int64, Int64).self) {
                horizon = version
                position = ChangePosition(major: xid, minor: seq)
            }
            var removed = 0
            // A collected tombstone stays as its deletion record: keys, version
            // and deleter, its values and history gone.
            let doomed: PostgresQuery = """
                UPDATE ferry_rows SET cells = '{}', collected = true
                WHERE deleted AND NOT collected AND changed_at < \(cutoff)
                    AND xid < pg_snapshot_xmin(pg_current_snapshot())::text::bigint
                RETURNING scope, tbl, row_id, version, xid
                """
            var scopes: [String] = [], tables: [String] = [], rowIDs: [String] = []
            for try await (scope, table, rowID, version, xid) in try await connection.query(doomed, logger: logger)
                .decode((String, String, String, Int64, Int64).self)
            {
                removed += 1
                scopes.append(scope)
                tables.append(table)
                rowIDs.append(rowID)
                horizon = max(horizon, version)
                position = max(position, ChangePosition(major: xid, minor: version))
            }
            if removed > 0 {
                try await connection.query(
                    """
                    DELETE FROM ferry_history h USING unnest(\(scopes)::text[], \(tables)::text[], \(rowIDs)::text[]) AS k(scope, tbl, row_id)
                    WHERE h.scope = k.scope AND h.tbl = k.tbl AND h.row_id = k.row_id
                    """, logger: logger)
            }
            try await connection.query(
                """
                DELETE FROM ferry_history h WHERE h.version < \(horizon) AND EXISTS (
                    SELECT 1 FROM ferry_history newer
                    WHERE newer.scope = h.scope AND newer.tbl = h.tbl AND newer.row_id = h.row_id AND newer.col = h.col
                        AND newer.version > h.version AND newer.version <= \(horizon))
                """, logger: logger)
            try await connection.query(
                """
                DELETE FROM ferry_results r WHERE r.version < \(horizon) AND r.mutation_id < (
                    SELECT c.last_mutation_id FROM ferry_clients c WHERE c.user_id = r.user_id AND c.client_id = r.client_id)
                """, logger: logger)
            try await connection.query(
                """
                DELETE FROM ferry_applied_runs r WHERE r.version < \(horizon) AND r.last_mutation_id < (
                    SELECT c.last_mutation_id FROM ferry_clients c WHERE c.user_id = r.user_id AND c.client_id = r.client_id)
                """, logger: logger)
            try await connection.query(
                """
                DELETE FROM ferry_mutation_digests d WHERE d.version < \(horizon) AND d.last_mutation_id < (
                    SELECT c.last_mutation_id FROM ferry_clients c WHERE c.user_id = d.user_id AND c.client_id = d.client_id)
                """, logger: logger)
            try await connection.query(
                """
                UPDATE ferry_meta SET horizon_version = \(horizon), horizon_xid = \(position.major), horizon_seq = \(position.minor)
                """, logger: logger)
            return GarbageReport(horizon: horizon, tombstonesRemoved: removed)
        }
    }

    public func blobReferences() async throws -> Set<BlobKey> {
        let logger = self.logger
        let table = BlobGarbageRules.attachmentTable, column = BlobGarbageRules.hashColumn
        return try await transaction(.snapshot) { connection, _ in
            var keys = Set<BlobKey>()
            let live: PostgresQuery = "SELECT scope, cells FROM ferry_rows WHERE tbl = \(table) AND NOT deleted"
            for try await (scope, cells) in try await connection.query(live, logger: logger).decode((String, String).self) {
                if let key = BlobGarbageRules.key(scope: scope, hash: try StoreCoding.cells(cells)[column]?.value) { keys.insert(key) }
            }
            // A deleted row's values live on in its history until its tombstone is collected.
            let deleted: PostgresQuery = "SELECT scope, value FROM ferry_history WHERE tbl = \(table) AND col = \(column)"
            for try await (scope, value) in try await connection.query(deleted, logger: logger).decode((String, String).self) {
                let decoded = try? JSONDecoder().decode(ColumnValue.self, from: Data(value.utf8))
                if let key = BlobGarbageRules.key(scope: scope, hash: decoded) { keys.insert(key) }
            }
            return keys
        }
    }
}
