import FerryProtocol
import FerryServer
import Foundation
import NIOConcurrencyHelpers
import PostgresNIO

extension PostgresSyncStore {
    public func push(_ request: PushRequest, userID: String, rules: PushRules) async throws -> PushReceipt {
        let now = rules.nowMilliseconds
        let logger = self.logger
        // A push of rows its device made is first planned without reading
        // them (``NewRowPush``): the inserts check it. Any attempt after the
        // first reads them, since the one before may have met a stored row.
        let assumesNewRows = NIOLockedValueBox(NewRowPush.isLikely(request.mutations))
        return try await transaction(.serializable) { connection, cursors in
            let unread = assumesNewRows.withLockedValue { first in
                defer { first = false }
                return first
            }
            // One round trip for what the push reads first (the snapshot is taken here) and the versions its
            // fresh mutations get, with the transaction's id, which the rows and results are stamped with.
            var first: PushStatements.Start.Row?
            let start = PushStatements.Start(userID: userID, clientID: request.clientID, mutationIDs: request.mutations.map(\.mutationID))
            for try await row in try await connection.execute(start, logger: logger) {
                first = row
            }
            guard let (lastApplied, horizon, readable, versions, xid) = first else {
                throw FerryServerError(.internalError, "PostgreSQL answered the push's first query with no row")
            }
            if let seen = request.seen {
                try PullStart.checkHistory(seen: seen, codec: cursors, end: ChangePosition(major: readable))
            }
            let fresh = request.mutations.filter { $0.mutationID > lastApplied }
            let allocated = versions ?? []
            guard allocated.count == fresh.count else {
                throw FerryServerError(.internalError, "PostgreSQL gave the push \(allocated.count) versions for \(fresh.count) mutations")
            }
            func load() async throws -> [RowKey: StoredRow] {
                let keys = Set(fresh.map { RowKey(scope: $0.scope, table: $0.table, rowID: $0.rowID) })
                return try await Self.loadRows(connection, keys, needs: HistoryNeeds(fresh), logger: logger)
            }
            var rows = unread ? [:] : try await load()
            let replayed = request.mutations.map(\.mutationID).filter { $0 <= lastApplied }
            let digests = try await Self.recordedDigests(
                connection, userID: userID, clientID: request.clientID, ids: replayed, logger: logger)
            func planned(with rows: [RowKey: StoredRow]) throws -> PushPlan {
                try rules.plan(
                    request, userID: userID, lastApplied: lastApplied, rows: rows,
                    version: (allocated.first ?? 1) - 1, allocated: allocated, horizon: horizon, recorded: digests
                )
            }
            var plan = try planned(with: rows)
            if unread && !NewRowPush.isChecked(plan, fresh: fresh) {
                // Some row assumed absent would not be inserted, so nothing would check it.
                rows = try await load()
                plan = try planned(with: rows)
            }
            // The notices' ids, taken before they are written, so the reply can name them.
            var noticeIDs: [Int64] = []
            if !plan.notices.isEmpty {
                let query: PostgresQuery = "SELECT nextval('ferry_notices_id_seq') FROM generate_series(1, \(plan.notices.count))"
                for try await id in try await connection.query(query, logger: logger).decode(Int64.self) {
                    noticeIDs.append(id)
                }
                noticeIDs.sort()
                plan.linkNotices(ids: noticeIDs) { NoticeCursor.id($0, epoch: cursors.epoch) }
            }
            if !plan.results.isEmpty {
                guard let xid else { throw FerryServerError(.internalError, "PostgreSQL gave the push no transaction id") }
                try await Self.write(
                    plan, xid: xid, noticeIDs: noticeIDs, existing: Set(rows.keys), connection, userID: userID,
                    clientID: request.clientID, now: now, logger: logger)
            }
            try await Self.settle(
                request.settled ?? [], connection, userID: userID, clientID: request.clientID, version: plan.version,
                now: now, epoch: cursors.epoch, logger: logger)
            let (recorded, runs) = try await Self.recordedResults(
                connection, userID: userID, clientID: request.clientID, ids: plan.replayedIDs, logger: logger)
            return try plan.receipt(recorded: recorded, runs: runs)
        }
        // Live subscribers, here and on every other instance, hear of it
        // through the notification the push committed.
    }

    /// Writes a plan. `existing` are the rows the push read: they are
    /// updated, the others inserted (a concurrent insert of the same key
    /// fails this serializable transaction, which is then retried; so does
    /// a stored row a push planned without reading, ``NewRowPush``, and
    /// PostgreSQL's log then shows the duplicate key).
    private static func write(
        _ plan: PushPlan, xid: Int64, noticeIDs: [Int64], existing: Set<RowKey>, _ connection: PostgresConnection,
        userID: String, clientID: String, now: Int64, logger: Logger
    ) async throws {
        func json(_ value: some Encodable) throws -> String { try StoreCoding.json(value) }
        // In key order (the order every push locks rows in), each column of the statement built in one pass.
        var inserted = RowColumns(), updated = RowColumns()
        for key in plan.rows.keys.sorted() {
            let row = plan.rows[key]!
            if existing.contains(key) { updated.append(key, row) } else { inserted.append(key, row) }
        }
        // The client's state with the new rows. A concurrent push of the same client then fails, with a
        // serialization error or a duplicate key, and is tried again as a replay.
        try await connection.run(
            PushStatements.RecordClient(
                userID: userID, clientID: clientID, lastMutationID: plan.lastAppliedMutationID, xid: xid, now: now,
                firstMutationID: plan.results.first?.mutationID ?? plan.lastAppliedMutationID, version: plan.version,
                digests: plan.digests, inserted: inserted),
            logger: logger)
        if !updated.isEmpty {
            try await connection.run(PushStatements.UpdateRows(rows: updated, xid: xid, now: now), logger: logger)
        }
        let history = plan.overwritten.sorted { $0.key < $1.key }.flatMap { key, values in values.map { (key, $0) } }
        if !history.isEmpty {
            let query: PostgresQuery = """
                INSERT INTO ferry_history (scope, tbl, row_id, col, version, value, client_id, written_at)
                SELECT scope, tbl, row_id, col, version, value, nullif(client_id, ''), nullif(written_at, -1)
                FROM unnest(\(history.map { $0.0.scope })::text[], \(history.map { $0.0.table })::text[], \(history.map { $0.0.rowID })::text[],
                    \(history.map { $0.1.column })::text[], \(history.map { $0.1.version })::int8[], \(try history.map { try json($0.1.value) })::text[],
                    \(history.map { $0.1.clientID ?? "" })::text[], \(history.map { $0.1.writtenAt ?? -1 })::int8[])
                    AS h(scope, tbl, row_id, col, version, value, client_id, written_at)
                ON CONFLICT (scope, tbl, row_id, col, version)
                    DO UPDATE SET value = excluded.value, client_id = excluded.client_id, written_at = excluded.written_at
                """
            try await connection.query(query, logger: logger)
        }
        for recorded in plan.conflicts {
            try await connection.query(
                """
                INSERT INTO ferry_conflicts (user_id, client_id, mutation_id, scope, tbl, row_id, version, conflict, created_at)
                VALUES (\(userID), \(clientID), \(recorded.mutationID), \(recorded.key.scope), \(recorded.key.table), \(recorded.key.rowID),
                    \(recorded.version), \(try json(recorded.conflict)), \(now))
                """, logger: logger)
        }
        if !plan.notices.isEmpty {
            let notices = plan.notices
            try await connection.query(
                """
                INSERT INTO ferry_notices (id, xid, user_id, scope, by_user, by_client, version, notice, created_at)
                SELECT u.id, \(xid), u.user_id, u.scope, \(userID), \(clientID), u.version, u.notice, \(now)
                FROM unnest(\(noticeIDs)::int8[], \(notices.map(\.userID))::text[], \(notices.map(\.key.scope))::text[],
                    \(notices.map(\.version))::int8[], \(try notices.map { try json(StoredNotice($0)) })::text[])
                    WITH ORDINALITY AS u(id, user_id, scope, version, notice, n)
                ORDER BY u.n
                """, logger: logger)
        }
        for rejection in plan.rejections {
            let mutation = rejection.mutation
            try await connection.query(
                """
                INSERT INTO ferry_rejections (user_id, client_id, mutation_id, scope, tbl, row_id, reason, mutation, created_at)
                VALUES (\(userID), \(clientID), \(mutation.mutationID), \(mutation.scope), \(mutation.table), \(mutation.rowID),
                    \(rejection.reason), \(try json(mutation)), \(now))
                """, logger: logger)
        }
        // A push of new rows is one run: one row, not one per mutation. The results and the notifications
        // go in one round trip.
        let (runs, others) = AppliedRun.split(plan.results)
        try await connection.run(
            PushStatements.Finish(
                userID: userID, clientID: clientID, runs: runs, resultIDs: others.map(\.mutationID),
                results: try others.map(StoreCoding.resultJSON), version: plan.version, xid: xid,
                payloads: ChangeNotice.payloads(xid: xid, scopes: Array(plan.changedScopes))),
            logger: logger)
    }

    /// The stored results of `ids`: by id those kept one by one, and the
    /// runs that hold any of the others. An id whose result was collected is
    /// in neither.
    private static func recordedResults(
        _ connection: PostgresConnection, userID: String, clientID: String, ids: [Int64], logger: Logger
    ) async throws -> (recorded: [Int64: String], runs: [AppliedRun]) {
        guard let low = ids.min(), let high = ids.max() else { return ([:], []) }
        var recorded: [Int64: String] = [:]
        let query: PostgresQuery = """
            SELECT mutation_id, result FROM ferry_results
            WHERE user_id = \(userID) AND client_id = \(clientID) AND mutation_id = ANY(\(ids)::int8[])
            """
        for try await (id, json) in try await connection.query(query, logger: logger).decode((Int64, String).self) {
            recorded[id] = json
        }
        var runs: [AppliedRun] = []
        for try await (first, last, version) in try await connection.query(appliedRunsQuery(userID: userID, clientID: clientID, from: low, through: high), logger: logger)
            .decode((Int64, Int64, Int64).self)
        {
            runs.append(AppliedRun(firstMutationID: first, lastMutationID: last, firstVersion: version))
        }
        return (recorded, runs)
    }

    /// The digests stored for `ids` (``MutationDigest``), by id: from the
    /// pushes that hold any of them. An id whose digest was collected, or
    /// was applied before digests were kept, has none. No query when the
    /// push replays nothing.
    private static func recordedDigests(
        _ connection: PostgresConnection, userID: String, clientID: String, ids: [Int64], logger: Logger
    ) async throws -> [Int64: MutationDigest] {
        guard let low = ids.min(), let high = ids.max() else { return [:] }
        // An index range from the push that holds `low` (pushes never overlap), as for the runs.
        let query: PostgresQuery = """
            SELECT first_mutation_id, digests FROM ferry_mutation_digests
            WHERE user_id = \(userID) AND client_id = \(clientID) AND first_mutation_id <= \(high) AND last_mutation_id >= \(low)
                AND first_mutation_id >= coalesce((
                    SELECT max(first_mutation_id) FROM ferry_mutation_digests
                    WHERE user_id = \(userID) AND client_id = \(clientID) AND first_mutation_id <= \(low)), \(low))
            """
        var digests: [Int64: MutationDigest] = [:]
        for try await (first, bytes) in try await connection.query(query, logger: logger).decode((Int64, ByteBuffer).self) {
            digests.merge(MutationDigest.unpacked(bytes.readableBytesView, firstID: first)) { a, _ in a }
        }
        return digests
    }

    /// The runs of a client's results that hold any id in `low…high`: an
    /// index range from the run that holds `low` (runs never overlap).
    static func appliedRunsQuery(userID: String, clientID: String, from low: Int64, through high: Int64) -> PostgresQuery {
        """
        SELECT first_mutation_id, last_mutation_id, first_version FROM ferry_applied_runs
        WHERE user_id = \(userID) AND client_id = \(clientID) AND first_mutation_id <= \(high) AND last_mutation_id >= \(low)
            AND first_mutation_id >= coalesce((
                SELECT max(first_mutation_id) FROM ferry_applied_runs
                WHERE user_id = \(userID) AND client_id = \(clientID) AND first_mutation_id <= \(low)), \(low))
        """
    }

    /// The current state of `keys`, with the history a push can read of
    /// each (``HistoryNeeds``): per column, the newest value at or before
    /// the row's oldest base and every later one; all of it for a deleted
    /// row. Two queries, three when some rows are deleted and some not.
    static func loadRows(
        _ connection: PostgresConnection, _ keys: Set<RowKey>, needs: HistoryNeeds, logger: Logger
    ) async throws -> [RowKey: StoredRow] {
        guard !keys.isEmpty else { return [:] }
        var rows: [RowKey: StoredRow] = [:]
        // In any order: reading takes no row locks (the write goes in key order).
        for try await (scope, table, rowID, version, deleted, clientID, cells) in try await connection.execute(
            PushStatements.LookUpRows(keys: Array(keys)), logger: logger)
        {
            rows[RowKey(scope: scope, table: table, rowID: rowID)] = StoredRow(
                version: version, deleted: deleted, cells: try StoreCoding.cells(cells), clientID: clientID
            )
        }
        let loaded = rows.keys.sorted()
        let deleted = loaded.filter { rows[$0]!.deleted }
        let columns = loaded.filter { !rows[$0]!.deleted }.flatMap { key in
            rows[key]!.cells.keys.sorted().map { (key, $0, needs.oldestBase(of: key)) }
        }
        var queries: [PostgresQuery] = []
        if !columns.isEmpty {
            queries.append(
                """
                SELECT h.scope, h.tbl, h.row_id, h.col, h.version, h.value
                FROM unnest(\(columns.map(\.0.scope))::text[], \(columns.map(\.0.table))::text[], \(columns.map(\.0.rowID))::text[],
                    \(columns.map(\.1))::text[], \(columns.map(\.2))::bigint[]) AS k(scope, tbl, row_id, col, oldest)
                JOIN ferry_history h ON h.scope = k.scope AND h.tbl = k.tbl AND h.row_id = k.row_id AND h.col = k.col
                AND h.version >= coalesce((
                    SELECT max(o.version) FROM ferry_history o
                    WHERE o.scope = k.scope AND o.tbl = k.tbl AND o.row_id = k.row_id AND o.col = k.col AND o.version <= k.oldest), 0)
                ORDER BY h.version
                """)
        }
        if !deleted.isEmpty {
            queries.append(
                """
                SELECT h.scope, h.tbl, h.row_id, h.col, h.version, h.value
                FROM unnest(\(deleted.map(\.scope))::text[], \(deleted.map(\.table))::text[], \(deleted.map(\.rowID))::text[]) AS k(scope, tbl, row_id)
                JOIN ferry_history h ON h.scope = k.scope AND h.tbl = k.tbl AND h.row_id = k.row_id
                ORDER BY h.version
                """)
        }
        for query in queries {
            for try await (scope, table, rowID, column, version, value) in try await connection.query(query, logger: logger)
                .decode((String, String, String, String, Int64, String).self)
            {
                let key = RowKey(scope: scope, table: table, rowID: rowID)
                rows[key]?.history.append(HistoricValue(column: column, version: version, value: try StoreCoding.decode(ColumnValue.self, from: value)))
            }
        }
        return rows
    }

    static func lastMutationID(_ connection: PostgresConnection, userID: String, clientID: String, logger: Logger) async throws -> Int64 {
        try await one(
            connection,
            "SELECT last_mutation_id FROM ferry_clients WHERE user_id = \(userID) AND client_id = \(clientID)",
            as: Int64.self,
            logger: logger
        ) ?? 0
    }

    /// Records the notices the user settled on the pushing device, so its
    /// other devices drop them: one settlement per notice, and only for the
    /// user's own notices this store holds (others are ignored). The scopes
    /// settled in are notified, so live devices pull the settlements.
    private static func settle(
        _ settled: [PushRequest.SettledNotice], _ connection: PostgresConnection, userID: String, clientID: String,
        version: Int64, now: Int64, epoch: String, logger: Logger
    ) async throws {
        var scopes: Set<String> = []
        for notice in settled {
            guard let (_, id) = NoticeCursor.parse(id: notice.id, epoch: epoch) else { continue }
            let held =
                try await one(
                    connection,
                    """
                    SELECT 1 FROM ferry_notices WHERE id = \(id) AND user_id = \(userID) AND scope = \(notice.scope) AND settles IS NULL
                    """, as: Int32.self, logger: logger) != nil
            let settledBefore =
                try await one(
                    connection,
                    """
                    SELECT 1 FROM ferry_notices WHERE user_id = \(userID) AND scope = \(notice.scope) AND settles = \(notice.id)
                    """, as: Int32.self, logger: logger) != nil
            guard held, !settledBefore else { continue }
            try await connection.query(
                """
                INSERT INTO ferry_notices (xid, user_id, scope, by_user, by_client, version, notice, created_at, settles)
                VALUES (pg_current_xact_id()::text::bigint, \(userID), \(notice.scope), \(userID), \(clientID), \(version), 'null',
                    \(now), \(notice.id))
                """, logger: logger)
            scopes.insert(notice.scope)
        }
        guard !scopes.isEmpty else { return }
        let xid = try await one(connection, "SELECT pg_current_xact_id()::text::bigint", as: Int64.self, logger: logger) ?? 0
        for payload in ChangeNotice.payloads(xid: xid, scopes: scopes.sorted()) {
            try await connection.run(PushStatements.Notify(payload: payload), logger: logger)
        }
    }

    /// The first row's only column, if there is a row.

    static func one<T: PostgresDecodable & Sendable>(_ connection: PostgresConnection, _ query: PostgresQuery, as type: T.Type, logger: Logger) async throws -> T? {
        var value: T?
        for try await decoded in try await connection.query(query, logger: logger).decode(T.self) where value == nil {
            value = decoded
        }
        return value
    }
}
