import Foundation
import GRDB
import GRDBSQLite

/// SQLite's `SQLITE_TRANSIENT`: it copies the bytes before the call returns.
private let transient = unsafeBitCast(OpaquePointer(bitPattern: -1), to: sqlite3_destructor_type.self)

extension Statement {
    /// Binds values to the statement's parameters, in the order `body`
    /// gives them, straight through SQLite, for a following `execute()` or
    /// fetch without arguments (GRDB then only resets the statement,
    /// keeping them).
    ///
    /// GRDB's `StatementArguments` boxes each value in an existential and
    /// copies it into a new array twice on the way to SQLite, and binds a
    /// string through a new C string: for a pulled page that cost more than
    /// the statements it bound (a third of the apply). GRDB still runs the
    /// statement, so its transaction observers see every change as they do
    /// for any other statement.
    ///
    /// ```swift
    /// let statement = try db.cachedStatement(sql: "SELECT title FROM note WHERE id IN (?, ?)")
    /// try statement.bind { binder in
    ///     for id in ids { try binder.bind(id) }
    /// }
    /// defer { statement.clearValues() }
    /// let titles = try String.fetchAll(statement)
    /// ```
    ///
    /// To run a statement, ``execute(binding:)`` binds, runs and clears.
    ///
    /// - Throws: a `DatabaseError` (`SQLITE_RANGE`, `SQLITE_MISUSE`) when
    ///   `body` binds more or fewer values than the statement has parameters.
    package func bind(_ body: (inout StatementBinder) throws -> Void) throws {
        // A statement whose last step failed answers its first reset with that error, which
        // `setUncheckedArguments` would trap on: reset it here first (GRDB drops such a statement
        // from its cache; a caller holding it must too, ``UpsertBatch``).
        sqlite3_reset(sqliteStatement)
        // Resets the statement, clears its bindings, and marks it bound: `execute()` then only resets it.
        setUncheckedArguments(StatementArguments())
        var binder = StatementBinder(statement: self)
        do {
            try body(&binder)
        } catch {
            // Not run half bound later.
            sqlite3_clear_bindings(sqliteStatement)
            throw error
        }
        let parameters = sqlite3_bind_parameter_count(sqliteStatement)
        guard binder.next - 1 == parameters else {
            sqlite3_clear_bindings(sqliteStatement)
            throw DatabaseError(
                resultCode: .SQLITE_MISUSE, message: "\(binder.next - 1) values bound for \(parameters) parameters", sql: sql)
        }
    }

    /// Runs the statement with the values `body` binds (``bind(_:)``),
    /// then lets them go: SQLite keeps its copies of bound values until the
    /// statement is bound again, and a cached statement lives as long as
    /// its connection.
    ///
    /// ```swift
    /// try statement.execute { binder in try binder.bind(id) }
    /// ```
    @usableFromInline package func execute(binding body: (inout StatementBinder) throws -> Void) throws {
        try bind(body)
        defer { clearValues() }
        try execute()
    }

    /// Runs the statement with `values` bound to its parameters, in order,
    /// then lets them go (``execute(binding:)``).
    ///
    /// ```swift
    /// try db.cachedStatement(sql: "DELETE FROM note WHERE id = ?").execute(values: [id.databaseValue])
    /// ```
    package func execute(values: some Collection<DatabaseValue>) throws {
        try execute { binder in
            for value in values { try binder.bind(value) }
        }
    }

    /// Lets the values bound go (they read as NULL until bound again), for
    /// a statement read with ``bind(_:)`` once its rows are read.
    package func clearValues() {
        sqlite3_clear_bindings(sqliteStatement)
    }
}

/// Binds values to a statement's parameters one after another
/// (`Statement.bind(_:)`); SQLite copies each.
@usableFromInline package struct StatementBinder {
    fileprivate let statement: Statement
    /// The 1-based index of the next parameter.
    fileprivate(set) var next: CInt = 1

    fileprivate init(statement: Statement) {
        self.statement = statement
    }

    /// Text, up to its first NUL byte if it has one, as GRDB binds it (and
    /// reads it back): a value stored whole would read back cut, and look
    /// changed to the next write of the row.
    package mutating func bind(_ text: String) throws {
        var text = text
        try check(
            text.withUTF8 { bytes in
                let length = bytes.firstIndex(of: 0) ?? bytes.count
                // An empty buffer may have no address, which SQLite would bind as NULL.
                guard let address = bytes.baseAddress, length > 0 else {
                    return sqlite3_bind_text(statement.sqliteStatement, next, "", 0, transient)
                }
                return address.withMemoryRebound(to: CChar.self, capacity: length) {
                    sqlite3_bind_text(statement.sqliteStatement, next, $0, CInt(length), transient)
                }
            })
    }

    /// UTF-8 text from where its bytes are, with no string made of them
    /// (a row's cells written into a buffer reused for every row). The
    /// bytes hold no NUL: ``bind(_:)-(String)`` cuts a string at one.
    ///
    /// ```swift
    /// try json.withUnsafeReadableBytes { try binder.bind(utf8: $0) }
    /// ```
    package mutating func bind(utf8 bytes: UnsafeRawBufferPointer) throws {
        guard let address = bytes.baseAddress, !bytes.isEmpty else {
            return try check(sqlite3_bind_text(statement.sqliteStatement, next, "", 0, transient))
        }
        try check(
            sqlite3_bind_text(statement.sqliteStatement, next, address.assumingMemoryBound(to: CChar.self), CInt(bytes.count), transient))
    }

    /// Text, or NULL.
    package mutating func bind(_ text: String?) throws {
        if let text { try bind(text) } else { try check(sqlite3_bind_null(statement.sqliteStatement, next)) }
    }

    package mutating func bind(_ integer: Int64) throws {
        try check(sqlite3_bind_int64(statement.sqliteStatement, next, integer))
    }

    /// An integer, or NULL.
    package mutating func bind(_ integer: Int64?) throws {
        if let integer { try bind(integer) } else { try check(sqlite3_bind_null(statement.sqliteStatement, next)) }
    }

    package mutating func bind(_ value: DatabaseValue) throws {
        switch value.storage {
        case .null:
            try check(sqlite3_bind_null(statement.sqliteStatement, next))
        case .int64(let integer):
            try bind(integer)
        case .double(let double):
            try check(sqlite3_bind_double(statement.sqliteStatement, next, double))
        case .string(let text):
            try bind(text)
        case .blob(let data):
            try check(
                data.withUnsafeBytes { bytes in
                    guard let address = bytes.baseAddress, !bytes.isEmpty else {
                        return sqlite3_bind_zeroblob(statement.sqliteStatement, next, 0)
                    }
                    return sqlite3_bind_blob(statement.sqliteStatement, next, address, CInt(bytes.count), transient)
                })
        }
    }

    private mutating func check(_ code: CInt) throws {
        guard code == SQLITE_OK else {
            throw DatabaseError(
                resultCode: ResultCode(rawValue: code), message: "could not bind parameter \(next)", sql: statement.sql)
        }
        next += 1
    }
}
