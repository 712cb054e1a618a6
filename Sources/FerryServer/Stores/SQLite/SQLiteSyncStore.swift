import Crypto
import FerryProtocol
import Foundation
import GRDB

/// The embedded store: one SQLite file, one server process.
///
/// Versions are assigned inside SQLite's single write transaction, so they
/// commit in order and a pull can never skip one (DESIGN.md server semantic 5).
/// Reads run on a WAL snapshot, so a pull page and the client's last applied
/// id always agree.
///
/// ```swift
/// let store = try SQLiteSyncStore(directory: URL(filePath: "./ferry-data"))
/// let receipt = try await store.push(push, userID: "alice", rules: PushRules())
/// ```
public final class SQLiteSyncStore: SyncStore {
    /// The database file's name inside the data directory.
    public static let fileName = "ferry-server.sqlite"

    public let changeFeed = ChangeFeed()
    /// The most row bytes one pull returns per scope; a bigger page is cut and `hasMore` set.
    public let maxPageBytes: Int
    let pool: DatabasePool
    let cursors: PullCursorCodec

    /// Opens (creating if needed) the store in `directory`.
    public convenience init(directory: URL, maxPageBytes: Int = 8 << 20) throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try self.init(path: directory.appending(path: Self.fileName).path, maxPageBytes: maxPageBytes)
    }

    /// Opens (creating if needed) the store at a database file path.
    public init(path: String, maxPageBytes: Int = 8 << 20) throws {
        self.maxPageBytes = maxPageBytes
        var configuration = Configuration()
        configuration.busyMode = .timeout(5)
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = FULL")
        }
        pool = try DatabasePool(path: path, configuration: configuration)
        try Self.migrator.migrate(pool)
        cursors = try pool.read { db in
            guard let epoch = try String.fetchOne(db, sql: "SELECT value FROM store_meta WHERE key = 'epoch'"),
                let key = try Data.fetchOne(db, sql: "SELECT value FROM store_meta WHERE key = 'cursorKey'")
            else { throw FerryServerError(.internalError, "the store at \(path) has no epoch; it is damaged") }
            return PullCursorCodec(epoch: epoch, key: SymmetricKey(data: key))
        }
    }

    /// The store's epoch: cursors from any other epoch get a reset.
    public var epoch: String { cursors.epoch }

    public func close() async throws {
        changeFeed.close()
        try pool.close()
    }

    // MARK: Push

    public func push(_ request: PushRequest, userID: String, rules: PushRules) async throws -> PushReceipt {
        let now = rules.nowMilliseconds
        let receipt = try await pool.write { db -> PushReceipt in
            let lastApplied = try Self.lastMutationID(db, userID: userID, clientID: request.clientID)
            var rows: [RowKey: StoredRow] = [:]
            for mutation in request.mutations where mutation.mutationID > lastApplied {
                let key = RowKey(scope: mutation.scope, table: mutation.table, rowID: mutation.rowID)
                if rows[key] == nil, let row = try Self.loadRow(db, key) {
                    rows[key] = row
                }
            }
            let plan = try rules.plan(
                request, userID: userID, lastApplied: lastApplied, rows: rows,
                version: try Self.meta(db, "version"), horizon: try Self.meta(db, "horizon")
            )
            try Self.write(plan, db, userID: userID, clientID: request.clientID, now: now)
            let replayed = try Self.recordedResults(db, userID: userID, clientID: request.clientID, ids: plan.replayedIDs)
            return PushReceipt(
                response: PushResponse(lastAppliedMutationID: plan.lastAppliedMutationID, results: replayed + plan.results),
                changedScopes: plan.changedScopes
            )
        }
        changeFeed.publish(receipt.changedScopes)
        return receipt
    }

    private static func write(_ plan: PushPlan, _ db: Database, userID: String, clientID: String, now: Int64) throws {
        func json(_ value: some Encodable) throws -> String { try StoreCoding.json(value) }
        for (key, row) in plan.rows {
            try Self.execute(db, 
                sql: """
                    INSERT INTO rows (scope, tbl, row_id, version, deleted, client_id, changed_at, cells)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                    ON CONFLICT (scope, tbl, row_id) DO UPDATE SET
                        version = excluded.version, deleted = excluded.deleted, client_id = excluded.client_id,
                        changed_at = excluded.changed_at, cells = excluded.cells
                    """,
                arguments: [
                    key.scope, key.table, key.rowID, row.version, row.deleted, row.clientID, now,
                    StoreCoding.cellsJSON(row.cells),
                ]
            )
        }
        for (key, values) in plan.overwritten {
            for old in values {
                try Self.execute(db, 
                    sql: "INSERT OR REPLACE INTO history (scope, tbl, row_id, col, version, value) VALUES (?, ?, ?, ?, ?, ?)",
                    arguments: [
                        key.scope, key.table, key.rowID, old.column, old.version,
                        try json(old.value),
                    ]
                )
            }
        }
        for recorded in plan.conflicts {
            try Self.execute(db, 
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
        for notice in plan.notices {
            try Self.execute(db, 
                sql: """
                    INSERT INTO notices (user_id, scope, by_user, by_client, version, notice, created_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    notice.userID, notice.key.scope, notice.byUserID, notice.byClientID, notice.version,
                    try json(StoredNotice(notice)), now,
                ]
            )
        }
        for rejection in plan.rejections {
            let mutation = rejection.mutation
            try Self.execute(db, 
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
        for result in plan.results {
            try Self.execute(db, 
                sql: "INSERT INTO results (user_id, client_id, mutation_id, version, result) VALUES (?, ?, ?, ?, ?)",
                arguments: [
                    userID, clientID, result.mutationID, plan.version,
                    try StoreCoding.resultJSON(result),
                ]
            )
        }
        if !plan.results.isEmpty {
            try Self.execute(db, 
                sql: """
                    INSERT INTO clients (user_id, client_id, last_mutation_id) VALUES (?, ?, ?)
                    ON CONFLICT (user_id, client_id) DO UPDATE SET last_mutation_id = excluded.last_mutation_id
                    """,
                arguments: [userID, clientID, plan.lastAppliedMutationID]
            )
        }
        try Self.execute(db, sql: "UPDATE store_meta SET value = ? WHERE key = 'version'", arguments: [plan.version])
    }

    /// Runs `sql` through the connection's statement cache: a push writes
    /// the same few statements once per row, parsed once.
    static func execute(_ db: Database, sql: String, arguments: StatementArguments) throws {
        try db.cachedStatement(sql: sql).execute(arguments: arguments)
    }

    private static func recordedResults(_ db: Database, userID: String, clientID: String, ids: [Int64]) throws -> [MutationResult] {
        let decoder = JSONDecoder()
        return try ids.map { id in
            let json = try String.fetchOne(
                db.cachedStatement(sql: "SELECT result FROM results WHERE user_id = ? AND client_id = ? AND mutation_id = ?"),
                arguments: [userID, clientID, id]
            )
            // Results older than the tombstone horizon are collected; the id is still acknowledged.
            var result = try json.map { try decoder.decode(MutationResult.self, from: Data($0.utf8)) }
                ?? MutationResult(mutationID: id, status: .applied)
            result.replayed = true
            return result
        }
    }

    static func loadRow(_ db: Database, _ key: RowKey) throws -> StoredRow? {
        guard let row = try Row.fetchOne(
            db.cachedStatement(sql: "SELECT version, deleted, client_id, cells FROM rows WHERE scope = ? AND tbl = ? AND row_id = ?"),
            arguments: [key.scope, key.table, key.rowID]
        ) else { return nil }
        let decoder = JSONDecoder()
        let history = try Row.fetchAll(
            db.cachedStatement(sql: "SELECT col, version, value FROM history WHERE scope = ? AND tbl = ? AND row_id = ? ORDER BY version"),
            arguments: [key.scope, key.table, key.rowID]
        ).map { entry in
            HistoricValue(
                column: entry["col"],
                version: entry["version"],
                value: try decoder.decode(ColumnValue.self, from: Data((entry["value"] as String).utf8))
            )
        }
        return StoredRow(
            version: row["version"],
            deleted: row["deleted"],
            cells: try StoreCoding.cells(row["cells"]),
            clientID: row["client_id"],
            history: history
        )
    }


    static func lastMutationID(_ db: Database, userID: String, clientID: String) throws -> Int64 {
        try Int64.fetchOne(
            db,
            sql: "SELECT last_mutation_id FROM clients WHERE user_id = ? AND client_id = ?",
            arguments: [userID, clientID]
        ) ?? 0
    }

    static func meta(_ db: Database, _ key: String) throws -> Int64 {
        try Int64.fetchOne(db, sql: "SELECT value FROM store_meta WHERE key = ?", arguments: [key]) ?? 0
    }

    // MARK: Pull

    public func pullEncoded(_ request: PullRequest, userID: String, limit: Int) async throws -> EncodedPullResponse {
        let cursors = self.cursors
        let maxPageBytes = self.maxPageBytes
        return try await pool.read { db in
            let lastApplied = try Self.lastMutationID(db, userID: userID, clientID: request.clientID)
            let version = try Self.meta(db, "version")
            let horizon = try Self.meta(db, "horizon")
            var pages: [EncodedPullPage] = []
            for followed in request.scopes {
                var start = PullStart.fromScratch(reset: false)
                if let text = followed.cursor {
                    start = try PullStart(
                        cursor: text, scope: followed.scope, codec: cursors,
                        horizon: ChangePosition(major: horizon), end: ChangePosition(major: version)
                    )
                }
                // Read by column index from a cached statement: no name lookup or row copy per row.
                let cursor = try Row.fetchCursor(
                    db.cachedStatement(sql: """
                        SELECT tbl, row_id, version, deleted, cells FROM rows
                        WHERE scope = ? AND version > ? AND (deleted = 0 OR ?)
                        ORDER BY version LIMIT ?
                        """),
                    arguments: [followed.scope, start.position.major, !start.isFromScratch, limit + 1]
                )
                var rows: [(table: String, rowID: String, version: Int64, deleted: Bool, cells: String)] = []
                rows.reserveCapacity(limit + 1)
                while let row = try cursor.next() {
                    rows.append((row[0], row[1], row[2], row[3], row[4]))
                }
                let (changes, hasMore) = try EncodedRow.page(rows, limit: limit, maxBytes: maxPageBytes) { $0 }
                // A finished scope moves to the store's version, so a quiet
                // scope's cursor never falls behind the tombstone horizon.
                let position = hasMore ? changes.last!.version : version
                let notices = try Self.notices(
                    db, userID: userID, clientID: request.clientID, scope: followed.scope,
                    after: try NoticeCursor.position(from: followed.notices, epoch: cursors.epoch), limit: limit,
                    maxBytes: maxPageBytes, epoch: cursors.epoch
                )
                pages.append(EncodedPullPage(
                    scope: followed.scope,
                    rows: changes,
                    cursor: cursors.encode(PullCursor(epoch: cursors.epoch, scope: followed.scope, position: position)),
                    hasMore: hasMore || notices.hasMore,
                    reset: start.isReset,
                    notices: notices.delivered,
                    noticeCursor: NoticeCursor.text(notices.position, epoch: cursors.epoch)
                ))
            }
            return EncodedPullResponse(lastAppliedMutationID: lastApplied, pages: pages)
        }
    }

    /// The user's notices in `scope` after `start`, but those of the
    /// asking client's own overriding pushes (its reply told it already).
    private static func notices(
        _ db: Database, userID: String, clientID: String, scope: String, after start: ChangePosition, limit: Int,
        maxBytes: Int, epoch: String
    ) throws -> (delivered: [ConflictNotice], position: ChangePosition, hasMore: Bool) {
        let rows = try Row.fetchAll(
            db.cachedStatement(sql: """
                SELECT id, by_user, by_client, notice FROM notices
                WHERE user_id = ? AND scope = ? AND id > ? ORDER BY id LIMIT ?
                """),
            arguments: [userID, scope, start.minor, limit + 1]
        )
        let kept = StoreCoding.pageLength(sizes: rows.lazy.map { ($0["notice"] as String).utf8.count }, limit: limit, maxBytes: maxBytes)
        var position = start
        var delivered: [ConflictNotice] = []
        for row in rows.prefix(kept) {
            let id: Int64 = row["id"]
            position = ChangePosition(major: 0, minor: id)
            if row["by_user"] == userID, row["by_client"] == clientID { continue }
            delivered.append(try StoredNotice.decode(row["notice"]).notice(id: id, epoch: epoch))
        }
        return (delivered, position, rows.count > kept)
    }

    // MARK: One row

    public func row(scope: String, table: String, rowID: String) async throws -> ServerRow? {
        try await pool.read { db in
            try Self.loadRow(db, RowKey(scope: scope, table: table, rowID: rowID))?.serverRow
        }
    }

    public func lastAppliedMutationID(userID: String, clientID: String) async throws -> Int64 {
        try await pool.read { db in try Self.lastMutationID(db, userID: userID, clientID: clientID) }
    }
}
