import FerryProtocol
import FerryServer
import PostgresNIO

extension PostgresSyncStore {
    public func inspectRow(scope: String, table: String, rowID: String) async throws -> RowInspection {
        let logger = self.logger
        return try await transaction(.snapshot) { connection, _ in
            var current: InspectedRow?
            let rowQuery: PostgresQuery = """
                SELECT version, deleted, collected, client_id, changed_at, cells FROM ferry_rows
                WHERE scope = \(scope) AND tbl = \(table) AND row_id = \(rowID)
                """
            for try await (version, deleted, collected, clientID, changedAt, cells) in try await connection.query(rowQuery, logger: logger)
                .decode((Int64, Bool, Bool, String, Int64, String).self)
            {
                let inspected = try StoreCoding.cells(cells).sorted { $0.key < $1.key }.map { column, cell in
                    InspectedCell(
                        column: column, value: cell.value, version: cell.version, wallMilliseconds: cell.hlc.wallMilliseconds, clientID: cell.clientID)
                }
                current = InspectedRow(
                    version: version, deleted: deleted, collected: collected, clientID: clientID, changedAt: changedAt, cells: inspected)
            }
            var history: [InspectedValue] = []
            let historyQuery: PostgresQuery = """
                SELECT col, version, value, client_id, written_at FROM ferry_history
                WHERE scope = \(scope) AND tbl = \(table) AND row_id = \(rowID) ORDER BY version, col COLLATE "C"
                """
            for try await (column, version, value, clientID, writtenAt) in try await connection.query(historyQuery, logger: logger)
                .decode((String, Int64, String, String?, Int64?).self)
            {
                history.append(
                    InspectedValue(
                        column: column, version: version, value: try StoreCoding.decode(ColumnValue.self, from: value), clientID: clientID,
                        writtenAt: writtenAt))
            }
            let conflicts = try await Self.conflicts(
                connection,
                "SELECT \(unescaped: Self.conflictColumns) FROM ferry_conflicts WHERE scope = \(scope) AND tbl = \(table) AND row_id = \(rowID) ORDER BY id",
                logger: logger)
            // A notice names its row inside its JSON; the scope's notices are few beside its rows.
            let notices = try await Self.notices(
                connection,
                """
                SELECT \(unescaped: Self.noticeColumns) FROM ferry_notices
                WHERE scope = \(scope) AND notice::jsonb->>'table' = \(table) AND notice::jsonb->>'rowID' = \(rowID) ORDER BY id
                """,
                logger: logger)
            var rejections: [InspectedRejection] = []
            let rejectionQuery: PostgresQuery = """
                SELECT user_id, client_id, mutation_id, reason, created_at FROM ferry_rejections
                WHERE scope = \(scope) AND tbl = \(table) AND row_id = \(rowID) ORDER BY id
                """
            for try await (userID, clientID, mutationID, reason, createdAt) in try await connection.query(rejectionQuery, logger: logger)
                .decode((String, String, Int64, String, Int64).self)
            {
                rejections.append(
                    InspectedRejection(
                        userID: userID, clientID: clientID, mutationID: mutationID, scope: scope, table: table, rowID: rowID, reason: reason,
                        createdAt: createdAt))
            }
            return RowInspection(
                scope: scope, table: table, rowID: rowID, current: current, history: history, conflicts: conflicts, notices: notices,
                rejections: rejections)
        }
    }

    public func recentConflicts(_ filter: ConflictFilter, limit: Int) async throws -> [InspectedConflict] {
        let logger = self.logger
        return try await transaction(.snapshot) { connection, _ in
            try await Self.conflicts(
                connection,
                """
                SELECT \(unescaped: Self.conflictColumns) FROM ferry_conflicts
                WHERE (\(filter.userID)::text IS NULL OR user_id = \(filter.userID)) AND (\(filter.scope)::text IS NULL OR scope = \(filter.scope))
                    AND (\(filter.table)::text IS NULL OR tbl = \(filter.table))
                    AND (\(filter.kind?.rawValue)::text IS NULL OR conflict::jsonb->>'kind' = \(filter.kind?.rawValue))
                ORDER BY id DESC LIMIT \(limit)
                """,
                logger: logger)
        }
    }

    public func recentNotices(_ filter: ConflictFilter, limit: Int) async throws -> [InspectedNotice] {
        let logger = self.logger
        return try await transaction(.snapshot) { connection, _ in
            try await Self.notices(
                connection,
                """
                SELECT \(unescaped: Self.noticeColumns) FROM ferry_notices
                WHERE settles IS NULL AND (\(filter.userID)::text IS NULL OR user_id = \(filter.userID))
                    AND (\(filter.scope)::text IS NULL OR scope = \(filter.scope))
                    AND (\(filter.table)::text IS NULL OR notice::jsonb->>'table' = \(filter.table))
                    AND (\(filter.kind?.rawValue)::text IS NULL OR notice::jsonb->'conflict'->>'kind' = \(filter.kind?.rawValue))
                ORDER BY id DESC LIMIT \(limit)
                """,
                logger: logger)
        }
    }

    public func overview() async throws -> StoreOverview {
        let logger = self.logger
        return try await transaction(.snapshot) { connection, _ in
            let countsQuery: PostgresQuery = """
                SELECT (SELECT count(*) FROM ferry_rows WHERE NOT deleted), (SELECT count(*) FROM ferry_rows WHERE deleted),
                    (SELECT count(*) FROM ferry_scopes), (SELECT count(DISTINCT user_id) FROM ferry_clients), (SELECT count(*) FROM ferry_clients),
                    (SELECT count(*) FROM ferry_conflicts), (SELECT count(*) FROM ferry_notices WHERE settles IS NULL),
                    (SELECT max(version) FROM ferry_schema_migrations), pg_database_size(current_database())
                """
            var overview = StoreOverview(
                kind: "PostgreSQL", schemaVersion: "none", sizeBytes: nil, rows: 0, tombstones: 0, scopes: 0, users: 0, devices: 0, conflicts: 0,
                notices: 0, instances: [])
            for try await (live, tombstones, scopes, users, devices, conflicts, notices, schema, size) in try await connection.query(
                countsQuery, logger: logger
            ).decode((Int64, Int64, Int64, Int64, Int64, Int64, Int64, Int?, Int64).self) {
                (overview.rows, overview.tombstones, overview.scopes, overview.users) = (live, tombstones, scopes, users)
                (overview.devices, overview.conflicts, overview.notices) = (devices, conflicts, notices)
                (overview.schemaVersion, overview.sizeBytes) = (schema.map(String.init) ?? "none", size)
            }
            // Every instance names its connections (`application_name`), so pg_stat_activity lists them all.
            let instancesQuery: PostgresQuery = """
                SELECT application_name, count(*)::bigint, (extract(epoch FROM min(backend_start)) * 1000)::bigint FROM pg_stat_activity
                WHERE datname = current_database() AND application_name LIKE \(Self.instancePrefix + "%")
                GROUP BY application_name ORDER BY application_name
                """
            for try await (name, connections, since) in try await connection.query(instancesQuery, logger: logger)
                .decode((String, Int64, Int64?).self)
            {
                overview.instances.append(
                    StoreInstance(name: String(name.dropFirst(Self.instancePrefix.count)), connections: Int(connections), since: since))
            }
            return overview
        }
    }

    public func scopeContents(_ scope: String) async throws -> ScopeContents {
        let logger = self.logger
        return try await transaction(.snapshot) { connection, _ in
            var tables: [String: Int64] = [:]
            let query: PostgresQuery = "SELECT tbl, count(*) FROM ferry_rows WHERE scope = \(scope) AND NOT deleted GROUP BY tbl"
            for try await (table, count) in try await connection.query(query, logger: logger).decode((String, Int64).self) { tables[table] = count }
            let last = try await Self.one(connection, "SELECT max(changed_at) FROM ferry_rows WHERE scope = \(scope)", as: Int64?.self, logger: logger)
            return ScopeContents(tables: tables, lastChangedAt: last ?? nil)
        }
    }

    public func userActivity(_ userID: String) async throws -> UserActivity {
        let logger = self.logger
        return try await transaction(.snapshot) { connection, _ in
            var rejections: [String: Int64] = [:]
            let query: PostgresQuery = "SELECT client_id, count(*) FROM ferry_rejections WHERE user_id = \(userID) GROUP BY client_id"
            for try await (client, count) in try await connection.query(query, logger: logger).decode((String, Int64).self) { rejections[client] = count }
            let notices =
                try await Self.one(
                    connection, "SELECT count(*) FROM ferry_notices WHERE user_id = \(userID) AND settles IS NULL", as: Int64.self, logger: logger) ?? 0
            var scopes: [String] = []
            let scopesQuery: PostgresQuery = """
                SELECT scope COLLATE "C" FROM ferry_scopes WHERE owner = \(userID) UNION SELECT scope COLLATE "C" FROM ferry_members WHERE user_id = \(userID)
                ORDER BY 1
                """
            for try await scope in try await connection.query(scopesQuery, logger: logger).decode(String.self) { scopes.append(scope) }
            return UserActivity(rejectionsByDevice: rejections, notices: notices, scopes: scopes)
        }
    }

    private static let noticeColumns = "user_id, scope, by_user, by_client, version, notice, settles, created_at"

    private static func notices(_ connection: PostgresConnection, _ query: PostgresQuery, logger: Logger) async throws -> [InspectedNotice] {
        var notices: [InspectedNotice] = []
        for try await (userID, scope, byUser, byClient, version, notice, settles, createdAt) in try await connection.query(query, logger: logger)
            .decode((String, String, String, String, Int64, String, String?, Int64).self)
        {
            let stored = try? StoredNotice.decode(notice)
            notices.append(
                InspectedNotice(
                    userID: userID, byUser: byUser, byClient: byClient, version: version, conflict: stored?.conflict, settles: settles,
                    createdAt: createdAt, scope: scope, table: stored?.table, rowID: stored?.rowID))
        }
        return notices
    }

    private static let conflictColumns = "user_id, client_id, mutation_id, scope, tbl, row_id, version, conflict, created_at"

    private static func conflicts(_ connection: PostgresConnection, _ query: PostgresQuery, logger: Logger) async throws -> [InspectedConflict] {
        var conflicts: [InspectedConflict] = []
        for try await (userID, clientID, mutationID, scope, table, rowID, version, conflict, createdAt) in try await connection.query(
            query, logger: logger
        ).decode((String, String, Int64, String, String, String, Int64?, String, Int64).self) {
            conflicts.append(
                InspectedConflict(
                    userID: userID, clientID: clientID, mutationID: mutationID, scope: scope, table: table, rowID: rowID, version: version,
                    conflict: try StoreCoding.decode(Conflict.self, from: conflict), createdAt: createdAt))
        }
        return conflicts
    }
}
