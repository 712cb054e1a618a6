import FerryProtocol
import FerrySQLite
import Foundation
import GRDB

/// Applies pulled pages to the local database: one transaction per page,
/// with capture off (nothing echoes into the outbox), the scope's cursor
/// saved in the same transaction.
///
/// A page's rows apply together in one savepoint. When that fails, they
/// apply in groups of ``groupSize``, each in a savepoint, and a group that
/// fails applies row by row; the rows that fail alone are set aside in
/// `ferry_set_aside` with the error, so one bad row (a constraint, a type
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
        /// Rows queued to go back to a server that lost history
        /// (``PageApplier+Recovery.swift``).
        var sentBack = 0
        /// Conflict notices stored.
        var notices = 0
        /// Conflicts dropped because the user settled them on another device.
        var settledElsewhere = 0
        /// The scope's cursor moved to the page's: always for a pulled page,
        /// for a live page only when it continued from the cursor.
        var movedCursor = false
    }

    /// The rows of a group tried on its own once its page failed to apply whole.
    static let groupSize = 100

    /// What one page's rows share: the upsert statements per table, column
    /// set and row count (``UpsertBatch``), whether any row is set aside
    /// (else there is none to clear), and the refetched rows to record
    /// (written in one statement each, once the rows are applied).
    ///
    /// Each savepoint records its rows' versions before it writes them
    /// (``PageApplier/advanceVersions(of:_:)``). A recovering refetch reads
    /// the versions and stamps the device knows of the page's rows first (in
    /// one query) and records the versions after.
    final class PageContext {
        let upserts = UpsertBatch.Statements()
        var setAsideRows: Bool
        /// The versions the device knows of the page's rows, read only while recovering.
        var known: [RowKey: Int64] = [:]
        /// The edit stamps the device knows of the page's rows (``KnownVersions``), read only while recovering.
        var stamps: [RowKey: Int64] = [:]
        /// The server lost history: rows the device holds newer go back (``PageApplier+Recovery.swift``).
        var recovering: Bool
        /// While recovering: in the order applied, with the row's edit stamp;
        /// a row twice (a retried set-aside row) keeps its newest through `max`.
        var versions: [(RowKey, Int64, Int64?)] = []
        var seen: [RowKey] = []

        init(setAsideRows: Bool, recovering: Bool) {
            self.setAsideRows = setAsideRows
            self.recovering = recovering
        }
    }

    /// What rows applied in a savepoint will record, kept apart until it
    /// commits, and the rows it has yet to write.
    struct Applied {
        var versions: [(RowKey, Int64, Int64?)] = []
        var seen: [RowKey] = []
        var batch = UpsertBatch()
        /// The versions the device holds of the savepoint's rows, when one
        /// is newer than its row's (``PageApplier/advanceVersions(of:_:)``),
        /// moved on past each row applied; `nil` when none is.
        var held: [RowKey: Int64]?

        func commit(to context: PageContext) {
            context.versions += versions
            context.seen += seen
        }
    }

    let database: FerryDatabase
    /// The signed-in user's own scope (`user:<id>`).
    let userScope: String
    /// What a page saying the server lost history does.
    var lostServerHistory = SyncConfiguration.LostServerHistory.sendBack

    /// Applies a page, blocking the caller (tests and `ferry-bench`).
    func apply(_ page: PullPage) throws -> Report {
        let now = database.wallClock.nowMilliseconds()
        return try database.writeWithoutCapture { db in try apply(page, now: now, db) }
    }

    /// Applies a page without blocking the caller: the sync engine's path.
    ///
    /// - Parameter movesCursor: `false` for a page from the live stream: its
    ///   rows apply as a pulled page's would, but a refetch in progress and
    ///   its sweep are left to the next pull, and the scope's cursor moves
    ///   only if the page covers it (it is the page's ``PullPage/after``, or
    ///   lies between that and the page's end: the page then holds every
    ///   change after it, as a pull would) and no row of the page has
    ///   pending edits, checked in the page's transaction.
    func apply(_ page: PullPage, movesCursor: Bool = true) async throws -> Report {
        let now = database.wallClock.nowMilliseconds()
        let applier = self
        return try await database.writeWithoutCapture { db in try applier.apply(page, now: now, movesCursor: movesCursor, db) }
    }

    /// Applies a page in the write transaction the caller holds, capture off.
    private func apply(_ page: PullPage, now: Int64, movesCursor: Bool = true, _ db: Database) throws -> Report {
        do {
            var report = Report()
            var cursorRecord = try ScopeCursorRecord.find(page.scope, db)
            if page.reset && movesCursor {
                cursorRecord.refetching = true
                if page.lostHistory {
                    // The versions held here are of the history the server lost: a row it returns at an
                    // older version is its row now, to mirror as to send back against.
                    try forgetVersions(of: page.scope, db)
                    if lostServerHistory == .sendBack {
                        cursorRecord.recovering = true
                        try recheckUploads(of: page.scope, db)
                    }
                }
                try cursorRecord.store(db)
                try db.execute(sql: "DELETE FROM ferry_refetch_seen WHERE scope = ?", arguments: [page.scope])
            }
            let refetching = cursorRecord.refetching
            let pending = try Outbox.pendingEdits(db)
            // A live page holding every change after where this scope stands moves it on, as its pull would,
            // unless a row in it has pending edits: those keep their columns over the server's until the push
            // is answered, and only a pull after that brings the server's row back whole.
            let continuesCursor =
                !movesCursor && !page.reset && !refetching && Self.covers(cursorRecord.cursor, page)
                && !page.changes.contains { pending[RowKey(table: $0.table, rowID: $0.rowID)] != nil }
            let context = PageContext(
                setAsideRows: try SetAsideRecord.anyHeld(db),
                recovering: refetching && cursorRecord.recovering)
            if context.recovering {
                (context.known, context.stamps) = try Self.knownVersions(of: page.changes, db)
            }
            if !page.changes.isEmpty {
                report.add(
                    try applyInRuns(
                        page.changes[...], sizes: [Self.groupSize, 1], scope: page.scope, refetching: refetching,
                        pending: pending, context: context, now: now, db))
            }
            if context.setAsideRows {
                // A retried row the page also brought is known at the page's version now.
                for (key, version, _) in context.versions { context.known[key] = max(context.known[key] ?? version, version) }
                report.recovered = try retrySetAside(scope: page.scope, refetching: refetching, pending: pending, context: context, now: now, db)
            }
            try Self.record(context, scope: page.scope, db)
            if refetching && !page.hasMore && movesCursor {
                if cursorRecord.recovering {
                    report.sentBack += try sendBackUnseen(scope: page.scope, db)
                    cursorRecord.recovering = false
                } else {
                    report.swept = try sweep(scope: page.scope, db)
                }
                cursorRecord.refetching = false
                try db.execute(sql: "DELETE FROM ferry_refetch_seen WHERE scope = ?", arguments: [page.scope])
            }
            report.notices = try storeNotices(page, now: now, db)
            report.settledElsewhere = try SettledNotices.drop(page.settledNotices, scope: page.scope, db)
            if movesCursor || continuesCursor {
                report.movedCursor = true
                cursorRecord.cursor = page.cursor
                cursorRecord.previousCursor = nil
                cursorRecord.noticeCursor = page.noticeCursor ?? cursorRecord.noticeCursor
                try cursorRecord.store(db)
            }
            try receiveStamps(of: page, db)
            return report
        }
    }

    /// Whether a live page holds every change after `cursor`: it continues
    /// from it, or from a cursor at or before it and ends at or after it
    /// (``CursorOrder``).
    static func covers(_ cursor: String?, _ page: PullPage) -> Bool {
        CursorOrder.covers(cursor, after: page.after, end: page.cursor)
    }

    // MARK: - Notices and stamps

    /// Stores the page's conflict notices with the notice cursor, in the
    /// page's transaction: each lands once however often the page is pulled.
    private func storeNotices(_ page: PullPage, now: Int64, _ db: Database) throws -> Int {
        var stored = 0
        for notice in page.notices where database.layouts[notice.table] != nil {
            let held = try
                !ConflictRecord
                .filter(ConflictRecord.Columns.noticeID == notice.id && ConflictRecord.Columns.scope == page.scope).isEmpty(db)
            if held { continue }
            var record = try ConflictRecord(
                notice.conflict, table: notice.table, rowID: notice.rowID, scope: page.scope, mutationID: 0,
                serverVersion: notice.row?.version, serverRow: try notice.row.map(ServerRowRestore.encode), rowValues: nil,
                noticeID: notice.id, overriddenBy: notice.overriddenBy, detectedAt: now)
            try record.insert(db)
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

    /// Applies `changes` in one savepoint; when that fails, in runs of the
    /// next of `sizes` (largest first, ending with 1), each in a savepoint
    /// and tried the same way; a row that fails alone is set aside.
    private func applyInRuns(
        _ changes: ArraySlice<RowChange>, sizes: ArraySlice<Int>, scope: String, refetching: Bool,
        pending: [RowKey: RowRebase.Pending], context: PageContext, now: Int64, _ db: Database
    ) throws -> Report {
        do {
            return try applyTogether(changes, scope: scope, refetching: refetching, pending: pending, context: context, db)
        } catch  where NoSpace.means(error) {
            // Not a bad row: the page cannot be stored at all until space returns.
            throw error
        } catch {
            let smaller = sizes.drop { $0 >= changes.count }
            guard let size = smaller.first else {
                // A single row (the sizes end with 1).
                guard let change = changes.first else { throw error }
                let row = SetAsideRow(
                    table: change.table, rowID: change.rowID, scope: scope, version: change.version,
                    reason: String(describing: error))
                try setAside(change, row, now: now, refetching: refetching, db)
                context.setAsideRows = true
                return Report(setAside: [row])
            }
            var report = Report()
            for start in stride(from: changes.startIndex, to: changes.endIndex, by: size) {
                report.add(
                    try applyInRuns(
                        changes[start..<min(start + size, changes.endIndex)], sizes: smaller.dropFirst(), scope: scope,
                        refetching: refetching, pending: pending, context: context, now: now, db))
            }
            return report
        }
    }

    /// Applies `changes` in one savepoint, all of them or none (the error
    /// is thrown); what they record joins the page's once they commit.
    private func applyTogether(
        _ changes: some Collection<RowChange>, scope: String, refetching: Bool,
        pending: [RowKey: RowRebase.Pending], context: PageContext, _ db: Database
    ) throws -> Report {
        var report = Report()
        var applied = Applied()
        try db.inSavepoint {
            if !context.recovering {
                applied.held = try advanceVersions(of: changes, db)
            }
            for change in changes {
                try applyRow(
                    change, scope: scope, refetching: refetching, pending: pending, context: context,
                    into: &report, applied: &applied, db)
            }
            try applied.batch.flush(context.upserts, db)
            return .commit
        }
        applied.commit(to: context)
        return report
    }

    private func applyRow(
        _ change: RowChange, scope: String, refetching: Bool, pending: [RowKey: RowRebase.Pending],
        context: PageContext, into report: inout Report, applied: inout Applied, _ db: Database
    ) throws {
        guard let layout = database.layouts[change.table] else {
            report.ignored += 1
            return
        }
        let rowKey = RowKey(table: change.table, rowID: change.rowID)
        if context.recovering {
            // Written in order: the batch first.
            try applied.batch.flush(context.upserts, db)
        }
        if context.recovering,
            try recover(
                change, layout: layout, pending: pending[rowKey] ?? .none, context: context, applied: &applied,
                sentBack: &report.sentBack, db)
        {
            applied.seen.append(rowKey)
            return
        }
        // An initial sync has nothing pending and knows no row: no lookups then.
        let known = context.recovering ? context.known : applied.held ?? [:]
        let plan = RowRebase.plan(
            change, pending: pending.isEmpty ? .none : pending[rowKey] ?? .none,
            knownVersion: known.isEmpty ? nil : known[rowKey],
            columns: layout.columns, primaryKey: layout.primaryKey)
        var recordVersion = true
        switch plan {
        case .keep(let record):
            recordVersion = record
            report.kept += 1
        case .delete:
            try applied.batch.flush(context.upserts, db)
            let table = SQLText.identifier(layout.table.name), key = SQLText.identifier(layout.primaryKey)
            try db.cachedStatement(sql: "DELETE FROM \(table) WHERE \(key) = ?").execute(arguments: [change.rowID])
            // Its attachments go with it here; the deleting device sent their deletes too.
            if layout.table.name != AttachmentRecord.databaseTableName {
                try AttachmentOwners.remove(table: layout.table.name, rowID: change.rowID, db)
            }
            report.deleted += 1
        case .write(let values):
            // Written with the rows around it of the same columns.
            try applied.batch.add(
                table: layout.table.name, primaryKey: layout.primaryKey, rowID: change.rowID, values: values,
                columns: layout.columns, context.upserts, db)
            report.written += 1
        }
        if recordVersion && context.recovering {
            applied.versions.append((rowKey, change.version, change.hlc?.rawValue))
        } else if recordVersion, let held = applied.held {
            // Recorded already (``advanceVersions(of:_:)``); the row's next version in the savepoint meets this one.
            applied.held?[rowKey] = max(held[rowKey] ?? change.version, change.version)
        }
        if refetching {
            applied.seen.append(rowKey)
        }
        if context.setAsideRows {
            try db.cachedStatement(sql: "DELETE FROM ferry_set_aside WHERE tbl = ? AND row_id = ? AND version <= ?")
                .execute(arguments: [change.table, change.rowID, change.version])
        }
    }

    // MARK: - Versions

    /// Records the versions (and stamps) of a savepoint's rows before they
    /// are written, in one statement per hundred rows that records each
    /// only where it is at least the version the device holds: in place of
    /// a read of what the device holds and a write of the new versions
    /// after. Returns `nil` when every row was recorded (none is older
    /// than what the device holds), the usual case.
    ///
    /// Otherwise that statement is undone, and the versions the device
    /// holds of the rows are read and returned, to leave the older rows as
    /// they are (``RowRebase``; the applier moves them on past each row it
    /// applies, so a row twice in the savepoint meets the first one's
    /// version); then every version is recorded where it is newer. (Read
    /// after the statement, a row twice would meet the second's version,
    /// and a pulled row may carry only some columns: the first's would be
    /// lost.)
    ///
    /// In the savepoint, so a row that fails to write (and is set aside)
    /// records no version. A recovering refetch records after the rows
    /// instead, with the device's own stamps.
    private func advanceVersions(of changes: some Collection<RowChange>, _ db: Database) throws -> [RowKey: Int64]? {
        var versions: [(RowKey, Int64, Int64?)] = []
        versions.reserveCapacity(changes.count)
        for change in changes where database.layouts[change.table] != nil {
            versions.append((RowKey(table: change.table, rowID: change.rowID), change.version, change.hlc?.rawValue))
        }
        var everyRow = false
        try db.inSavepoint {
            everyRow = try KnownVersions.advance(versions, db) == versions.count
            return everyRow ? .commit : .rollback
        }
        guard !everyRow else { return nil }
        let held = try Self.knownVersions(of: changes, db).versions
        for chunk in Self.chunks(versions) {
            try KnownVersions.remember(chunk, db)
        }
        return held
    }

    /// The versions the device knows of `changes`' rows and their edit
    /// stamps, read in one statement per table and chunk: a recovering
    /// page's, or a savepoint's when one of its rows is older.
    private static func knownVersions(
        of changes: some Collection<RowChange>, _ db: Database
    ) throws -> (versions: [RowKey: Int64], stamps: [RowKey: Int64]) {
        var known: [RowKey: Int64] = [:]
        var stamps: [RowKey: Int64] = [:]
        var byTable: [String: [String]] = [:]
        for change in changes { byTable[change.table, default: []].append(change.rowID) }
        for (table, rows) in byTable {
            for chunk in chunks(rows) {
                for (rowID, version, stamp) in try KnownVersions.fetch(table: table, rowIDs: chunk, db) {
                    let key = RowKey(table: table, rowID: rowID)
                    known[key] = version
                    if let stamp { stamps[key] = stamp }
                }
            }
        }
        return (known, stamps)
    }

    /// Writes the versions and refetched rows the page's applied rows record.
    private static func record(_ context: PageContext, scope: String, _ db: Database) throws {
        for chunk in chunks(context.versions) {
            try KnownVersions.remember(chunk, db)
        }
        for chunk in chunks(context.seen) {
            let tuples = SQLText.parameters(rows: chunk.count, width: 3)
            var arguments: [DatabaseValue] = []
            for key in chunk {
                arguments += [scope.databaseValue, key.table.databaseValue, key.rowID.databaseValue]
            }
            try db.cachedStatement(sql: "INSERT OR IGNORE INTO ferry_refetch_seen(scope, tbl, row_id) VALUES \(tuples)")
                .execute(values: arguments)
        }
    }

    /// Runs of at most 200 elements: at most 800 bound values per
    /// statement (four per version), inside the 999 of SQLite before 3.32,
    /// and a handful of statement shapes to cache.
    private static func chunks<T>(_ elements: [T]) -> [ArraySlice<T>] {
        stride(from: 0, to: elements.count, by: 200).map { elements[$0..<min($0 + 200, elements.count)] }
    }

    // MARK: - Rows set aside

    private func setAside(_ change: RowChange, _ row: SetAsideRow, now: Int64, refetching: Bool, _ db: Database) throws {
        let held = try SetAsideRecord.fetchOne(db, key: ["tbl": change.table, "row_id": change.rowID])
        if held.map({ $0.version <= change.version }) ?? true {
            try SetAsideRecord(
                table: change.table, rowID: change.rowID, scope: row.scope, version: change.version,
                deleted: change.deleted, rowValues: ColumnValueJSON.encodeRow(change.values),
                reason: row.reason, setAsideAt: now
            ).save(db)
        }
        if refetching {
            // Seen, though not applied: the sweep must not delete the local row.
            try db.execute(
                sql: "INSERT OR IGNORE INTO ferry_refetch_seen(scope, tbl, row_id) VALUES (?, ?, ?)",
                arguments: [row.scope, change.table, change.rowID])
        }
    }

    private func retrySetAside(
        scope: String, refetching: Bool, pending: [RowKey: RowRebase.Pending],
        context: PageContext, now: Int64, _ db: Database
    ) throws -> Int {
        let held = try SetAsideRecord.filter(SetAsideRecord.Columns.scope == scope)
            .order(SetAsideRecord.Columns.setAsideAt).fetchAll(db)
        var recovered = 0
        for var record in held {
            do {
                _ = try applyTogether(
                    [try record.change()], scope: scope, refetching: refetching, pending: pending,
                    context: context, db)
                recovered += 1
            } catch  where NoSpace.means(error) {
                throw error
            } catch {
                record.reason = String(describing: error)
                try record.update(db, columns: [SetAsideRecord.Columns.reason])
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
            guard let (condition, arguments) = scopeCondition(layout, scope: scope) else { continue }
            let table = SQLText.identifier(layout.table.name)
            let key = SQLText.identifier(layout.primaryKey)
            try db.execute(
                sql: """
                    DELETE FROM \(table) WHERE \(condition)
                    AND \(key) NOT IN (SELECT row_id FROM ferry_refetch_seen WHERE scope = ? AND tbl = ?)
                    AND \(key) NOT IN (
                        SELECT row_id FROM \(OutboxRecord.pendingEntries) WHERE \(OutboxRecord.State.pending.condition) AND tbl = ? AND op <> ?)
                    """,
                arguments: StatementArguments(
                    arguments + [
                        scope.databaseValue, layout.table.name.databaseValue,
                        layout.table.name.databaseValue,
                        OutboxEntry.Operation.delete.rawValue.databaseValue,
                    ]))
            removed += db.changesCount
            try KnownVersions.forgetMissing(from: layout.table.name, key: key, db)
        }
        return removed
    }
}

extension PageApplier {
    /// The SQL condition (and its arguments) that picks a table's local rows
    /// of `scope`; `nil` when the table has none there.
    func scopeCondition(_ layout: TableLayout, scope: String) -> (String, [DatabaseValue])? {
        switch layout.table.scope {
        case .user:
            return scope == userScope ? ("1", []) : nil
        case .column(let column):
            return (
                "(\(SQLText.identifier(column)) = ? OR (\(SQLText.identifier(column)) IS NULL AND ?))",
                [scope.databaseValue, (scope == userScope).databaseValue]
            )
        }
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
        sentBack += other.sentBack
        notices += other.notices
        settledElsewhere += other.settledElsewhere
    }
}
