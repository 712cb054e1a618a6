import FerryProtocol
import FerryServer
import PostgresNIO

extension PostgresSyncStore {
    public func scopes(after: String?, limit: Int) async throws -> [ScopeSummary] {
        let logger = self.logger
        return try await transaction(.snapshot) { connection, _ in
            var names: [String] = []
            let query: PostgresQuery = "SELECT scope FROM ferry_scopes WHERE scope COLLATE \"C\" > \(after ?? "") ORDER BY scope COLLATE \"C\" LIMIT \(limit)"
            for try await name in try await connection.query(query, logger: logger).decode(String.self) { names.append(name) }
            var summaries: [ScopeSummary] = []
            for name in names {
                if let summary = try await Self.summary(connection, scope: name, logger: logger) { summaries.append(summary) }
            }
            return summaries
        }
    }

    public func scope(_ scope: String) async throws -> ScopeSummary? {
        let logger = self.logger
        return try await transaction(.snapshot) { connection, _ in try await Self.summary(connection, scope: scope, logger: logger) }
    }

    private static func summary(_ connection: PostgresConnection, scope: String, logger: Logger) async throws -> ScopeSummary? {
        var found = false
        var owner: String?
        for try await value in try await connection.query("SELECT owner FROM ferry_scopes WHERE scope = \(scope)", logger: logger)
            .decode(String?.self)
        {
            (found, owner) = (true, value)
        }
        guard found else { return nil }
        var members: [ScopeMember] = []
        let query: PostgresQuery = "SELECT user_id, role FROM ferry_members WHERE scope = \(scope) ORDER BY user_id COLLATE \"C\""
        for try await (userID, role) in try await connection.query(query, logger: logger).decode((String, String).self) {
            if let role = ScopeRole(rawValue: role) { members.append(ScopeMember(userID: userID, role: role)) }
        }
        return ScopeSummary(scope: scope, owner: owner, members: members)
    }

    public func removeMember(_ userID: String, from scope: String) async throws -> Bool {
        let logger = self.logger
        return try await transaction(.serializable) { connection, _ in
            guard try await Self.one(connection, "SELECT scope FROM ferry_scopes WHERE scope = \(scope)", as: String.self, logger: logger) != nil else {
                throw FerryServerError(.notFound, "scope `\(scope)` does not exist")
            }
            let removed = try await Self.one(
                connection, "DELETE FROM ferry_members WHERE scope = \(scope) AND user_id = \(userID) RETURNING user_id", as: String.self,
                logger: logger)
            return removed != nil
        }
    }

    public func rows(scope: String, table: String, after: String?, changedSince: Int64?, limit: Int) async throws -> [ListedRow] {
        let logger = self.logger
        return try await transaction(.snapshot) { connection, _ in
            let query: PostgresQuery = """
                SELECT row_id, version, deleted, cells, changed_at FROM ferry_rows
                WHERE scope = \(scope) AND tbl = \(table) AND row_id COLLATE "C" > \(after ?? "")
                    AND (NOT deleted OR \(changedSince)::bigint IS NOT NULL) AND changed_at >= coalesce(\(changedSince)::bigint, 0)
                ORDER BY row_id COLLATE "C" LIMIT \(limit)
                """
            var rows: [ListedRow] = []
            for try await (rowID, version, deleted, cells, changedAt) in try await connection.query(query, logger: logger)
                .decode((String, Int64, Bool, String, Int64).self)
            {
                rows.append(
                    ListedRow(
                        rowID: rowID, version: version, deleted: deleted,
                        values: deleted ? [:] : try StoreCoding.cells(cells).mapValues(\.value), changedAt: changedAt))
            }
            return rows
        }
    }

    /// Reads below the snapshot's `xmin`, like a pull: every transaction
    /// there has ended, so no change can later appear behind the cursor,
    /// whichever instance wrote it or serves the feed.
    public func changes(after cursor: String?, scope: String?, table: String?, limit: Int) async throws -> ChangeFeedPage {
        let logger = self.logger
        return try await transaction(.snapshot) { connection, codec in
            let readable =
                try await Self.one(connection, "SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint", as: Int64.self, logger: logger) ?? 0
            let end = ChangePosition(major: readable)
            let start = try ChangeFeedCursor.start(cursor, codec: codec, end: end)
            let query: PostgresQuery = """
                SELECT scope, tbl, row_id, version, deleted, cells, client_id, changed_at, xid FROM ferry_rows
                WHERE (xid, version) > (\(start.major), \(start.minor)) AND xid < \(readable)
                    AND (\(scope)::text IS NULL OR scope = \(scope)) AND (\(table)::text IS NULL OR tbl = \(table))
                ORDER BY xid, version LIMIT \(limit + 1)
                """
            var rows: [(entry: ChangeFeedEntry, position: ChangePosition)] = []
            for try await (scope, table, rowID, version, deleted, cells, clientID, changedAt, xid) in try await connection.query(query, logger: logger)
                .decode((String, String, String, Int64, Bool, String, String, Int64, Int64).self)
            {
                let entry = ChangeFeedEntry(
                    scope: scope, table: table, rowID: rowID, version: version, deleted: deleted,
                    values: deleted ? [:] : try StoreCoding.cells(cells).mapValues(\.value), clientID: clientID, changedAt: changedAt)
                rows.append((entry, ChangePosition(major: xid, minor: version)))
            }
            return ChangeFeedCursor.page(rows, limit: limit, end: end, codec: codec)
        }
    }

    public func users(after: String?, limit: Int) async throws -> [String] {
        let logger = self.logger
        return try await transaction(.snapshot) { connection, _ in
            let query: PostgresQuery = """
                SELECT DISTINCT user_id COLLATE "C" AS user_id FROM ferry_clients WHERE user_id COLLATE "C" > \(after ?? "")
                ORDER BY 1 LIMIT \(limit)
                """
            var users: [String] = []
            for try await user in try await connection.query(query, logger: logger).decode(String.self) { users.append(user) }
            return users
        }
    }

    public func devices(of userID: String) async throws -> [DeviceSummary] {
        let logger = self.logger
        return try await transaction(.snapshot) { connection, _ in
            let query: PostgresQuery = """
                SELECT client_id, last_mutation_id, last_push_at FROM ferry_clients WHERE user_id = \(userID) ORDER BY client_id COLLATE "C"
                """
            var devices: [DeviceSummary] = []
            for try await (clientID, last, pushedAt) in try await connection.query(query, logger: logger).decode((String, Int64, Int64?).self) {
                devices.append(DeviceSummary(clientID: clientID, lastMutationID: last, lastPushAt: pushedAt))
            }
            return devices
        }
    }

    public func leaseWebhook(_ name: String, holder: String, now: Int64, leaseMilliseconds: Int64) async throws -> WebhookState? {
        let logger = self.logger
        return try await transaction(.serializable) { connection, _ in
            try await connection.query("INSERT INTO ferry_webhooks (name) VALUES (\(name)) ON CONFLICT (name) DO NOTHING", logger: logger)
            let query: PostgresQuery = """
                UPDATE ferry_webhooks SET holder = \(holder), lease_until = \(now + leaseMilliseconds)
                WHERE name = \(name) AND (holder = \(holder) OR holder IS NULL OR lease_until < \(now))
                RETURNING name, cursor, failures, parked, last_error, delivered_at
                """
            return try await Self.webhookStates(connection, query, logger: logger).first
        }
    }

    public func recordWebhook(_ state: WebhookState, holder: String, now: Int64) async throws -> Bool {
        let logger = self.logger
        return try await transaction(.serializable) { connection, _ in
            let query: PostgresQuery = """
                UPDATE ferry_webhooks SET cursor = \(state.cursor), failures = \(state.failures), parked = \(state.parked),
                    last_error = \(state.lastError), delivered_at = \(state.deliveredAt)
                WHERE name = \(state.name) AND holder = \(holder) AND lease_until >= \(now)
                RETURNING name
                """
            return try await Self.one(connection, query, as: String.self, logger: logger) != nil
        }
    }

    public func webhookStates() async throws -> [WebhookState] {
        let logger = self.logger
        return try await transaction(.snapshot) { connection, _ in
            try await Self.webhookStates(
                connection, "SELECT name, cursor, failures, parked, last_error, delivered_at FROM ferry_webhooks ORDER BY name COLLATE \"C\"",
                logger: logger)
        }
    }

    public func replayWebhook(_ name: String, from start: WebhookReplay) async throws -> Bool {
        let logger = self.logger
        return try await transaction(.serializable) { connection, _ in
            let query: PostgresQuery
            switch start {
            case .whereItStopped:
                query = "UPDATE ferry_webhooks SET parked = false, failures = 0, holder = NULL, lease_until = 0 WHERE name = \(name) RETURNING name"
            case .beginning:
                query = """
                    UPDATE ferry_webhooks SET parked = false, failures = 0, holder = NULL, lease_until = 0, cursor = NULL
                    WHERE name = \(name) RETURNING name
                    """
            case .cursor(let cursor):
                query = """
                    UPDATE ferry_webhooks SET parked = false, failures = 0, holder = NULL, lease_until = 0, cursor = \(cursor)
                    WHERE name = \(name) RETURNING name
                    """
            }
            return try await Self.one(connection, query, as: String.self, logger: logger) != nil
        }
    }

    private static func webhookStates(_ connection: PostgresConnection, _ query: PostgresQuery, logger: Logger) async throws -> [WebhookState] {
        var states: [WebhookState] = []
        for try await (name, cursor, failures, parked, lastError, deliveredAt) in try await connection.query(query, logger: logger)
            .decode((String, String?, Int32, Bool, String?, Int64?).self)
        {
            states.append(
                WebhookState(
                    name: name, cursor: cursor, failures: Int(failures), parked: parked, lastError: lastError, deliveredAt: deliveredAt))
        }
        return states
    }
}
