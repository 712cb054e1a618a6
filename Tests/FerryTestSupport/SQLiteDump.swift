import GRDB

/// Every row of every table of a SQLite database, as sorted lines: equal
/// dumps mean nothing stored changed.
public enum SQLiteDump {
    public static func lines(_ reader: any DatabaseReader) throws -> [String] {
        try reader.read { db in
            var lines: [String] = []
            for table in try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name") {
                lines += try Row.fetchAll(db, sql: "SELECT * FROM \(table.quotedDatabaseIdentifier)").map { "\(table): \($0)" }.sorted()
            }
            return lines
        }
    }
}
