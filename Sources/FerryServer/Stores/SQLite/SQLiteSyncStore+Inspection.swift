import FerryProtocol
import Foundation
import GRDB

extension SQLiteSyncStore {
    public func inspectRow(scope: String, table: String, rowID: String) async throws -> RowInspection {
        try await read { db in
            let key: StatementArguments = [scope, table, rowID]
            let current = try Row.fetchOne(
                db, sql: "SELECT version, deleted, collected, client_id, changed_at, cells FROM rows WHERE scope = ? AND tbl = ? AND row_id = ?",
                arguments: key
            ).map { row in
                InspectedRow(
                    version: row["version"], deleted: row["deleted"], collected: row["collected"], clientID: row["client_id"],
                    changedAt: row["changed_at"], cells: try Self.inspectedCells(row["cells"]))
            }
            let history = try Row.fetchAll(
                db,
                sql: "SELECT col, version, value, client_id, written_at FROM history WHERE scope = ? AND tbl = ? AND row_id = ? ORDER BY version, col",
                arguments: key
            ).map { row in
                InspectedValue(
                    column: row["col"], version: row["version"], value: try StoreCoding.decode(ColumnValue.self, from: row["value"]),
                    clientID: row["client_id"], writtenAt: row["written_at"])
            }
            let conflicts = try Row.fetchAll(
                db, sql: "SELECT * FROM conflicts WHERE scope = ? AND tbl = ? AND row_id = ? ORDER BY id", arguments: key
            ).map(Self.inspectedConflict)
            // A notice names its row inside its JSON; the scope's notices are few beside its rows.
            let notices = try Row.fetchAll(
                db,
                sql: """
                    SELECT user_id, scope, by_user, by_client, version, notice, settles, created_at FROM notices
                    WHERE scope = ? AND json_extract(notice, '$.table') = ? AND json_extract(notice, '$.rowID') = ? ORDER BY id
                    """,
                arguments: key
            ).map(Self.inspectedNotice)
            let rejections = try Row.fetchAll(
                db, sql: "SELECT * FROM rejections WHERE scope = ? AND tbl = ? AND row_id = ? ORDER BY id", arguments: key
            ).map(Self.inspectedRejection)
            return RowInspection(
                scope: scope, table: table, rowID: rowID, current: current, history: history, conflicts: conflicts, notices: notices,
                rejections: rejections)
        }
    }

    public func recentConflicts(_ filter: ConflictFilter, limit: Int) async throws -> [InspectedConflict] {
        try await read { db in
            var conditions: [String] = [], arguments: StatementArguments = []
            if let user = filter.userID { (conditions, arguments) = (conditions + ["user_id = ?"], arguments + [user]) }
            if let scope = filter.scope { (conditions, arguments) = (conditions + ["scope = ?"], arguments + [scope]) }
            if let table = filter.table { (conditions, arguments) = (conditions + ["tbl = ?"], arguments + [table]) }
            if let kind = filter.kind {
                (conditions, arguments) = (conditions + ["json_extract(conflict, '$.kind') = ?"], arguments + [kind.rawValue])
            }
            let condition = conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")
            return try Row.fetchAll(db, sql: "SELECT * FROM conflicts \(condition) ORDER BY id DESC LIMIT \(limit)", arguments: arguments)
                .map(Self.inspectedConflict)
        }
    }

    public func recentNotices(_ filter: ConflictFilter, limit: Int) async throws -> [InspectedNotice] {
        try await read { db in
            var conditions = ["settles IS NULL"], arguments: StatementArguments = []
            if let user = filter.userID { (conditions, arguments) = (conditions + ["user_id = ?"], arguments + [user]) }
            if let scope = filter.scope { (conditions, arguments) = (conditions + ["scope = ?"], arguments + [scope]) }
            if let table = filter.table { (conditions, arguments) = (conditions + ["json_extract(notice, '$.table') = ?"], arguments + [table]) }
            if let kind = filter.kind {
                (conditions, arguments) = (conditions + ["json_extract(notice, '$.conflict.kind') = ?"], arguments + [kind.rawValue])
            }
            return try Row.fetchAll(
                db,
                sql: """
                    SELECT user_id, scope, by_user, by_client, version, notice, settles, created_at FROM notices
                    WHERE \(conditions.joined(separator: " AND ")) ORDER BY id DESC LIMIT \(limit)
                    """,
                arguments: arguments
            ).map(Self.inspectedNotice)
        }
    }

    public func overview() async throws -> StoreOverview {
        let path = pool.path
        return try await read { db in
            let counts = try Row.fetchOne(
                db,
                sql: """
                    SELECT (SELECT count(*) FROM rows WHERE deleted = 0) AS live, (SELECT count(*) FROM rows WHERE deleted = 1) AS tombstones,
                        (SELECT count(*) FROM scopes) AS scopes, (SELECT count(DISTINCT user_id) FROM clients) AS users,
                        (SELECT count(*) FROM clients) AS devices, (SELECT count(*) FROM conflicts) AS conflicts,
                        (SELECT count(*) FROM notices WHERE settles IS NULL) AS notices
                    """)!
            let migrations = try String.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations ORDER BY identifier")
            let size = ["", "-wal"].reduce(Int64(0)) { total, suffix in
                total + ((try? FileManager.default.attributesOfItem(atPath: path + suffix)[.size] as? Int64) ?? 0)
            }
            return StoreOverview(
                kind: "embedded SQLite", schemaVersion: migrations.last ?? "none", sizeBytes: size, rows: counts["live"],
                tombstones: counts["tombstones"], scopes: counts["scopes"], users: counts["users"], devices: counts["devices"],
                conflicts: counts["conflicts"], notices: counts["notices"],
                instances: [StoreInstance(name: "this process (pid \(ProcessInfo.processInfo.processIdentifier))", connections: 1, since: nil)])
        }
    }

    public func scopeContents(_ scope: String) async throws -> ScopeContents {
        try await read { db in
            var tables: [String: Int64] = [:]
            for row in try Row.fetchAll(
                db, sql: "SELECT tbl, count(*) AS n FROM rows WHERE scope = ? AND deleted = 0 GROUP BY tbl", arguments: [scope])
            {
                tables[row["tbl"]] = row["n"]
            }
            let last = try Int64.fetchOne(db, sql: "SELECT max(changed_at) FROM rows WHERE scope = ?", arguments: [scope])
            return ScopeContents(tables: tables, lastChangedAt: last)
        }
    }

    public func userActivity(_ userID: String) async throws -> UserActivity {
        try await read { db in
            var rejections: [String: Int64] = [:]
            for row in try Row.fetchAll(
                db, sql: "SELECT client_id, count(*) AS n FROM rejections WHERE user_id = ? GROUP BY client_id", arguments: [userID])
            {
                rejections[row["client_id"]] = row["n"]
            }
            let notices =
                try Int64.fetchOne(
                    db, sql: "SELECT count(*) FROM notices WHERE user_id = ? AND settles IS NULL", arguments: [userID]) ?? 0
            let scopes = try String.fetchAll(
                db,
                sql: "SELECT scope FROM scopes WHERE owner = ? UNION SELECT scope FROM members WHERE user_id = ? ORDER BY 1",
                arguments: [userID, userID])
            return UserActivity(rejectionsByDevice: rejections, notices: notices, scopes: scopes)
        }
    }

    private static func inspectedCells(_ json: String) throws -> [InspectedCell] {
        try StoreCoding.cells(json).sorted { $0.key < $1.key }.map { column, cell in
            InspectedCell(column: column, value: cell.value, version: cell.version, wallMilliseconds: cell.hlc.wallMilliseconds, clientID: cell.clientID)
        }
    }

    private static func inspectedConflict(_ row: Row) throws -> InspectedConflict {
        InspectedConflict(
            userID: row["user_id"], clientID: row["client_id"], mutationID: row["mutation_id"], scope: row["scope"], table: row["tbl"],
            rowID: row["row_id"], version: row["version"], conflict: try StoreCoding.decode(Conflict.self, from: row["conflict"]),
            createdAt: row["created_at"])
    }

    private static func inspectedNotice(_ row: Row) throws -> InspectedNotice {
        let stored = try? StoredNotice.decode(row["notice"])
        return InspectedNotice(
            userID: row["user_id"], byUser: row["by_user"], byClient: row["by_client"], version: row["version"], conflict: stored?.conflict,
            settles: row["settles"], createdAt: row["created_at"], scope: row["scope"], table: stored?.table, rowID: stored?.rowID)
    }

    private static func inspectedRejection(_ row: Row) -> InspectedRejection {
        InspectedRejection(
            userID: row["user_id"], clientID: row["client_id"], mutationID: row["mutation_id"], scope: row["scope"], table: row["tbl"],
            rowID: row["row_id"], reason: row["reason"], createdAt: row["created_at"])
    }
}
