import GRDB
import GRDBSQLite

extension Database {
    /// The row counts of the statements ``execute(rows:width:sql:suffix:bind:)``
    /// writes in, largest first: a handful of statement shapes per table.
    @usableFromInline package static let rowsPerStatement = [100, 25, 5, 1]

    /// Writes `rows` in multi-row statements of up to a hundred rows (fewer
    /// when SQLite's parameter limit says so), each value bound straight
    /// through SQLite (``Statement/bind(_:)``): one statement of a hundred
    /// rows costs a fraction of a hundred one-row statements (GRDB's
    /// bookkeeping and argument boxing, and SQLite's reset, bind and step,
    /// each time).
    ///
    /// The rows are written in their order, so a row given twice ends as
    /// the later one, as with one statement per row. An error stops the
    /// writing: the failing statement's rows are undone with it (those
    /// before it stay), and the caller's transaction then rolls back all.
    ///
    /// ```swift
    /// try db.execute(rows: results, width: 2, sql: "INSERT INTO results (id, result) VALUES") { binder, result in
    ///     try binder.bind(result.id)
    ///     try binder.bind(result.json)
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - width: the values `bind` binds per row.
    ///   - sql: the statement up to its rows' parameters, which follow it
    ///     as `(?, …), …` (``SQLText/parameters(rows:width:)``).
    ///   - suffix: what follows the rows' parameters (`ON CONFLICT …`).
    ///   - bind: binds one row's `width` values, in the statement's order.
    @inlinable  // Specialized for its callers' rows: unspecialized, walking them was a twentieth of a push's write.
    package func execute<Rows: Collection>(
        rows: Rows, width: Int, sql: String, suffix: String = "", bind: (inout StatementBinder, Rows.Element) throws -> Void
    ) throws {
        precondition(width > 0, "a row binds at least one value")
        guard !rows.isEmpty else { return }
        let limit = Int(sqlite3_limit(sqliteConnection, SQLITE_LIMIT_VARIABLE_NUMBER, -1))
        let most = max(1, min(Self.rowsPerStatement[0], limit / width))
        var next = rows.startIndex
        var left = rows.count
        while left > 0 {
            let count = Self.rowsPerStatement.first { $0 <= min(left, most) } ?? 1
            let end = rows.index(next, offsetBy: count)
            let statement = try cachedStatement(sql: sql + " " + SQLText.parameters(rows: count, width: width) + " " + suffix)
            try statement.execute { binder in
                for row in rows[next..<end] { try bind(&binder, row) }
            }
            next = end
            left -= count
        }
    }
}
