import FerrySQLite
import GRDB

/// The shape of a synced table as the database holds it: what the capture
/// triggers are generated from.
struct TableLayout: Sendable, Hashable {
    var table: SyncedTable
    /// The TEXT primary key column.
    var primaryKey: String
    /// Every column, in declaration order, primary key included.
    var columns: [String]

    /// Every column of one row by its key, in ``columns``' order.
    var selectRowSQL: String {
        let list = columns.map(SQLText.identifier).joined(separator: ", ")
        return "SELECT \(list) FROM \(SQLText.identifier(table.name)) WHERE \(SQLText.identifier(primaryKey)) = ?"
    }

    /// The columns other than the primary key: the ones an update can change.
    var valueColumns: [String] { columns.filter { $0 != primaryKey } }

    /// Reads the table's layout and checks it can be synced.
    static func read(_ table: SyncedTable, in db: Database) throws -> TableLayout {
        try read(table, reservedAllowed: false, in: db)
    }

    /// The layout of Ferry's own synced table of attachment metadata.
    static func attachments(in db: Database) throws -> TableLayout {
        try read(SyncedTable(AttachmentRecord.databaseTableName, scope: .column("scope")), reservedAllowed: true, in: db)
    }

    private static func read(_ table: SyncedTable, reservedAllowed: Bool, in db: Database) throws -> TableLayout {
        let name = table.name
        if !reservedAllowed && (name.lowercased().hasPrefix("ferry_") || name.lowercased().hasPrefix("sqlite_")) {
            throw FerryError(
                .invalidSyncedTable,
                "table `\(name)` cannot be synced: names starting with `ferry_` or `sqlite_` are reserved")
        }
        guard try db.tableExists(name) else {
            throw FerryError(
                .invalidSyncedTable,
                "synced table `\(name)` does not exist; create it in a migration before declaring it synced")
        }
        // table_xinfo lists generated columns too (hidden 2 or 3); they cannot be written, so they are not synced.
        let rows = try Row.fetchAll(db, sql: "SELECT name, type, pk, hidden, \"notnull\" FROM pragma_table_xinfo(?)", arguments: [name])
        let columns: [(name: String, type: String, pk: Int, notNull: Bool)] = rows.compactMap { row in
            let hidden: Int = row["hidden"]
            guard hidden == 0 else { return nil }
            return (row["name"], row["type"], row["pk"], row["notnull"])
        }
        let keyColumns = columns.filter { $0.pk > 0 }
        if keyColumns.isEmpty {
            throw FerryError(
                .invalidSyncedTable,
                "table `\(name)` has no primary key; synced tables need a TEXT primary key holding a UUID made on the device")
        }
        if keyColumns.count > 1 {
            let names = keyColumns.map { "`\($0.name)`" }.joined(separator: ", ")
            throw FerryError(
                .invalidSyncedTable,
                "table `\(name)` has a composite primary key (\(names)); synced tables need a single TEXT primary key holding a UUID")
        }
        let key = keyColumns[0]
        // Declared type must give TEXT affinity: contains CHAR, CLOB or TEXT (sqlite.org/datatype3.html §3.1).
        let declared = key.type.uppercased()
        let isText = !declared.contains("INT") && (declared.contains("CHAR") || declared.contains("CLOB") || declared.contains("TEXT"))
        if !isText {
            let shown = key.type.isEmpty ? "untyped" : key.type.uppercased()
            throw FerryError(
                .invalidSyncedTable,
                "table `\(name)` has \(shown) primary key `\(key.name)`; synced tables need a TEXT primary key holding a UUID")
        }
        // SQLite lets a rowid table's TEXT primary key hold NULL; WITHOUT ROWID tables never do.
        let withoutRowID =
            try Bool.fetchOne(
                db, sql: "SELECT wr FROM pragma_table_list WHERE name = ? AND schema = 'main'",
                arguments: [name]) ?? false
        if !key.notNull && !withoutRowID {
            throw FerryError(
                .invalidSyncedTable,
                "table `\(name)` has a nullable primary key `\(key.name)`; declare it `TEXT PRIMARY KEY NOT NULL` (a row needs an id to sync)")
        }
        let names = columns.map(\.name)
        if case .column(let scopeColumn) = table.scope {
            guard names.contains(scopeColumn) else {
                throw FerryError(
                    .invalidSyncedTable,
                    "table `\(name)` takes its scope from column `\(scopeColumn)`, which it does not have; add the column or use `.user`")
            }
            if scopeColumn == key.name {
                throw FerryError(
                    .invalidSyncedTable,
                    "table `\(name)` cannot take its scope from its primary key `\(key.name)`; name the scope in its own column")
            }
        }
        return TableLayout(table: table, primaryKey: key.name, columns: names)
    }
}
