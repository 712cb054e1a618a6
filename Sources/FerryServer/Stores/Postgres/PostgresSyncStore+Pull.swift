import FerryProtocol
import Foundation
import PostgresNIO

extension PostgresSyncStore {
    /// Reads one page per scope and the client's last applied id from one
    /// `REPEATABLE READ` snapshot, taking only changes of transactions below
    /// the snapshot's `xmin`: every transaction there has ended, so no
    /// change can later appear behind a cursor.
    public func pull(_ request: PullRequest, userID: String, limit: Int) async throws -> PullResponse {
        let maxPageBytes = configuration.maxPageBytes
        let logger = self.logger
        return try await transaction(.snapshot) { connection, cursors in
            let horizonQuery: PostgresQuery = """
                SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint, horizon_xid, horizon_seq FROM ferry_meta
                """
            var readable: Int64 = 0
            var horizon = ChangePosition.start
            for try await (xmin, horizonXID, horizonSeq) in try await connection.query(horizonQuery, logger: logger).decode((Int64, Int64, Int64).self) {
                readable = xmin
                horizon = ChangePosition(major: horizonXID, minor: horizonSeq)
            }
            let lastApplied = try await Self.lastMutationID(
                connection, userID: userID, clientID: request.clientID, readableBelow: readable, logger: logger
            )
            // A finished scope's cursor moves to the horizon itself, so a
            // quiet scope never falls behind the tombstone horizon.
            let end = ChangePosition(major: readable)
            var pages: [PullPage] = []
            for followed in request.scopes {
                var start = PullStart.fromScratch(reset: false)
                if let text = followed.cursor {
                    start = try PullStart(cursor: text, scope: followed.scope, codec: cursors, horizon: horizon, end: end)
                }
                let rows = try await Self.page(
                    connection, scope: followed.scope, after: start.position, below: readable,
                    withTombstones: !start.isFromScratch, limit: limit + 1, logger: logger
                )
                let kept = StoreCoding.pageLength(sizes: rows.lazy.map(\.cells.utf8.count), limit: limit, maxBytes: maxPageBytes)
                let hasMore = rows.count > kept
                let changes = try rows.prefix(kept).map { row in
                    RowChange(
                        table: row.table,
                        rowID: row.rowID,
                        version: row.version,
                        deleted: row.deleted,
                        values: try StoreCoding.cells(row.cells).mapValues(\.value)
                    )
                }
                let position = hasMore ? rows[kept - 1].position : end
                pages.append(PullPage(
                    scope: followed.scope,
                    changes: changes,
                    cursor: cursors.encode(PullCursor(epoch: cursors.epoch, scope: followed.scope, position: position.major, subposition: position.minor)),
                    hasMore: hasMore,
                    reset: start.isReset
                ))
            }
            return PullResponse(lastAppliedMutationID: lastApplied, pages: pages)
        }
    }

    struct PageRow: Sendable {
        var table: String
        var rowID: String
        var version: Int64
        var deleted: Bool
        var cells: String
        var position: ChangePosition
    }

    /// The pull query: one index range of `(scope, xid, version)`.
    static func pageQuery(scope: String, after position: ChangePosition, below readable: Int64, withTombstones: Bool, limit: Int) -> PostgresQuery {
        """
        SELECT tbl, row_id, version, deleted, cells, xid FROM ferry_rows
        WHERE scope = \(scope) AND (xid, version) > (\(position.major), \(position.minor)) AND xid < \(readable)
            AND (NOT deleted OR \(withTombstones))
        ORDER BY xid, version LIMIT \(limit)
        """
    }

    private static func page(
        _ connection: PostgresConnection, scope: String, after position: ChangePosition, below readable: Int64,
        withTombstones: Bool, limit: Int, logger: Logger
    ) async throws -> [PageRow] {
        let query = pageQuery(scope: scope, after: position, below: readable, withTombstones: withTombstones, limit: limit)
        var rows: [PageRow] = []
        for try await (table, rowID, version, deleted, cells, xid) in try await connection.query(query, logger: logger)
            .decode((String, String, Int64, Bool, String, Int64).self)
        {
            rows.append(PageRow(
                table: table, rowID: rowID, version: version, deleted: deleted, cells: cells,
                position: ChangePosition(major: xid, minor: version)
            ))
        }
        return rows
    }

    /// The client's last applied id as of the pull horizon, so it agrees
    /// with the rows the page can return: a push that committed but is not
    /// below the horizon yet does not count.
    private static func lastMutationID(
        _ connection: PostgresConnection, userID: String, clientID: String, readableBelow readable: Int64, logger: Logger
    ) async throws -> Int64 {
        let query: PostgresQuery = """
            SELECT CASE WHEN c.xid < \(readable) THEN c.last_mutation_id
                ELSE COALESCE((SELECT max(r.mutation_id) FROM ferry_results r
                    WHERE r.user_id = c.user_id AND r.client_id = c.client_id AND r.xid < \(readable)), 0) END
            FROM ferry_clients c WHERE c.user_id = \(userID) AND c.client_id = \(clientID)
            """
        return try await one(connection, query, as: Int64.self, logger: logger) ?? 0
    }
}
