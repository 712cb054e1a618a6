import FerryProtocol
import FerrySQLite
import Foundation
import GRDB

/// Records a push reply in one transaction: settles the outbox entries,
/// stores the conflicts the server reported, and sets rejected mutations
/// aside.
struct PushRecorder {
    struct Report: Sendable, Equatable {
        var acknowledged = 0
        var conflicts = 0
        var rejected = 0
        /// The server has applied more mutations for this client than it
        /// ever made: the database was restored from an older copy. The
        /// batch's results were recorded (replays the server compared).
        var restoredFromBackup = false
        /// Nothing is left to push: no outbox entry pending, no settlement
        /// unsent. A push right after would take an empty batch.
        var drained = false
        /// Ids handed out after the batch was taken (a batch taken ahead,
        /// ``PushAhead``) were forgotten: the reply was not a plain
        /// acknowledgement, and that batch is to be taken again.
        var forgotLaterIDs = false
        /// Scopes whose cursor the reply moved over the push's own rows
        /// (``PushResponse/covered``), with the cursor each holds now.
        var movedCursors: [String: String] = [:]
    }

    let database: FerryDatabase
    /// The scope of mutations whose row names none.
    let userScope: String

    /// Records a reply without blocking the caller, in one write transaction.
    /// `assignedUpTo` is the highest mutation id handed out when the batch
    /// was taken (``TakenBatch/assignedUpTo``).
    func record(_ response: PushResponse, for batch: [PendingMutation], assignedUpTo: Int64) async throws -> Report {
        let now = database.wallClock.nowMilliseconds()
        let recorder = self
        return try await database.writeWithoutCapture { db in
            try recorder.record(response, for: batch, assignedUpTo: assignedUpTo, now: now, db)
        }
    }

    private func record(
        _ response: PushResponse, for batch: [PendingMutation], assignedUpTo: Int64, now: Int64, _ db: Database
    ) throws -> Report {
        do {
            var report = Report()
            if response.lastAppliedMutationID > assignedUpTo {
                report.restoredFromBackup = true
                // Ids handed out since (a batch taken ahead) were never sent: forgotten, so the renewal that
                // follows sees only what this copy sent, and renumbers those edits under its new id.
                report.forgotLaterIDs = try Self.forgetLaterIDs(assignedUpTo, db)
                // The batch itself was answered as replays the server compared with what it applied
                // (a differing one is refused, `clientIDReused`): settled as answered, below.
            }
            let acknowledgedBefore: Int64 = try FerryMeta.value(.lastAcknowledged, in: db) ?? 0
            if response.lastAppliedMutationID > acknowledgedBefore {
                try FerryMeta.setValue(response.lastAppliedMutationID, for: .lastAcknowledged, in: db)
            }
            let byID = Dictionary(batch.compactMap { m in m.mutationID.map { ($0, m) } }, uniquingKeysWith: { a, _ in a })
            // Plain acknowledgements settle together, in one statement.
            var acknowledged: [Int64] = []
            // A mutation applied as sent left the server's row as this device holds it: its next edit is based
            // on that version (a merged one brought other writers' values this device has not seen yet).
            var seen: [(RowKey, Int64, Int64?)] = []
            for result in response.results {
                guard let mutation = byID[result.mutationID] else { continue }
                switch result.status {
                case .applied, .merged:
                    acknowledged += mutation.entrySeqs
                    report.acknowledged += 1
                    if result.status == .applied, result.conflicts.isEmpty, let version = result.version {
                        seen.append((RowKey(table: mutation.table, rowID: mutation.rowID), version, mutation.hlc.rawValue))
                    }
                case .conflict:
                    try Outbox.settle(mutation.entrySeqs, state: .acknowledged, reason: nil, now: now, in: db)
                    report.acknowledged += 1
                    report.conflicts += try store(result, of: mutation, now: now, db)
                case .rejected:
                    try Outbox.settle(
                        mutation.entrySeqs, state: .rejected,
                        reason: result.reason ?? "rejected by the server", now: now, in: db)
                    try Self.keepRefusedValues(of: mutation, db)
                    // The server's row as it stays: discarding the edit restores it. A reply
                    // without a row (no such row, or a server that predates rows in replies)
                    // leaves the row to be read back with `GET /v1/rows` on discard.
                    if let row = result.row {
                        try OutboxRecord.all().filter(seqs: mutation.entrySeqs)
                            .updateAll(db, OutboxRecord.Columns.serverRow.set(to: try ServerRowRestore.encode(row)))
                    }
                    report.rejected += 1
                }
            }
            if !acknowledged.isEmpty {
                try Outbox.settle(acknowledged, state: .acknowledged, reason: nil, now: now, in: db)
            }
            for start in stride(from: 0, to: seen.count, by: 250) {
                try KnownVersions.remember(seen[start..<min(start + 250, seen.count)], db)
            }
            if !report.restoredFromBackup, !Self.keepsBatchAhead(response, assignedUpTo: assignedUpTo) {
                // A batch taken ahead froze its rows before this reply changed the outbox and the rows it
                // settles (a refused row's next edit goes whole; a lost update deletes its row, and a foreign
                // key may cascade): never sent, its ids are forgotten and its edits taken again, as they are now.
                report.forgotLaterIDs = try Self.forgetLaterIDs(assignedUpTo, db)
            }
            report.movedCursors = try Self.moveCursors(over: response.covered ?? [], db)
            report.drained = try Outbox.nothingToPush(db)
            return report
        }
    }

    /// Whether a reply leaves a batch taken ahead as it was frozen, so it
    /// may be sent before the reply is recorded (``PushAhead/sent``): every
    /// result applied or merged, and no more applied than this copy handed
    /// out when the batch was taken. Any other reply forgets the batch
    /// taken ahead when it is recorded: the two decisions are this one.
    static func keepsBatchAhead(_ response: PushResponse, assignedUpTo: Int64) -> Bool {
        response.lastAppliedMutationID <= assignedUpTo
            && response.results.allSatisfy { $0.status == .applied || $0.status == .merged }
    }

    /// Moves each scope's cursor over a range the reply says holds only
    /// this push's rows, each applied as sent, when the cursor lies in it:
    /// the device holds every change up to the range's end already, so the
    /// next pull does not download its own rows back. A scope never pulled
    /// moves when it held no row before the push: its first pull would
    /// bring the push's rows alone. A scope starting over (a refetch, a
    /// recovery) moves only with its own pages.
    private static func moveCursors(over covered: [PushResponse.CoveredScope], _ db: Database) throws -> [String: String] {
        var moved: [String: String] = [:]
        for range in covered {
            var record = try ScopeCursorRecord.find(range.scope, db)
            let neverPulled = record.cursor == nil && record.previousCursor == nil && range.emptyBefore == true
            guard !record.refetching, neverPulled || CursorOrder.covers(record.cursor, after: range.after, end: range.cursor)
            else { continue }
            record.cursor = range.cursor
            try record.store(db)
            moved[range.scope] = range.cursor
        }
        return moved
    }

    /// Forgets the ids handed out after `assignedUpTo`, if any were.
    private static func forgetLaterIDs(_ assignedUpTo: Int64, _ db: Database) throws -> Bool {
        let lastAssigned: Int64 = try FerryMeta.value(.lastMutationID, in: db) ?? 0
        guard lastAssigned > assignedUpTo else { return false }
        try Outbox.forgetHandedOut(after: assignedUpTo, in: db)
        return true
    }

    /// Sets a mutation aside that the server refused outright (a 4xx for it
    /// alone): it never reached the server's ledger.
    func refuse(_ mutation: PendingMutation, reason: String) async throws {
        let now = database.wallClock.nowMilliseconds()
        try await database.write { db in
            try Outbox.settle(mutation.entrySeqs, state: .rejected, reason: reason, now: now, in: db)
            try Self.keepRefusedValues(of: mutation, db)
        }
    }

    /// Keeps the values a refused mutation carried with its entries: a
    /// later pull may give the row other writers' values, and the refused
    /// edit must not vanish with them.
    private static func keepRefusedValues(of mutation: PendingMutation, _ db: Database) throws {
        let values = ColumnValueJSON.encodeRow(mutation.values.mapValues(ColumnValue.init))
        try OutboxRecord.all().filter(seqs: mutation.entrySeqs)
            .updateAll(db, OutboxRecord.Columns.refusedValues.set(to: values))
    }

    private func store(_ result: MutationResult, of mutation: PendingMutation, now: Int64, _ db: Database) throws -> Int {
        guard let layout = database.layouts[mutation.table] else { return 0 }
        let lostToDelete = result.conflicts.contains { $0.kind == .updateLostToDelete }
        let overrodeUpdate = result.conflicts.contains { $0.kind == .deleteOverrodeUpdate }
        var snapshot: String?
        if lostToDelete {
            let sql = "SELECT * FROM \(SQLText.identifier(layout.table.name)) WHERE \(SQLText.identifier(layout.primaryKey)) = ?"
            if let row = try Row.fetchOne(db, sql: sql, arguments: [mutation.rowID]) {
                var values: [String: ColumnValue] = [:]
                for column in layout.columns where column != layout.primaryKey {
                    values[column] = ColumnValue(row[column] as DatabaseValue)
                }
                snapshot = ColumnValueJSON.encodeRow(values)
            } else {
                snapshot = ColumnValueJSON.encodeRow(mutation.values.filter { $0.key != layout.primaryKey }.mapValues(ColumnValue.init))
            }
        }
        let scope = mutation.scope ?? userScope
        let serverRow = try result.row.map { try ServerRowRestore.encode($0) }
        for conflict in result.conflicts {
            var record = try ConflictRecord(
                conflict, table: mutation.table, rowID: mutation.rowID, scope: scope, mutationID: result.mutationID,
                serverVersion: result.version, serverRow: serverRow, rowValues: snapshot, noticeID: conflict.noticeID,
                overriddenBy: nil, detectedAt: now)
            try record.insert(db)
        }
        try adoptServerValues(result.conflicts, of: mutation, layout: layout, db)
        if lostToDelete || overrodeUpdate {
            // The device now knows of the delete: a re-creation is based on it.
            if let version = result.version {
                try KnownVersions.remember(version, table: mutation.table, rowID: mutation.rowID, db)
            } else {
                try KnownVersions.forget(table: mutation.table, rowID: mutation.rowID, db)
            }
        }
        if lostToDelete {
            let stillPending = try !OutboxRecord.all().filter(state: .pending)
                .filter(row: RowKey(table: mutation.table, rowID: mutation.rowID)).isEmpty(db)
            if !stillPending {
                // The delete won on the server; the row's values live on in the conflict.
                try db.execute(
                    sql: "DELETE FROM \(SQLText.identifier(layout.table.name)) WHERE \(SQLText.identifier(layout.primaryKey)) = ?",
                    arguments: [mutation.rowID])
            }
        }
        return result.conflicts.count
    }

    /// Where the server kept its value (or left it for the app), the local
    /// row takes it now, unless a later local edit covers the column: the row
    /// may not change again on the server, so no pull would bring it.
    private func adoptServerValues(_ conflicts: [Conflict], of mutation: PendingMutation, layout: TableLayout, _ db: Database) throws {
        let kept = conflicts.filter { $0.kind == .column && $0.resolution != .keptLocal }
        guard !kept.isEmpty else { return }
        let row = RowKey(table: mutation.table, rowID: mutation.rowID)
        let pending = try Outbox.pendingEdits(db, of: row)[row] ?? .none
        let table = SQLText.identifier(layout.table.name)
        let key = SQLText.identifier(layout.primaryKey)
        for conflict in kept {
            guard let column = conflict.column, layout.columns.contains(column), column != layout.primaryKey else { continue }
            switch pending {
            case .allColumns, .deleted: continue
            case .columns(let columns) where columns.contains(column): continue
            default: break
            }
            try db.execute(
                sql: "UPDATE \(table) SET \(SQLText.identifier(column)) = ? WHERE \(key) = ?",
                arguments: [(conflict.server ?? .null).databaseValue, mutation.rowID])
        }
    }
}
