import FerryProtocol
import FerrySQLite
import GRDB

/// Refilling a server that lost history (ARCHITECTURE.md server semantic 6).
///
/// A page marked ``PullPage/lostHistory`` starts a *recovering* refetch of
/// its scope: the server was restored from a backup, wiped, or is another
/// server, so a row it does not send was not deleted, and a value it sends
/// may be older than the device's. While the refetch runs:
/// - a pulled row the device holds with other values and an edit stamp at
///   least as new as the server's is kept, and its differing columns are
///   queued to go back, based on the server's version; with an older or
///   unknown stamp they go back based on nothing, so the table's policy
///   decides each against the server's value and records what it discards;
/// - a column the server's row lacks and the device holds a value in goes
///   back whatever the stamps (the server has no value there to lose);
/// - a pending local edit is rebased on the server's version, or on none
///   when the server's row is newer than anything the device saw, so the
///   push surfaces a conflict instead of overwriting silently;
/// - anything else applies as usual.
///
/// When it ends, every local row of the scope the server did not send goes
/// back whole, instead of the sweep an ordinary reset ends with. The queued
/// rows are pushed in the same sync, merged under each table's policy, and
/// reach every other device from there.
extension PageApplier {
    /// The versions the device knows of the scope's rows came from the lost
    /// history and mean nothing in the server's new one. Rows deleted here
    /// are forgotten too: the store may hold them again (their delete was
    /// lost with it), and then they come back.
    func forgetVersions(of scope: String, _ db: Database) throws {
        for layout in database.layouts.values {
            guard let (condition, arguments) = scopeCondition(layout, scope: scope) else { continue }
            let table = SQLText.identifier(layout.table.name), key = SQLText.identifier(layout.primaryKey)
            try KnownVersions.clear(
                table: layout.table.name, rowIDs: "SELECT \(key) FROM \(table) WHERE \(condition)", arguments: StatementArguments(arguments), db)
            try KnownVersions.forgetMissing(from: layout.table.name, key: key, db)
        }
    }

    /// The server that lost history may have lost the bytes of this
    /// scope's attachments too: those this device holds whole go back to
    /// `localOnly`, so the next upload pass asks the server (`HEAD`) and
    /// sends what it lacks (a device that may only read the scope, and is
    /// refused, leaves them `uploaded`: a writer refills them).
    func recheckUploads(of scope: String, _ db: Database) throws {
        guard let layout = database.layouts[AttachmentRecord.databaseTableName],
            let (condition, arguments) = scopeCondition(layout, scope: scope)
        else { return }
        try db.execute(
            sql: """
                UPDATE ferry_attachment_files SET state = ?, transferred = 0, reason = ?
                WHERE state = ? AND id IN (SELECT id FROM ferry_attachments WHERE \(condition))
                """,
            arguments: StatementArguments(
                [
                    AttachmentFileRecord.State.localOnly.databaseValue,
                    AttachmentFileRecord.recheckReason.databaseValue,
                    AttachmentFileRecord.State.uploaded.databaseValue,
                ] + arguments))
    }

    /// Starts a recovering refetch of every followed scope at once: a push
    /// reply said the server applied less for this client than it had
    /// acknowledged, so it lost history, though the cursors may not show it
    /// (a device whose edits went out after its last pull). Returns whether
    /// it did (`serverLastApplied` below the highest acknowledged id).
    func startRecoveryIfHistoryLost(serverLastApplied: Int64, scopes: [String], _ db: Database) throws -> Bool {
        let acknowledged: Int64 = try FerryMeta.value(.lastAcknowledged, in: db) ?? 0
        guard lostServerHistory == .sendBack, serverLastApplied < acknowledged else { return false }
        for scope in scopes {
            var record = try ScopeCursorRecord.find(scope, db)
            record.recovering = true
            try record.save(db)
            try ScopeCursorRecord.startOver(scope, db)
            try forgetVersions(of: scope, db)
            try recheckUploads(of: scope, db)
        }
        try FerryMeta.setValue(serverLastApplied, for: .lastAcknowledged, in: db)
        try Outbox.forgetHandedOut(after: serverLastApplied, in: db)
        return true
    }

    /// Handles one pulled row of a recovering refetch; `true` when the
    /// device's newer copy was kept and queued to go back (the row is then
    /// applied no further). `sentBack` counts a row queued either way.
    func recover(
        _ change: RowChange, layout: TableLayout, pending: RowRebase.Pending, context: PageContext,
        applied: inout Applied, sentBack: inout Int, _ db: Database
    ) throws -> Bool {
        guard !change.deleted else { return false }
        let key = RowKey(table: change.table, rowID: change.rowID)
        let local = context.stamps[key] ?? 0
        let server = change.hlc?.rawValue ?? 0
        // The device's copy is at least as new as the server's when the
        // newest edit the server's row holds is one the device had seen.
        let newer = local > 0 && local >= server
        let protected: Set<String>
        switch pending {
        case .none: protected = []
        case .columns(let columns): protected = columns
        case .allColumns, .deleted: protected = Set(layout.valueColumns)
        }
        if pending != .none {
            try db.execute(
                sql: """
                    UPDATE \(OutboxRecord.pendingEntries) SET base_version = ?
                    WHERE tbl = ? AND row_id = ? AND \(OutboxRecord.State.pending.condition)
                    AND mutation_id IS NULL AND base_version IS NOT NULL
                    """,
                arguments: [newer ? change.version : 0, change.table, change.rowID])
        }
        let table = SQLText.identifier(layout.table.name), primaryKey = SQLText.identifier(layout.primaryKey)
        guard let row = try Row.fetchOne(db, sql: "SELECT * FROM \(table) WHERE \(primaryKey) = ?", arguments: [change.rowID])
        else { return false }
        // Columns with pending edits go out with them.
        var differing: [String] = []
        var lacking: [String] = []
        for column in layout.valueColumns where !protected.contains(column) {
            let mine: DatabaseValue = row[column]
            if let theirs = change.values[column] {
                if mine != theirs.databaseValue { differing.append(column) }
            } else if !mine.isNull {
                lacking.append(column)
            }
        }
        guard !differing.isEmpty || !lacking.isEmpty else { return false }
        let scope: DatabaseValue
        switch layout.table.scope {
        case .user: scope = .null
        case .column(let column): scope = row[column]
        }
        func queue(_ columns: [String], base: Int64, stamp: Int64) throws {
            guard !columns.isEmpty else { return }
            try db.execute(
                sql: """
                    INSERT INTO ferry_outbox(tbl, row_id, op, columns, scope, base_version, hlc)
                    VALUES (?, ?, 'update', ?, ?, ?, coalesce(nullif(?, 0), ferry_hlc()))
                    """,
                arguments: [
                    change.table, change.rowID, "[" + columns.map(SQLText.jsonString).joined(separator: ",") + "]",
                    scope, base, stamp,
                ])
        }
        if newer {
            // Newer here: the differing values go back on the server's version, as edits of it.
            try queue(differing + lacking, base: change.version, stamp: local)
        } else {
            // Not known to be newer: based on nothing, so the table's policy
            // decides each differing column against the server's value and
            // the one discarded is recorded. (Queued first: a later entry on
            // a newer base starts a mutation of its own.) The stamp is the
            // device's own, or the oldest there is when it has none.
            try queue(differing, base: 0, stamp: max(local, 1))
            try queue(lacking, base: change.version, stamp: max(local, server))
        }
        sentBack += 1
        applied.versions.append((key, change.version, local))
        // The row stays as it is here until the server answers for it.
        return true
    }

    /// Ends a recovering refetch: every local row of `scope` the server did
    /// not send is queued to go back whole. Returns how many.
    func sendBackUnseen(scope: String, _ db: Database) throws -> Int {
        var sent = 0
        let pending = OutboxRecord.State.pending.condition
        for layout in database.layouts.values.sorted(by: { $0.table.name < $1.table.name }) {
            guard let (condition, arguments) = scopeCondition(layout, scope: scope) else { continue }
            let name = layout.table.name.databaseValue
            let table = SQLText.identifier(layout.table.name), key = SQLText.identifier(layout.primaryKey)
            let rowScope =
                switch layout.table.scope {
                case .user: "NULL"
                case .column(let column): SQLText.identifier(column)
                }
            let unseen = "\(condition) AND \(key) NOT IN (SELECT row_id FROM ferry_refetch_seen WHERE scope = ? AND tbl = ?)"
            let unseenArguments = arguments + [scope.databaseValue, name]
            sent +=
                try Int.fetchOne(
                    db, sql: "SELECT count(*) FROM \(table) WHERE \(unseen)",
                    arguments: StatementArguments(unseenArguments)) ?? 0
            // A pending edit of some columns would make a partial row there: all of it goes.
            try db.execute(
                sql: """
                    UPDATE \(OutboxRecord.pendingEntries) SET columns = NULL, base_version = NULL
                    WHERE \(pending) AND mutation_id IS NULL AND tbl = ? AND op <> 'delete'
                    AND row_id IN (SELECT \(key) FROM \(table) WHERE \(unseen))
                    """, arguments: StatementArguments([name] + unseenArguments))
            // The others go as inserts, stamped with the edit the device last knew of.
            try db.execute(
                sql: """
                    INSERT INTO ferry_outbox(tbl, row_id, op, columns, scope, base_version, hlc)
                    SELECT ?, \(key), 'insert', NULL, \(rowScope), NULL,
                           \(KnownVersions.stampSQL(table: "?", rowID: key, orElse: "ferry_hlc()"))
                    FROM \(table) WHERE \(unseen)
                    AND \(key) NOT IN (SELECT row_id FROM \(OutboxRecord.pendingEntries) WHERE \(pending) AND mutation_id IS NULL AND tbl = ?)
                    """, arguments: StatementArguments([name, name] + unseenArguments + [name]))
            try KnownVersions.forget(
                table: layout.table.name, rowIDs: "SELECT \(key) FROM \(table) WHERE \(unseen)", arguments: StatementArguments(unseenArguments), db)
        }
        // Pending edits of rows the server did not send (deletes of rows gone
        // here too, among them) were based on versions it never issued.
        try db.execute(
            sql: """
                UPDATE \(OutboxRecord.pendingEntries) SET base_version = NULL
                WHERE \(pending) AND mutation_id IS NULL AND base_version IS NOT NULL AND coalesce(scope, ?) = ?
                AND NOT EXISTS (SELECT 1 FROM ferry_refetch_seen s WHERE s.scope = ? AND s.tbl = ferry_outbox.tbl AND s.row_id = ferry_outbox.row_id)
                """, arguments: [userScope, scope, scope])
        return sent
    }
}
