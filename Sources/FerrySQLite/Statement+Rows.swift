import GRDB
import GRDBSQLite

extension Statement {
    /// Steps through the rows of a statement bound with ``bind(_:)``,
    /// handing each to `body` as its columns' own bytes, straight from
    /// SQLite: no `Row`, no `String` or `DatabaseValue` per column.
    ///
    /// A pulled page reads each row's stored cells only to cut its values
    /// out and write them into the answer: through GRDB each was first
    /// copied into a new string (a tenth of the server's page read).
    ///
    /// ```swift
    /// let statement = try db.cachedStatement(sql: "SELECT id, title FROM note WHERE owner = ?")
    /// try statement.bind { binder in try binder.bind(owner) }
    /// try statement.forEachRow { row in
    ///     print(row.int64(at: 0), row.text(at: 1).count)   // bytes valid only inside the call
    ///     return true                                      // false: no more rows
    /// }
    /// ```
    ///
    /// The statement is reset and its values let go when the rows end,
    /// `body` returns `false`, or `body` throws.
    ///
    /// - Throws: what `body` throws, or a `DatabaseError` when SQLite
    ///   fails a step.
    package func forEachRow(_ body: (StatementRow) throws -> Bool) throws {
        let handle = sqliteStatement
        defer {
            sqlite3_reset(handle)
            sqlite3_clear_bindings(handle)
        }
        let row = StatementRow(handle: handle)
        while true {
            let code = sqlite3_step(handle)
            switch code {
            case SQLITE_ROW: if try !body(row) { return }
            case SQLITE_DONE: return
            default:
                let message = sqlite3_errmsg(sqlite3_db_handle(handle)).map { String(cString: $0) }
                throw DatabaseError(resultCode: ResultCode(rawValue: code), message: message, sql: sql)
            }
        }
    }
}

/// The row a statement stands on, inside ``Statement/forEachRow(_:)``: its
/// columns read by index, the text's bytes valid until the next step.
package struct StatementRow {
    fileprivate let handle: OpaquePointer

    /// The column as an integer (SQLite's conversion for other types; 0 for NULL).
    package func int64(at index: Int32) -> Int64 {
        sqlite3_column_int64(handle, index)
    }

    /// Whether the column's integer value is not zero.
    package func bool(at index: Int32) -> Bool {
        sqlite3_column_int64(handle, index) != 0
    }

    /// The column's text as UTF-8 bytes, empty for NULL: valid until the
    /// statement steps again.
    package func text(at index: Int32) -> UnsafeBufferPointer<UInt8> {
        // The text first, then its length: SQLite's order for a value it may have to convert.
        guard let bytes = sqlite3_column_text(handle, index) else { return UnsafeBufferPointer(start: nil, count: 0) }
        return UnsafeBufferPointer(start: bytes, count: Int(sqlite3_column_bytes(handle, index)))
    }

    /// The column's text as a string (invalid UTF-8 repaired, as GRDB reads it).
    package func string(at index: Int32) -> String {
        String(decoding: text(at: index), as: UTF8.self)
    }

    /// The column as GRDB reads it into a `DatabaseValue`, of the storage class SQLite holds.
    package func databaseValue(at index: Int32) -> DatabaseValue {
        DatabaseValue(sqliteStatement: handle, index: index)
    }
}
