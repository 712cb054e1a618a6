import FerryProtocol
import Foundation
import PostgresNIO

extension PostgresSyncStore {
    /// Reads one page per scope and the client's last applied id from one
    /// `REPEATABLE READ` snapshot, taking only changes of transactions below
    /// the snapshot's `xmin`: every transaction there has ended, so no
    /// change can later appear behind a cursor.
    public func pullEncoded(_ request: PullRequest, userID: String, limit: Int) async throws -> EncodedPullResponse {
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
            var pages: [EncodedPullPage] = []
            for followed in request.scopes {
                var start = PullStart.fromScratch(reset: false)
                if let text = followed.cursor {
                    start = try PullStart(cursor: text, scope: followed.scope, codec: cursors, horizon: horizon, end: end)
                }
                let rows = try await Self.page(
                    connection, scope: followed.scope, after: start.position, below: readable,
                    withTombstones: !start.isFromScratch, limit: limit + 1, logger: logger
                )
                let (changes, hasMore) = try EncodedRow.page(rows, limit: limit, maxBytes: maxPageBytes) {
                    ($0.table, $0.rowID, $0.version, $0.deleted, $0.cells)
                }
                let position = hasMore ? rows[changes.count - 1].position : end
                let notices = try await Self.notices(
                    connection, userID: userID, clientID: request.clientID, scope: followed.scope,
                    after: try NoticeCursor.position(from: followed.notices, epoch: cursors.epoch), below: readable, limit: limit,
                    maxBytes: maxPageBytes, epoch: cursors.epoch, logger: logger
                )
                pages.append(EncodedPullPage(
                    scope: followed.scope,
                    rows: changes,
                    cursor: cursors.encode(PullCursor(epoch: cursors.epoch, scope: followed.scope, position: position.major, subposition: position.minor)),
                    hasMore: hasMore || notices.hasMore,
                    reset: start.isReset,
                    notices: notices.delivered,
                    noticeCursor: NoticeCursor.text(notices.position, epoch: cursors.epoch)
                ))
            }
            return EncodedPullResponse(lastAppliedMutationID: lastApplied, pages: pages)
        }
    }

    /// The user's notices in `scope` after `start` and below the readable
    /// horizon, but those of the asking client's own overriding pushes.
    private static func notices(
        _ connection: PostgresConnection, userID: String, clientID: String, scope: String, after start: ChangePosition,
        below readable: Int64, limit: Int, maxBytes: Int, epoch: String, logger: Logger
    ) async throws -> (delivered: [ConflictNotice], position: ChangePosition, hasMore: Bool) {
        let query: PostgresQuery = """
            SELECT id, xid, by_user, by_client, notice FROM ferry_notices
            WHERE user_id = \(userID) AND scope = \(scope) AND (xid, id) > (\(start.major), \(start.minor)) AND xid < \(readable)
            ORDER BY xid, id LIMIT \(limit + 1)
            """
        var rows: [(id: Int64, xid: Int64, byUser: String, byClient: String, json: String)] = []
        for try await row in try await connection.query(query, logger: logger).decode((Int64, Int64, String, String, String).self) {
            rows.append(row)
        }
        let kept = StoreCoding.pageLength(sizes: rows.lazy.map(\.json.utf8.count), limit: limit, maxBytes: maxBytes)
        var position = start
        var delivered: [ConflictNotice] = []
        for row in rows.prefix(kept) {
            position = ChangePosition(major: row.xid, minor: row.id)
            if row.byUser == userID, row.byClient == clientID { continue }
            delivered.append(try StoredNotice.decode(row.json).notice(id: row.id, epoch: epoch))
        }
        return (delivered, position, rows.count > kept)
    }

    public func row(scope: String, table: String, rowID: String) async throws -> ServerRow? {
        let logger = self.logger
        let key = RowKey(scope: scope, table: table, rowID: rowID)
        return try await transaction(.snapshot) { connection, _ in
            try await Self.loadRows(connection, [key], logger: logger)[key]?.serverRow
        }
    }

    public func lastAppliedMutationID(userID: String, clientID: String) async throws -> Int64 {
        let logger = self.logger
        return try await transaction(.snapshot) { connection, _ in
            try await Self.lastMutationID(connection, userID: userID, clientID: clientID, logger: logger)
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
