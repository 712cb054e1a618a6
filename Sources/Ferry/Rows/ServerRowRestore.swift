import FerryProtocol
import FerrySQLite
import Foundation
import GRDB

/// Makes a local row what the server holds, as a pulled row would: columns
/// with pending local edits are kept, a row known at a newer version is left
/// alone, and the row's known version moves up. Unlike a pull, it also
/// clears what the server does not hold: a nullable column without a
/// default that the server row lacks (one only a refused edit ever wrote)
/// becomes NULL. Used when a rejected edit is discarded and when a row is
/// read back with `GET /v1/rows`. Callers run it with capture off.
enum ServerRowRestore {
    /// How a server row (or its absence) is kept in Ferry's tables.
    static func encode(_ row: ServerRow?) throws -> String {
        guard let row else { return absent }
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return String(decoding: try encoder.encode(row), as: UTF8.self)
    }

    /// `nil`: nothing kept; `.some(nil)`: the server has no such row.
    static func decode(_ text: String?) throws -> ServerRow?? {
        guard let text else { return nil }
        if text == absent { return .some(nil) }
        return .some(try JSONDecoder().decode(ServerRow.self, from: Data(text.utf8)))
    }

    static let absent = "absent"

    /// Restores the row unless this database refuses it (a constraint, a
    /// STRICT type): then nothing changes and it returns `false`, so one
    /// unstorable row never blocks a discard or a sync.
    static func restoreIfStorable(_ row: ServerRow?, table: String, rowID: String, layout: TableLayout, _ db: Database) throws -> Bool {
        do {
            try db.inSavepoint {
                try restore(row, table: table, rowID: rowID, layout: layout, db)
                return .commit
            }
            return true
        } catch is DatabaseError {
            return false
        }
    }

    /// Whether restoring `row` would leave the local row as it is because
    /// the device knows a newer version of it.
    static func isOlderThanKnown(_ row: ServerRow?, table: String, rowID: String, _ db: Database) throws -> Bool {
        guard let row else { return false }
        return (try KnownVersions.version(table: table, rowID: rowID, db) ?? 0) > row.version
    }

    /// Sets to NULL the nullable, default-less local columns the server row
    /// does not hold, unless a pending edit covers them.
    private static func clearAbsent(
        from row: ServerRow, pending: RowRebase.Pending, layout: TableLayout, rowID: String,
        _ db: Database
    ) throws {
        let protected: Set<String>
        switch pending {
        case .none: protected = []
        case .columns(let columns): protected = columns
        case .allColumns, .deleted: return
        }
        let nullable = try String.fetchAll(
            db,
            sql: """
                SELECT name FROM pragma_table_info(?) WHERE "notnull" = 0 AND dflt_value IS NULL AND pk = 0
                """, arguments: [layout.table.name])
        let absent = nullable.filter { column in
            column != layout.primaryKey && layout.columns.contains(column) && row.values[column] == nil && !protected.contains(column)
        }
        guard !absent.isEmpty else { return }
        let assignments = absent.map { "\(SQLText.identifier($0)) = NULL" }.joined(separator: ", ")
        try db.execute(
            sql: "UPDATE \(SQLText.identifier(layout.table.name)) SET \(assignments) WHERE \(SQLText.identifier(layout.primaryKey)) = ?",
            arguments: [rowID])
    }

    static func restore(_ row: ServerRow?, table: String, rowID: String, layout: TableLayout, _ db: Database) throws {
        let key = RowKey(table: table, rowID: rowID)
        let pending = try Outbox.pendingEdits(db, of: key)[key] ?? .none
        let known = try KnownVersions.version(table: table, rowID: rowID, db)
        let change = RowChange(
            table: table, rowID: rowID, version: row?.version ?? known ?? 0, deleted: row?.deleted ?? true, values: row?.values ?? [:]
        )
        let name = SQLText.identifier(layout.table.name)
        let primaryKey = SQLText.identifier(layout.primaryKey)
        switch RowRebase.plan(change, pending: pending, knownVersion: known, columns: layout.columns, primaryKey: layout.primaryKey) {
        case .keep:
            return
        case .delete:
            try db.execute(sql: "DELETE FROM \(name) WHERE \(primaryKey) = ?", arguments: [rowID])
        case .write(let values):
            let columns = values.keys.sorted()
            let names = ([layout.primaryKey] + columns).map(SQLText.identifier).joined(separator: ", ")
            let marks = Array(repeating: "?", count: columns.count + 1).joined(separator: ", ")
            let update =
                columns.isEmpty
                ? "DO NOTHING"
                : "DO UPDATE SET " + columns.map { "\(SQLText.identifier($0)) = excluded.\(SQLText.identifier($0))" }.joined(separator: ", ")
            try db.execute(
                sql: "INSERT INTO \(name) (\(names)) VALUES (\(marks)) ON CONFLICT(\(primaryKey)) \(update)",
                arguments: StatementArguments([rowID.databaseValue] + columns.map { values[$0]!.databaseValue })
            )
            if let row {
                try clearAbsent(from: row, pending: pending, layout: layout, rowID: rowID, db)
            }
        }
        if let row {
            try KnownVersions.remember(row.version, table: table, rowID: rowID, db)
        } else if pending == .none {
            try KnownVersions.forget(table: table, rowID: rowID, db)
        }
    }
}
