import FerryProtocol
import FerrySQLite
import Foundation
import GRDB
import NIOCore

extension SQLiteSyncStore {
    public func push(_ request: PushRequest, userID: String, rules: PushRules) async throws -> PushReceipt {
        let now = rules.nowMilliseconds
        let cursors = self.cursors
        let known = self.known
        let feed = changeFeed
        return try await write { db -> PushReceipt in
            try PullStart.checkHistory(seen: request.seen, codec: cursors, end: ChangePosition(major: try Self.meta(db, "version")))
            let lastApplied = try Self.lastMutationID(db, userID: userID, clientID: request.clientID)
            var rows: [RowKey: StoredRow] = [:]
            let fresh = request.mutations.filter { $0.mutationID > lastApplied }
            let needs = HistoryNeeds(fresh)
            let held = try Self.heldKeys(db, fresh.map { RowKey(scope: $0.scope, table: $0.table, rowID: $0.rowID) })
            for mutation in fresh {
                let key = RowKey(scope: mutation.scope, table: mutation.table, rowID: mutation.rowID)
                if rows[key] == nil, held.contains(key), let row = try Self.loadRow(db, key, oldestBase: needs.oldestBase(of: key)) {
                    rows[key] = row
                }
            }
            let replayed = request.mutations.lazy.map(\.mutationID).filter { $0 <= lastApplied }
            let horizon = try Self.meta(db, "horizon")
            var plan = try rules.plan(
                request, userID: userID, lastApplied: lastApplied, rows: rows,
                version: try Self.meta(db, "version"), horizon: horizon,
                recorded: try Self.recordedDigests(db, userID: userID, clientID: request.clientID, ids: Array(replayed))
            )
            // Read before the plan's rows are written; versions commit in order here, so the range after
            // each scope's last change to the push's end holds the push's rows alone.
            let covered = try PushCoverage.covered(
                PushCoverage.scopes(of: plan, request: request), lastBefore: { try Self.lastVersion(db, scope: $0) },
                horizon: horizon, end: plan.version
            ) { scope, position in cursors.encode(PullCursor(epoch: cursors.epoch, scope: scope, position: position)) }
            let generation = cursors.history.current
            // AUTOINCREMENT numbers from the sequence: the ids the notices get, known before they are written.
            let lastNotice = try Self.lastNoticeID(db)
            let noticeIDs = plan.notices.indices.map { lastNotice + 1 + Int64($0) }
            plan.linkNotices(ids: noticeIDs) { NoticeCursor.id($0, epoch: cursors.epoch, generation: generation) }
            try Self.writePlan(
                plan, noticeIDs: noticeIDs, db, userID: userID, clientID: request.clientID, now: now,
                generation: generation)
            let settledScopes = try Self.settle(
                request.settled ?? [], db, userID: userID, clientID: request.clientID,
                version: plan.version, now: now, epoch: cursors.epoch, generation: generation)
            let (recorded, runs) = try Self.recordedResults(db, userID: userID, clientID: request.clientID, ids: plan.replayedIDs)
            var receipt = try plan.receipt(recorded: recorded, runs: runs)
            receipt.response.covered = covered
            let notices = Set(plan.notices.map { LastChanges.Notices(userID: $0.userID, scope: $0.key.scope) })
                .union(settledScopes.map { LastChanges.Notices(userID: userID, scope: $0) })
            let commit = LastChanges.Commit(
                version: plan.version, rowScopes: Set(plan.rows.keys.map(\.scope)), notices: notices,
                lastNotice: notices.isEmpty ? nil : try Self.lastNoticeID(db),
                client: LastChanges.Client(userID: userID, clientID: request.clientID),
                lastApplied: try Self.lastMutationID(db, userID: userID, clientID: request.clientID))
            // Recorded in the writer as it commits: in commit order, and even if the pushing request is cancelled.
            // Live devices hear of it then too, before the reply goes back (a settlement wakes the user's other
            // devices as well: they pull it and drop the conflict).
            let changed = receipt.changedScopes.union(settledScopes)
            db.afterNextTransaction { _ in
                known.withLock { $0.committed(commit) }
                feed.publish(changed)
            }
            return receipt
        }
    }

    /// The version of the newest row of `scope`, live or a tombstone.
    private static func lastVersion(_ db: Database, scope: String) throws -> Int64? {
        try Int64.fetchOne(db.cachedStatement(sql: "SELECT max(version) FROM rows WHERE scope = ?"), arguments: [scope])
    }

    private static func writePlan(
        _ plan: PushPlan, noticeIDs: [Int64], _ db: Database, userID: String, clientID: String,
        now: Int64, generation: String
    ) throws {
        func json(_ value: some Encodable) throws -> String { try StoreCoding.json(value) }
        // A drain writes a row and a result per mutation: in statements of up to a hundred rows, bound directly,
        // each row's cells from one buffer written again for every row.
        var cells = ByteBuffer()
        try db.execute(
            rows: plan.rows, width: 8,
            sql: "INSERT INTO rows (scope, tbl, row_id, version, deleted, client_id, changed_at, cells) VALUES",
            suffix: """
                ON CONFLICT (scope, tbl, row_id) DO UPDATE SET
                    version = excluded.version, deleted = excluded.deleted, client_id = excluded.client_id,
                    changed_at = excluded.changed_at, cells = excluded.cells, collected = 0
                """
        ) { binder, entry in
            let (key, row) = entry
            try binder.bind(key.scope)
            try binder.bind(key.table)
            try binder.bind(key.rowID)
            try binder.bind(row.version)
            try binder.bind(row.deleted ? 1 : 0)
            try binder.bind(row.clientID)
            try binder.bind(now)
            cells.clear()
            StoreCoding.writeCellsJSON(row.cells, into: &cells)
            try cells.withUnsafeReadableBytes { try binder.bind(utf8: $0) }
        }
        let overwritten = plan.overwritten.flatMap { key, values in values.map { (key, $0) } }
        try db.execute(
            rows: overwritten, width: 8,
            sql: "INSERT OR REPLACE INTO history (scope, tbl, row_id, col, version, value, client_id, written_at) VALUES"
        ) { binder, entry in
            let (key, old) = entry
            try binder.bind(key.scope)
            try binder.bind(key.table)
            try binder.bind(key.rowID)
            try binder.bind(old.column)
            try binder.bind(old.version)
            try binder.bind(try json(old.value))
            try binder.bind(old.clientID)
            try binder.bind(old.writtenAt)
        }
        for recorded in plan.conflicts {
            try Self.execute(
                db,
                sql: """
                    INSERT INTO conflicts (user_id, client_id, mutation_id, scope, tbl, row_id, version, conflict, created_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    userID, clientID, recorded.mutationID, recorded.key.scope, recorded.key.table, recorded.key.rowID,
                    recorded.version, try json(recorded.conflict), now,
                ]
            )
        }
        for (notice, id) in zip(plan.notices, noticeIDs) {
            try Self.execute(
                db,
                sql: """
                    INSERT INTO notices (id, user_id, scope, by_user, by_client, version, notice, created_at, generation)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    id, notice.userID, notice.key.scope, notice.byUserID, notice.byClientID, notice.version,
                    try json(StoredNotice(notice)), now, generation,
                ]
            )
        }
        for rejection in plan.rejections {
            let mutation = rejection.mutation
            try Self.execute(
                db,
                sql: """
                    INSERT INTO rejections (user_id, client_id, mutation_id, scope, tbl, row_id, reason, mutation, created_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    userID, clientID, mutation.mutationID, mutation.scope, mutation.table, mutation.rowID,
                    rejection.reason, try json(mutation), now,
                ]
            )
        }
        // A push of new rows is one run: one row, not one per mutation.
        let (runs, others) = AppliedRun.split(plan.results)
        try db.execute(
            rows: runs, width: 6,
            sql: "INSERT INTO applied_runs (user_id, client_id, first_mutation_id, last_mutation_id, first_version, version) VALUES"
        ) { binder, run in
            try binder.bind(userID)
            try binder.bind(clientID)
            try binder.bind(run.firstMutationID)
            try binder.bind(run.lastMutationID)
            try binder.bind(run.firstVersion)
            try binder.bind(plan.version)
        }
        try db.execute(
            rows: others, width: 5,
            sql: "INSERT INTO results (user_id, client_id, mutation_id, version, result) VALUES"
        ) { binder, result in
            try binder.bind(userID)
            try binder.bind(clientID)
            try binder.bind(result.mutationID)
            try binder.bind(plan.version)
            try binder.bind(StoreCoding.resultJSON(result))
        }
        if let first = plan.results.first?.mutationID, let last = plan.results.last?.mutationID {
            try Self.execute(
                db,
                sql: """
                    INSERT INTO mutation_digests (user_id, client_id, first_mutation_id, last_mutation_id, version, digests)
                    VALUES (?, ?, ?, ?, ?, ?)
                    """,
                arguments: [userID, clientID, first, last, plan.version, Data(MutationDigest.packed(plan.digests))])
        }
        if !plan.results.isEmpty {
            try Self.execute(
                db,
                sql: """
                    INSERT INTO clients (user_id, client_id, last_mutation_id, first_notice, last_push_at)
                    VALUES (?, ?, ?, (SELECT coalesce(max(id), 0) FROM notices), ?)
                    ON CONFLICT (user_id, client_id) DO UPDATE SET
                        last_mutation_id = excluded.last_mutation_id, last_push_at = excluded.last_push_at
                    """,
                arguments: [userID, clientID, plan.lastAppliedMutationID, now]
            )
        }
        try Self.execute(db, sql: "UPDATE store_meta SET value = ? WHERE key = 'version'", arguments: [plan.version])
    }

    /// Records the notices the user settled on the pushing device, so its
    /// other devices drop them: one settlement per notice, and only for the
    /// user's own notices this store holds (others are ignored).
    /// - Returns: the scopes of the settlements recorded.
    private static func settle(
        _ settled: [PushRequest.SettledNotice], _ db: Database, userID: String, clientID: String,
        version: Int64, now: Int64, epoch: String, generation: String
    ) throws -> Set<String> {
        var scopes: Set<String> = []
        for notice in settled {
            guard let (noticeGeneration, id) = NoticeCursor.parse(id: notice.id, epoch: epoch) else { continue }
            let held =
                try Bool.fetchOne(
                    db,
                    sql: """
                        SELECT 1 FROM notices WHERE id = ? AND generation = ? AND user_id = ? AND scope = ? AND settles IS NULL
                        """, arguments: [id, noticeGeneration, userID, notice.scope]) ?? false
            let settledBefore =
                try Bool.fetchOne(
                    db,
                    sql: """
                        SELECT 1 FROM notices WHERE user_id = ? AND scope = ? AND settles = ?
                        """, arguments: [userID, notice.scope, notice.id]) ?? false
            guard held, !settledBefore else { continue }
            try Self.execute(
                db,
                sql: """
                    INSERT INTO notices (user_id, scope, by_user, by_client, version, notice, created_at, generation, settles)
                    VALUES (?, ?, ?, ?, ?, 'null', ?, ?, ?)
                    """, arguments: [userID, notice.scope, userID, clientID, version, now, generation, notice.id])
            scopes.insert(notice.scope)
        }
        return scopes
    }

    /// The stored results of `ids`: by id those kept one by one, and the
    /// runs that hold any of the others. An id whose result was collected is
    /// in neither.
    private static func recordedResults(
        _ db: Database, userID: String, clientID: String, ids: [Int64]
    ) throws -> (recorded: [Int64: String], runs: [AppliedRun]) {
        var recorded: [Int64: String] = [:]
        let statement = try db.cachedStatement(sql: "SELECT result FROM results WHERE user_id = ? AND client_id = ? AND mutation_id = ?")
        for id in ids {
            recorded[id] = try String.fetchOne(statement, arguments: [userID, clientID, id])
        }
        guard let low = ids.min(), let high = ids.max() else { return (recorded, []) }
        // An index range from the run that holds `low` (runs never overlap).
        let runs = try Row.fetchAll(
            db,
            sql: """
                SELECT first_mutation_id, last_mutation_id, first_version FROM applied_runs
                WHERE user_id = ?1 AND client_id = ?2 AND first_mutation_id <= ?4 AND last_mutation_id >= ?3
                    AND first_mutation_id >= coalesce((
                        SELECT max(first_mutation_id) FROM applied_runs
                        WHERE user_id = ?1 AND client_id = ?2 AND first_mutation_id <= ?3), ?3)
                """, arguments: [userID, clientID, low, high]
        ).map { AppliedRun(firstMutationID: $0[0], lastMutationID: $0[1], firstVersion: $0[2]) }
        return (recorded, runs)
    }

    /// The digests stored for `ids` (``MutationDigest``), by id: from the
    /// pushes that hold any of them. An id whose digest was collected, or
    /// was applied before digests were kept, has none.
    private static func recordedDigests(
        _ db: Database, userID: String, clientID: String, ids: [Int64]
    ) throws -> [Int64: MutationDigest] {
        guard let low = ids.min(), let high = ids.max() else { return [:] }
        // An index range from the push that holds `low` (pushes never overlap), as for the runs.
        let pushes = try Row.fetchAll(
            db,
            sql: """
                SELECT first_mutation_id, digests FROM mutation_digests
                WHERE user_id = ?1 AND client_id = ?2 AND first_mutation_id <= ?4 AND last_mutation_id >= ?3
                    AND first_mutation_id >= coalesce((
                        SELECT max(first_mutation_id) FROM mutation_digests
                        WHERE user_id = ?1 AND client_id = ?2 AND first_mutation_id <= ?3), ?3)
                """, arguments: [userID, clientID, low, high])
        var digests: [Int64: MutationDigest] = [:]
        for push in pushes {
            let bytes: Data = push[1]
            digests.merge(MutationDigest.unpacked(bytes, firstID: push[0])) { a, _ in a }
        }
        return digests
    }

    /// Which of `keys` the store may hold a row at (deleted ones too): one
    /// statement per scope and table, so a push of new rows (a drain) asks
    /// once, not once per row. A key it cannot ask about this way is
    /// returned, for ``loadRow(_:_:oldestBase:)`` to look up.
    static func heldKeys(_ db: Database, _ keys: [RowKey]) throws -> Set<RowKey> {
        var groups: [String: [String: [String]]] = [:]
        var held: Set<RowKey> = []
        for key in keys {
            // Looked up on their own: a key with a NUL (bound text ends there, `json_each` keeps it), and one
            // beyond ASCII (a `String` key here takes its canonically equivalent spellings, SQLite does not).
            if !Self.plainASCII(key.rowID) || !Self.plainASCII(key.scope) || !Self.plainASCII(key.table) {
                held.insert(key)
            } else {
                groups[key.scope, default: [:]][key.table, default: []].append(key.rowID)
            }
        }
        // Not cached: a cached statement would keep the last list bound until the next push.
        let statement = try db.makeStatement(
            sql: "SELECT row_id FROM rows WHERE scope = ? AND tbl = ? AND row_id IN (SELECT value FROM json_each(?))")
        for (scope, tables) in groups {
            for (table, rowIDs) in tables {
                var list = "["
                for (index, rowID) in rowIDs.enumerated() {
                    if index > 0 { list += "," }
                    JSONText.appendString(rowID, to: &list)
                }
                list += "]"
                for rowID in try String.fetchAll(statement, arguments: [scope, table, list]) {
                    held.insert(RowKey(scope: scope, table: table, rowID: rowID))
                }
            }
        }
        return held
    }

    private static func plainASCII(_ text: String) -> Bool {
        text.utf8.allSatisfy { $0 > 0 && $0 < 0x80 }
    }

    /// The row at `key`, with the history a push whose oldest base for it is
    /// `oldestBase` can read (``HistoryNeeds``): per column, the newest value
    /// at or before that base and every later one, an index seek each; all
    /// of it for a deleted row.
    static func loadRow(_ db: Database, _ key: RowKey, oldestBase: Int64 = .max) throws -> StoredRow? {
        guard
            let row = try Row.fetchOne(
                db.cachedStatement(sql: "SELECT version, deleted, client_id, cells FROM rows WHERE scope = ? AND tbl = ? AND row_id = ?"),
                arguments: [key.scope, key.table, key.rowID]
            )
        else { return nil }
        let deleted: Bool = row["deleted"]
        let cells = try StoreCoding.cells(row["cells"])
        let entries: [Row]
        if deleted {
            entries = try Row.fetchAll(
                db.cachedStatement(sql: "SELECT col, version, value FROM history WHERE scope = ? AND tbl = ? AND row_id = ? ORDER BY version"),
                arguments: [key.scope, key.table, key.rowID])
        } else if cells.isEmpty {
            entries = []
        } else {
            entries = try Row.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT h.col, h.version, h.value FROM json_each(?4) c
                        JOIN history h ON h.scope = ?1 AND h.tbl = ?2 AND h.row_id = ?3 AND h.col = c.value
                        AND h.version >= coalesce((
                            SELECT max(o.version) FROM history o
                            WHERE o.scope = ?1 AND o.tbl = ?2 AND o.row_id = ?3 AND o.col = c.value AND o.version <= ?5), 0)
                        ORDER BY h.version
                        """),
                arguments: [key.scope, key.table, key.rowID, try StoreCoding.json(cells.keys.sorted()), oldestBase])
        }
        let decoder = JSONDecoder()
        let history = try entries.map { entry in
            HistoricValue(
                column: entry["col"],
                version: entry["version"],
                value: try decoder.decode(ColumnValue.self, from: Data((entry["value"] as String).utf8))
            )
        }
        return StoredRow(version: row["version"], deleted: deleted, cells: cells, clientID: row["client_id"], history: history)
    }
}
