import FerryProtocol
import FerrySQLite
import GRDB
import GRDBSQLite

/// Rows of one table and column set waiting to be written together, in
/// multi-row upserts: a page's rows mostly share both, and one statement
/// of a hundred rows costs a fraction of a hundred statements (GRDB's
/// bookkeeping and SQLite's reset, bind and step, each time).
///
/// Rows are written in the order they were added; a row added twice is
/// written twice, the later values winning, as separate statements would.
/// The page applier flushes the batch before anything else it writes (a
/// delete, a recovered row) and at the end of each savepoint, so a failing
/// row fails its group, which is then applied row by row.
///
/// SQLite checks a foreign key at the end of each statement: a row that
/// refers to one later in the same statement applies with it, where row
/// by row it would be set aside until that row came (and retried after
/// the page, ``PageApplier``).
///
/// ```swift
/// var batch = UpsertBatch()
/// try batch.add(table: "note", primaryKey: "id", rowID: id, values: ["title": .text("Hi")], columns: ["title"], statements, db)
/// try batch.flush(statements, db)
/// ```
struct UpsertBatch {
    /// The table and the columns a batch's rows write, after the primary key.
    struct Key: Hashable {
        var table: String
        var primaryKey: String
        var columns: [String]
    }

    /// The upsert statements of a page's transaction, by key and row count.
    final class Statements {
        private var prepared: [Shape: Statement] = [:]
        private var variableLimit: Int?

        struct Shape: Hashable {
            var key: Key
            var rows: Int
        }

        /// The statement writing `rows` rows of `key`.
        func statement(_ key: Key, rows: Int, _ db: Database) throws -> Statement {
            let shape = Shape(key: key, rows: rows)
            if let statement = prepared[shape] { return statement }
            let statement = try db.cachedStatement(sql: UpsertBatch.sql(key, rows: rows))
            prepared[shape] = statement
            return statement
        }

        /// Drops a statement that failed: GRDB drops it from its cache too,
        /// and prepares a new one the next time.
        func forget(_ key: Key, rows: Int) {
            prepared[Shape(key: key, rows: rows)] = nil
        }

        /// The most rows of `width` values one statement binds on this connection.
        func rowsPerStatement(width: Int, _ db: Database) -> Int {
            let limit = variableLimit ?? Int(sqlite3_limit(db.sqliteConnection, SQLITE_LIMIT_VARIABLE_NUMBER, -1))
            variableLimit = limit
            return max(1, min(UpsertBatch.sizes[0], limit / width))
        }
    }

    /// The row counts of the statements a batch is written in, largest
    /// first: a handful of statement shapes per column set (those of every
    /// multi-row write, `Database.rowsPerStatement`).
    static let sizes = Database.rowsPerStatement

    private(set) var key: Key?
    private var values: [DatabaseValue] = []
    private(set) var rows = 0

    /// Adds a row of `table`: its primary key `rowID`, and its value for
    /// each column of `columns` (the table's, in order) that `values` holds.
    /// Writes the rows held first when they are of another table or hold
    /// other columns.
    mutating func add(
        table: String, primaryKey: String, rowID: String, values row: [String: ColumnValue], columns: [String],
        _ statements: Statements, _ db: Database
    ) throws {
        let start = values.count
        values.append(rowID.databaseValue)
        var present: [String] = []
        present.reserveCapacity(row.count)
        for column in columns {
            if let value = row[column] {
                present.append(column)
                values.append(value.databaseValue)
            }
        }
        let key = Key(table: table, primaryKey: primaryKey, columns: present)
        if key != self.key {
            let added = Array(values[start...])
            values.removeSubrange(start...)
            try flush(statements, db)
            self.key = key
            values = added
        }
        rows += 1
    }

    /// Writes the rows held.
    mutating func flush(_ statements: Statements, _ db: Database) throws {
        guard let key, rows > 0 else { return }
        defer {
            values.removeAll(keepingCapacity: true)
            rows = 0
        }
        let width = key.columns.count + 1
        let most = statements.rowsPerStatement(width: width, db)
        var written = 0
        while written < rows {
            let left = rows - written
            let count = Self.sizes.first { $0 <= min(left, most) } ?? 1
            let statement = try statements.statement(key, rows: count, db)
            do {
                try statement.execute(values: values[(written * width)..<((written + count) * width)])
            } catch {
                statements.forget(key, rows: count)
                throw error
            }
            written += count
        }
    }

    /// `INSERT INTO t (key, columns…) VALUES (?, …), … ON CONFLICT(key) DO UPDATE SET …`.
    static func sql(_ key: Key, rows: Int) -> String {
        let table = SQLText.identifier(key.table), primaryKey = SQLText.identifier(key.primaryKey)
        let names = ([key.primaryKey] + key.columns).map(SQLText.identifier).joined(separator: ", ")
        let tuples = SQLText.parameters(rows: rows, width: key.columns.count + 1)
        let update =
            key.columns.isEmpty
            ? "DO NOTHING"
            : "DO UPDATE SET " + key.columns.map { "\(SQLText.identifier($0)) = excluded.\(SQLText.identifier($0))" }.joined(separator: ", ")
        return "INSERT INTO \(table) (\(names)) VALUES \(tuples) ON CONFLICT(\(primaryKey)) \(update)"
    }
}
