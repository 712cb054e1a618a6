import Foundation
import GRDB

/// A synced row, by table and primary key.
struct RowKey: Hashable, Sendable {
    var table: String
    var rowID: String
}

extension Outbox {
    /// Every row with pending local edits (or only `row`'s), and what they
    /// cover: what a pulled change, a conflict reply or a restored row must
    /// leave alone (see ``RowRebase``).
    ///
    /// ```swift
    /// let pending = try Outbox.pendingEdits(db, of: RowKey(table: "note", rowID: "n1"))
    /// ```
    static func pendingEdits(_ db: Database, of row: RowKey? = nil) throws -> [RowKey: RowRebase.Pending] {
        var entries: [RowKey: [(operation: OutboxEntry.Operation, columns: Set<String>?)]] = [:]
        let rows = try Row.fetchCursor(
            db.cachedStatement(
                sql: """
                    SELECT tbl, row_id, op, columns FROM \(OutboxRecord.pendingEntries)
                    WHERE \(OutboxRecord.State.pending.condition) AND (? IS NULL OR (tbl = ? AND row_id = ?)) ORDER BY seq
                    """), arguments: [row?.table, row?.table, row?.rowID])
        let decoder = JSONDecoder()
        while let row = try rows.next() {
            let columns: Set<String>? = try (row["columns"] as String?).map {
                Set(try decoder.decode([String].self, from: Data($0.utf8)))
            }
            let operation = OutboxEntry.Operation(rawValue: row["op"]) ?? .update
            entries[RowKey(table: row["tbl"], rowID: row["row_id"]), default: []].append((operation, columns))
        }
        return entries.mapValues(RowRebase.pending)
    }
}
