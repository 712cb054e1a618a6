import FerryProtocol
import FerryServer
import Foundation
import PostgresNIO

extension PostgresSyncStore {
    /// Reads one page per scope and the client's last applied id from one
    /// `REPEATABLE READ` snapshot (its head in one prepared statement,
    /// `ferry_pull_head`), taking only changes of transactions below
    /// the snapshot's `xmin`: every transaction there has ended, so no
    /// change can later appear behind a cursor.
    public func pullEncoded(_ request: PullRequest, userID: String, limit: Int, notices withNotices: Bool) async throws -> EncodedPullResponse {
        let maxPageBytes = configuration.maxPageBytes
        let logger = self.logger
        return try await transaction(.snapshot) { connection, cursors in
            var head: PullStatements.Head.Row?
            for try await row in try await connection.execute(PullStatements.Head(userID: userID, clientID: request.clientID), logger: logger) {
                head = row
            }
            // Every transaction below `readable` has ended: pages reach that far.
            let readable = head?.readable ?? 0
            var assembler = PullAssembler(
                clientID: request.clientID, userID: userID, limit: limit, maxPageBytes: maxPageBytes, cursors: cursors,
                horizon: head.map { ChangePosition(major: $0.horizonXID, minor: $0.horizonSeq) } ?? .start,
                end: ChangePosition(major: readable)
            )
            // A client that never pushed starts its notices now; one that did, where they stood then (NULL: the beginning).
            assembler.noticeStart = ChangePosition(major: readable)
            if let head, head.pushed {
                assembler.noticeStart = head.firstNotice.map { ChangePosition(major: $0) } ?? .start
            }
            let lastApplied = head?.lastApplied ?? 0
            var pages: [EncodedPullPage] = []
            for followed in request.scopes {
                let start = try assembler.start(of: followed)
                let rows = try await Self.page(
                    connection, scope: followed.scope, after: start.rows.position, below: readable,
                    withTombstones: !start.rows.isFromScratch, limit: assembler.queryLimit, into: assembler.pageRows(), logger: logger
                )
                let notices =
                    withNotices
                    ? try await Self.notices(
                        connection, userID: userID, scope: followed.scope, after: start.notices, below: readable,
                        limit: assembler.queryLimit, logger: logger
                    ) : []
                var page = try assembler.page(followed.scope, start: start, rows: rows, notices: notices)
                if assembler.needsEstimate(page, start: start) {
                    let count: PostgresQuery = """
                        SELECT count(*) FROM ferry_rows WHERE scope = \(followed.scope) AND xid < \(readable) AND NOT deleted
                        """
                    page.estimatedRows = try await Self.one(connection, count, as: Int64.self, logger: logger).map { Int($0) }
                }
                pages.append(page)
            }
            return EncodedPullResponse(lastAppliedMutationID: lastApplied, pages: pages)
        }
    }

    /// Cursors at the readable horizon: every transaction below it has
    /// ended, so a page from there misses nothing committed later.
    public func endCursors(scopes: [String]) async throws -> [String: String] {
        let logger = self.logger
        return try await transaction(.snapshot) { connection, cursors in
            let readable =
                try await Self.one(
                    connection, "SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint", as: Int64.self, logger: logger
                ) ?? 0
            return Dictionary(
                uniqueKeysWithValues: scopes.map { scope in
                    (scope, cursors.encode(PullCursor(epoch: cursors.epoch, scope: scope, position: readable, subposition: 0)))
                })
        }
    }

    /// The notice query: the user's notices in `scope` after `start` and
    /// below the readable horizon.
    private static func notices(
        _ connection: PostgresConnection, userID: String, scope: String, after start: ChangePosition,
        below readable: Int64, limit: Int, logger: Logger
    ) async throws -> [NoticeQueryRow] {
        let query: PostgresQuery = """
            SELECT id, xid, by_user, by_client, notice, settles FROM ferry_notices
            WHERE user_id = \(userID) AND scope = \(scope) AND (xid, id) > (\(start.major), \(start.minor)) AND xid < \(readable)
            ORDER BY xid, id LIMIT \(limit)
            """
        var rows: [NoticeQueryRow] = []
        for try await (id, xid, byUser, byClient, json, settles) in try await connection.query(query, logger: logger)
            .decode((Int64, Int64, String, String, String, String?).self)
        {
            rows.append(
                NoticeQueryRow(
                    id: id, position: ChangePosition(major: xid, minor: id), byUser: byUser, byClient: byClient,
                    json: json, settles: settles))
        }
        return rows
    }

    public func row(scope: String, table: String, rowID: String) async throws -> ServerRow? {
        let logger = self.logger
        let key = RowKey(scope: scope, table: table, rowID: rowID)
        return try await transaction(.snapshot) { connection, _ in
            try await Self.loadRows(connection, [key], needs: HistoryNeeds([]), logger: logger)[key]?.serverRow
        }
    }

    public func lastAppliedMutationID(userID: String, clientID: String) async throws -> Int64 {
        let logger = self.logger
        return try await transaction(.snapshot) { connection, _ in
            try await Self.lastMutationID(connection, userID: userID, clientID: clientID, logger: logger)
        }
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
        withTombstones: Bool, limit: Int, into rows: EncodedRows, logger: Logger
    ) async throws -> EncodedRows {
        let query = pageQuery(scope: scope, after: position, below: readable, withTombstones: withTombstones, limit: limit)
        // Rows past the page's limits are read to the query's end but not written (`append` refuses them).
        var rows = rows
        for try await (table, rowID, version, deleted, cells, xid) in try await connection.query(query, logger: logger)
            .decode((String, String, Int64, Bool, String, Int64).self)
        {
            try rows.append(
                table: table, rowID: rowID, version: version, deleted: deleted, cells: cells,
                position: ChangePosition(major: xid, minor: version))
        }
        return rows
    }
}
