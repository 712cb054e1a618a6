import FerryProtocol
import Foundation
import GRDB

/// Applies pulled pages to the local database: one transaction per page,
/// with capture off (nothing echoes into the outbox), the scope's cursor
/// saved in the same transaction.
///
/// Rows apply in groups of ``groupSize``, each in a savepoint. When a group
/// fails, its rows are applied one by one and the failing ones are set aside
/// in `ferry_set_aside` with the error, so one bad row (a constraint, a type
/// mismatch) never costs the page. Set-aside rows are retried after each
/// later page of their scope (a parent row may arrive after its child).
struct PageApplier {
    /// The outcome of one page.
    struct Report: Sendable, Equatable {
        var written = 0
        var deleted = 0
        /// Rows left as they are: pending local edits, or a newer known version.
        var kept = 0
        /// Rows of tables this app does not sync.
        var ignored = 0
        /// Rows that failed to apply, with the error.
        var setAside: [SetAsideRow] = []
        /// Set-aside rows that applied on retry.
        var recovered = 0
        /// Local rows removed by the sweep that ends a refetch after a reset.
        var swept = 0
        /// Conflict notices stored.
        var notices = 0
    }

    static let groupSize = 100

    /// What one page's rows share: the upsert text per table and column
    /// set, and whether any row is set aside (else there is none to clear).
    private final class PageContext {
        var upserts: [String: String] = [:]
        var setAsideRows: Bool

        init(setAsideRows: Bool) {
            self.setAsideRows = setAsideRows
        }
    }

    let database: FerryDatabase
    /// The signed-in user's own scope (`user:<id>`).
    let userScope: String

    func apply(_ page: PullPage) throws -> Report {
        let now = database.wallClock.nowMilliseconds()
        return try database.writeWithoutCapture { db in
            var report = Report()
            if page.reset {
                try db.execute(sql: """
                    INSERT INTO ferry_cursors(scope, cursor, refetching) VALUES (?, NULL, 1)
                    ON CONFLICT(scope) DO UPDATE SET refetching = 1
                    """, arguments: [page.scope])
                try db.execute(sql: "DELETE FROM ferry_refetch_seen WHERE scope = ?", arguments: [page.scope])
            }
            let refetching = try Bool.fetchOne(db, sql: "SELECT refetching FROM ferry_cursors WHERE scope = ?",
                                               arguments: [page.scope]) ?? false
            let pending = try Outbox.pendingEdits(db)
            let context = PageContext(setAsideRows: try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM ferry_set_aside)") ?? true)
            var start = 0
            while start < page.changes.count {
                let group = page.changes[start..<min(start + Self.groupSize, page.changes.count)]
                start += Self.groupSize
                var groupReport = Report()
                do {
                    try db.inSavepoint {
                        for change in group {
                            try applyRow(change, scope: page.scope, refetching: refetching, pending: pending, context: context, into: &groupReport, db)
                        }
                        return .commit
                    }
                    report.add(groupReport)
                } catch {
                    for change in group {
                        var rowReport = Report()
                        do {
                            try db.inSavepoint {
                                try applyRow(change, scope: page.scope, refetching: refetching, pending: pending, context: context, into: &rowReport, db)
                                return .commit
                            }
                            report.add(rowReport)
                        } catch {
                            let row = SetAsideRow(table: change.table, rowID: change.rowID, scope: page.scope,
                                                  version: change.version, reason: String(describing: error))
                            try setAside(change, row, now: now, refetching: refetching, db)
                            context.setAsideRows = true
                            report.setAside.append(row)
                        }
                    }
                }
            }
            if context.setAsideRows {
                report.recovered = try retrySetAside(scope: page.scope, refetching: refetching, pending: pending, context: context, now: now, db)
            }
            if refetching && !page.hasMore {
                report.swept = try sweep(scope: page.scope, db)
                try db.execute(sql: "UPDATE ferry_cursors SET refetching = 0 WHERE scope = ?", arguments: [page.scope])
                try db.execute(sql: "DELETE FROM ferry_refetch_seen WHERE scope = ?", arguments: [page.scope])
            }
            report.notices = try storeNotices(page, now: now, db)
            try db.execute(sql: """
                INSERT INTO ferry_cursors(scope, cursor, notice_cursor) VALUES (?, ?, ?)
                ON CONFLICT(scope) DO UPDATE SET cursor = excluded.cursor,
                    notice_cursor = coalesce(excluded.notice_cursor, ferry_cursors.notice_cursor)
                """, arguments: [page.scope, page.cursor, page.noticeCursor])
            try receiveStamps(of: page, db)
            return report
        }
    }

    // MARK: - Notices and stamps

    /// Stores the page's conflict notices with the notice cursor, in the
    /// page's transaction: each lands once however often the page is pulled.
    private func storeNotices(_ page: PullPage, now: Int64, _ db: Database) throws -> Int {
        var stored = 0
        for notice in page.notices where database.layouts[notice.table] != nil {
            let held = try Bool.fetchOne(db, sql: "SELECT 1 FROM ferry_conflicts WHERE notice_id = ? AND scope = ?",
                                         arguments: [notice.id, page.scope]) ?? false
            if held { continue }
            try PushRecorder.insert(
                notice.conflict, table: notice.table, rowID: notice.rowID, scope: page.scope, mutationID: 0,
                serverVersion: notice.row?.version, serverRow: try notice.row.map(ServerRowRestore.encode), rowValues: nil,
                noticeID: notice.id, overriddenBy: notice.overriddenBy, now: now, db)
            stored += 1
        }
        return stored
    }

    /// Moves the device's clock past the newest stamp the page carries (and
    /// saves it), so a later local edit orders after every pulled one under
    /// last-write-wins, whatever the wall clocks say. A stamp far ahead of
    /// this device's clock is not followed (``EditClock/maxPulledLeadMilliseconds``).
    private func receiveStamps(of page: PullPage, _ db: Database) throws {
        let clock = database.capture.clock
        guard let newest = page.changes.lazy.compactMap(\.hlc).filter(clock.follows(pulled:)).max() else { return }
        clock.advance(past: newest)
        let saved: Int64 = try FerryMeta.value(.hlc, in: db) ?? 0
        if newest.rawValue > saved {
            try FerryMeta.setValue(newest.rawValue, for: .hlc, in: db)
        }
    }

    // MARK: - One row

    private func applyRow(_ change: RowChange, scope: String, refetching: Bool, pending: [RowKey: RowRebase.Pending],
                          context: PageContext, into report: inout Report, _ db: Database) throws {
        guard let layout = database.layouts[change.table] else {
            report.ignored += 1
            return
        }
        let known = try Int64.fetchOne(db.cachedStatement(sql: "SELECT version FROM ferry_rows WHERE tbl = ? AND row_id = ?"),
                                       arguments: [change.table, change.rowID])
        let plan = RowRebase.plan(change, pending: pending[RowKey(table: change.table, rowID: change.rowID)] ?? .none,
                                  knownVersion: known, columns: layout.columns, primaryKey: layout.primaryKey)
        let table = SQLText.identifier(layout.table.name)
        let key = SQLText.identifier(layout.primaryKey)
        var recordVersion = true
        switch plan {
        case .keep(let record):
            recordVersion = record
            report.kept += 1
        case .delete:
            try db.cachedStatement(sql: "DELETE FROM \(table) WHERE \(key) = ?").execute(arguments: [change.rowID])
            report.deleted += 1
        case .write(let values):
            let columns = values.keys.sorted()
            let cacheKey = ([layout.table.name] + columns).joined(separator: "\u{1F}")
            let sql: String
            if let cached = context.upserts[cacheKey] {
                sql = cached
            } else {
                let names = ([layout.primaryKey] + columns).map(SQLText.identifier).joined(separator: ", ")
                let marks = Array(repeating: "?", count: columns.count + 1).joined(separator: ", ")
                let update = columns.isEmpty
                    ? "DO NOTHING"
                    : "DO UPDATE SET " + columns.map { "\(SQLText.identifier($0)) = excluded.\(SQLText.identifier($0))" }.joined(separator: ", ")
                sql = "INSERT INTO \(table) (\(names)) VALUES (\(marks)) ON CONFLICT(\(key)) \(update)"
                context.upserts[cacheKey] = sql
            }
            var arguments: [DatabaseValue] = [change.rowID.databaseValue]
            arguments += columns.map { values[$0]!.databaseValue }
            try db.cachedStatement(sql: sql).execute(arguments: StatementArguments(arguments))
            report.written += 1
        }
        if recordVersion {
            try db.cachedStatement(sql: """
                INSERT INTO ferry_rows(tbl, row_id, version) VALUES (?, ?, ?)
                ON CONFLICT(tbl, row_id) DO UPDATE SET version = max(version, excluded.version)
                """).execute(arguments: [change.table, change.rowID, change.version])
        }
        if refetching {
            try db.cachedStatement(sql: "INSERT OR IGNORE INTO ferry_refetch_seen(scope, tbl, row_id) VALUES (?, ?, ?)")
                .execute(arguments: [scope, change.table, change.rowID])
        }
        if context.setAsideRows {
            try db.cachedStatement(sql: "DELETE FROM ferry_set_aside WHERE tbl = ? AND row_id = ? AND version <= ?")
                .execute(arguments: [change.table, change.rowID, change.version])
        }
    }

    // MARK: - Rows set aside

    private func setAside(_ change: RowChange, _ row: SetAsideRow, now: Int64, refetching: Bool, _ db: Database) throws {
        try db.execute(sql: """
            INSERT INTO ferry_set_aside(tbl, row_id, scope, version, deleted, row_values, reason, set_aside_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT(tbl, row_id) DO UPDATE SET scope = excluded.scope, version = excluded.version,
                deleted = excluded.deleted, row_values = excluded.row_values, reason = excluded.reason,
                set_aside_at = excluded.set_aside_at
            WHERE excluded.version >= ferry_set_aside.version
            """, arguments: [change.table, change.rowID, row.scope, change.version, change.deleted,
                             try ColumnValueJSON.encodeRow(change.values), row.reason, now])
        if refetching {
            // Seen, though not applied: the sweep must not delete the local row.
            try db.execute(sql: "INSERT OR IGNORE INTO ferry_refetch_seen(scope, tbl, row_id) VALUES (?, ?, ?)",
                           arguments: [row.scope, change.table, change.rowID])
        }
    }

    private func retrySetAside(scope: String, refetching: Bool, pending: [RowKey: RowRebase.Pending],
                               context: PageContext, now: Int64, _ db: Database) throws -> Int {
        let rows = try Row.fetchAll(db, sql: """
            SELECT tbl, row_id, version, deleted, row_values FROM ferry_set_aside WHERE scope = ? ORDER BY set_aside_at
            """, arguments: [scope])
        var recovered = 0
        for row in rows {
            let change = RowChange(table: row["tbl"], rowID: row["row_id"], version: row["version"],
                                   deleted: row["deleted"], values: try ColumnValueJSON.decodeRow(row["row_values"]))
            var ignored = Report()
            do {
                try db.inSavepoint {
                    try applyRow(change, scope: scope, refetching: refetching, pending: pending, context: context, into: &ignored, db)
                    return .commit
                }
                recovered += 1
            } catch {
                try db.execute(sql: "UPDATE ferry_set_aside SET reason = ? WHERE tbl = ? AND row_id = ?",
                               arguments: [String(describing: error), change.table, change.rowID])
            }
        }
        return recovered
    }

    // MARK: - After a reset

    /// Removes the local rows of `scope` the refetch did not bring back,
    /// unless a pending local insert or update holds them.
    private func sweep(scope: String, _ db: Database) throws -> Int {
        var removed = 0
        for layout in database.layouts.values.sorted(by: { $0.table.name < $1.table.name }) {
            let condition: String
            var arguments: [DatabaseValue] = []
            switch layout.table.scope {
            case .user:
                guard scope == userScope else { continue }
                condition = "1"
            case .column(let column):
                condition = "(\(SQLText.identifier(column)) = ? OR (\(SQLText.identifier(column)) IS NULL AND ?))"
                arguments = [scope.databaseValue, (scope == userScope).databaseValue]
            }
            let table = SQLText.identifier(layout.table.name)
            let key = SQLText.identifier(layout.primaryKey)
            try db.execute(sql: """
                DELETE FROM \(table) WHERE \(condition)
                AND \(key) NOT IN (SELECT row_id FROM ferry_refetch_seen WHERE scope = ? AND tbl = ?)
                AND \(key) NOT IN (SELECT row_id FROM ferry_outbox WHERE state = 'pending' AND tbl = ? AND op <> 'delete')
                """, arguments: StatementArguments(arguments + [scope.databaseValue, layout.table.name.databaseValue,
                                                                layout.table.name.databaseValue]))
            removed += db.changesCount
            try db.execute(sql: "DELETE FROM ferry_rows WHERE tbl = ? AND row_id NOT IN (SELECT \(key) FROM \(table))",
                           arguments: [layout.table.name])
        }
        return removed
    }
}

extension PageApplier.Report {
    mutating func add(_ other: Self) {
        written += other.written
        deleted += other.deleted
        kept += other.kept
        ignored += other.ignored
        setAside += other.setAside
        recovered += other.recovered
        swept += other.swept
        notices += other.notices
    }
}
