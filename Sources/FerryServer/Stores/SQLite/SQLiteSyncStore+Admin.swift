import FerryProtocol
import GRDB

extension SQLiteSyncStore {
    public func scopes(after: String?, limit: Int) async throws -> [ScopeSummary] {
        try await read { db in
            let names = try String.fetchAll(
                db, sql: "SELECT scope FROM scopes WHERE scope > ? ORDER BY scope LIMIT ?", arguments: [after ?? "", limit])
            return try names.compactMap { try Self.summary(db, scope: $0) }
        }
    }

    public func scope(_ scope: String) async throws -> ScopeSummary? {
        try await read { db in try Self.summary(db, scope: scope) }
    }

    private static func summary(_ db: Database, scope: String) throws -> ScopeSummary? {
        guard let row = try Row.fetchOne(db, sql: "SELECT owner FROM scopes WHERE scope = ?", arguments: [scope]) else { return nil }
        let members = try Row.fetchAll(db, sql: "SELECT user_id, role FROM members WHERE scope = ? ORDER BY user_id", arguments: [scope])
            .compactMap { member in ScopeRole(rawValue: member["role"]).map { ScopeMember(userID: member["user_id"], role: $0) } }
        return ScopeSummary(scope: scope, owner: row["owner"], members: members)
    }

    public func removeMember(_ userID: String, from scope: String) async throws -> Bool {
        try await write { db in
            guard try Bool.fetchOne(db, sql: "SELECT 1 FROM scopes WHERE scope = ?", arguments: [scope]) == true else {
                throw FerryServerError(.notFound, "scope `\(scope)` does not exist")
            }
            try db.execute(sql: "DELETE FROM members WHERE scope = ? AND user_id = ?", arguments: [scope, userID])
            return db.changesCount > 0
        }
    }

    public func rows(scope: String, table: String, after: String?, changedSince: Int64?, limit: Int) async throws -> [ListedRow] {
        try await read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT row_id, version, deleted, cells, changed_at FROM rows
                    WHERE scope = ? AND tbl = ? AND row_id > ? AND (deleted = 0 OR ? IS NOT NULL) AND changed_at >= coalesce(?, 0)
                    ORDER BY row_id LIMIT ?
                    """,
                arguments: [scope, table, after ?? "", changedSince, changedSince, limit]
            ).map { row in
                let deleted: Bool = row["deleted"]
                return ListedRow(
                    rowID: row["row_id"], version: row["version"], deleted: deleted,
                    values: deleted ? [:] : try StoreCoding.cells(row["cells"]).mapValues(\.value), changedAt: row["changed_at"])
            }
        }
    }

    /// Versions commit in order here, so the store's version is the end of the feed.
    public func changes(after cursor: String?, scope: String?, table: String?, limit: Int) async throws -> ChangeFeedPage {
        let codec = cursors
        return try await read { db in
            let end = ChangePosition(major: try Self.meta(db, "version"))
            let start = try ChangeFeedCursor.start(cursor, codec: codec, end: end)
            // Each filter a plain condition, so a scope's feed reads its (scope, version) index.
            var filters = "", arguments: StatementArguments = [start.major]
            if let scope { (filters, arguments) = (filters + " AND scope = ?", arguments + [scope]) }
            if let table { (filters, arguments) = (filters + " AND tbl = ?", arguments + [table]) }
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT scope, tbl, row_id, version, deleted, cells, client_id, changed_at FROM rows
                    WHERE version > ?\(filters) ORDER BY version LIMIT \(limit + 1)
                    """,
                arguments: arguments
            ).map { row in
                let version: Int64 = row["version"]
                return (entry: try Self.feedEntry(row), position: ChangePosition(major: version))
            }
            return ChangeFeedCursor.page(rows, limit: limit, end: end, codec: codec)
        }
    }

    private static func feedEntry(_ row: Row) throws -> ChangeFeedEntry {
        let deleted: Bool = row["deleted"]
        return ChangeFeedEntry(
            scope: row["scope"], table: row["tbl"], rowID: row["row_id"], version: row["version"], deleted: deleted,
            values: deleted ? [:] : try StoreCoding.cells(row["cells"]).mapValues(\.value), clientID: row["client_id"],
            changedAt: row["changed_at"])
    }

    public func users(after: String?, limit: Int) async throws -> [String] {
        try await read { db in
            try String.fetchAll(
                db, sql: "SELECT DISTINCT user_id FROM clients WHERE user_id > ? ORDER BY user_id LIMIT ?", arguments: [after ?? "", limit])
        }
    }

    public func devices(of userID: String) async throws -> [DeviceSummary] {
        try await read { db in
            try Row.fetchAll(
                db, sql: "SELECT client_id, last_mutation_id, last_push_at FROM clients WHERE user_id = ? ORDER BY client_id",
                arguments: [userID]
            ).map { DeviceSummary(clientID: $0["client_id"], lastMutationID: $0["last_mutation_id"], lastPushAt: $0["last_push_at"]) }
        }
    }

    public func leaseWebhook(_ name: String, holder: String, now: Int64, leaseMilliseconds: Int64) async throws -> WebhookState? {
        try await write { db in
            try db.execute(sql: "INSERT INTO webhooks (name) VALUES (?) ON CONFLICT (name) DO NOTHING", arguments: [name])
            try db.execute(
                sql: "UPDATE webhooks SET holder = ?, lease_until = ? WHERE name = ? AND (holder = ? OR holder IS NULL OR lease_until < ?)",
                arguments: [holder, now + leaseMilliseconds, name, holder, now])
            guard db.changesCount > 0 else { return nil }
            return try Row.fetchOne(db, sql: "SELECT * FROM webhooks WHERE name = ?", arguments: [name]).map(Self.webhookState)
        }
    }

    public func recordWebhook(_ state: WebhookState, holder: String, now: Int64) async throws -> Bool {
        try await write { db in
            try db.execute(
                sql: """
                    UPDATE webhooks SET cursor = ?, failures = ?, parked = ?, last_error = ?, delivered_at = ?
                    WHERE name = ? AND holder = ? AND lease_until >= ?
                    """,
                arguments: [
                    state.cursor, state.failures, state.parked, state.lastError, state.deliveredAt, state.name, holder, now,
                ])
            return db.changesCount > 0
        }
    }

    public func webhookStates() async throws -> [WebhookState] {
        try await read { db in try Row.fetchAll(db, sql: "SELECT * FROM webhooks ORDER BY name").map(Self.webhookState) }
    }

    public func replayWebhook(_ name: String, from start: WebhookReplay) async throws -> Bool {
        try await write { db in
            try db.execute(sql: "UPDATE webhooks SET parked = 0, failures = 0, holder = NULL, lease_until = 0 WHERE name = ?", arguments: [name])
            guard db.changesCount > 0 else { return false }
            switch start {
            case .whereItStopped: break
            case .beginning: try db.execute(sql: "UPDATE webhooks SET cursor = NULL WHERE name = ?", arguments: [name])
            case .cursor(let cursor): try db.execute(sql: "UPDATE webhooks SET cursor = ? WHERE name = ?", arguments: [cursor, name])
            }
            return true
        }
    }

    private static func webhookState(_ row: Row) -> WebhookState {
        WebhookState(
            name: row["name"], cursor: row["cursor"], failures: row["failures"], parked: row["parked"], lastError: row["last_error"],
            deliveredAt: row["delivered_at"])
    }
}
