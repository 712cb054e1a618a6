import FerrySQLite
import GRDB

/// The last server version the device saw of each synced row, and the edit
/// stamp that came with it: the `ferry_rows` table, the base of every merge.
/// Every statement that reads or writes it is here.
///
/// A version only moves forward: a page, a push reply and a restored row
/// may each bring one, in any order, and the newest wins.
///
/// ```swift
/// try KnownVersions.remember(12, table: "note", rowID: id, db)
/// try KnownVersions.version(table: "note", rowID: id, db)   // 12
/// try KnownVersions.forget(table: "note", rowID: id, db)
/// ```
enum KnownVersions {
    /// The table's name, for the capture triggers' SQL.
    static let tableName = "ferry_rows"

    /// The version the device saw of `rowID`, or `nil` when it saw none.
    static func version(table: String, rowID: String, _ db: Database) throws -> Int64? {
        try Int64.fetchOne(
            db.cachedStatement(sql: "SELECT version FROM ferry_rows WHERE tbl = ? AND row_id = ?"),
            arguments: [table, rowID])
    }

    /// Records that the device saw `version` of `rowID` (never moving back).
    static func remember(_ version: Int64, table: String, rowID: String, _ db: Database) throws {
        try db.cachedStatement(
            sql: """
                INSERT INTO ferry_rows(tbl, row_id, version) VALUES (?, ?, ?)
                ON CONFLICT(tbl, row_id) DO UPDATE SET version = max(version, excluded.version)
                """
        ).execute(arguments: [table, rowID, version])
    }

    /// Records the versions and stamps of `versions` in one statement (its
    /// callers send at most 250 rows); a stamp goes with the newest
    /// version only.
    static func remember(_ versions: ArraySlice<(RowKey, Int64, Int64?)>, _ db: Database) throws {
        guard !versions.isEmpty else { return }
        let tuples = SQLText.parameters(rows: versions.count, width: 4)
        // All SET expressions read the old row, so the stamp's test sees the old version.
        let statement = try db.cachedStatement(
            sql: """
                INSERT INTO ferry_rows(tbl, row_id, version, hlc) VALUES \(tuples)
                ON CONFLICT(tbl, row_id) DO UPDATE SET version = max(version, excluded.version),
                hlc = CASE WHEN excluded.version >= version THEN coalesce(excluded.hlc, hlc) ELSE hlc END
                """)
        try statement.execute { binder in
            for (key, version, stamp) in versions {
                try binder.bind(key.table)
                try binder.bind(key.rowID)
                try binder.bind(version)
                try binder.bind(stamp)
            }
        }
    }

    /// Records each version and stamp where it is at least the version
    /// the device holds of its row (else leaves the row's as they are), in
    /// statements of at most 100 rows. Returns how many it recorded: fewer
    /// than `versions` holds when the device holds a newer version of some.
    ///
    /// ```swift
    /// try KnownVersions.advance([(RowKey(table: "note", rowID: id), 12, stamp)], db)  // 1
    /// ```
    static func advance(_ versions: [(RowKey, Int64, Int64?)], _ db: Database) throws -> Int {
        var recorded = 0
        var start = 0
        while start < versions.count {
            let count = UpsertBatch.sizes.first { $0 <= versions.count - start } ?? 1
            let statement = try db.cachedStatement(
                sql: """
                    INSERT INTO ferry_rows(tbl, row_id, version, hlc) VALUES \(SQLText.parameters(rows: count, width: 4))
                    ON CONFLICT(tbl, row_id) DO UPDATE SET version = excluded.version, hlc = coalesce(excluded.hlc, hlc)
                    WHERE excluded.version >= version
                    """)
            try statement.execute { binder in
                for (key, version, stamp) in versions[start..<(start + count)] {
                    try binder.bind(key.table)
                    try binder.bind(key.rowID)
                    try binder.bind(version)
                    try binder.bind(stamp)
                }
            }
            recorded += db.changesCount
            start += count
        }
        return recorded
    }

    /// The versions and stamps the device holds of `rowIDs` in `table`, in
    /// one statement (at most 250 ids, as the page applier sends them).
    static func fetch(table: String, rowIDs: some Collection<String>, _ db: Database) throws -> [(rowID: String, version: Int64, stamp: Int64?)] {
        let marks = SQLText.parameters(rows: rowIDs.count)
        let statement = try db.cachedStatement(sql: "SELECT row_id, version, hlc FROM ferry_rows WHERE tbl = ? AND row_id IN (\(marks))")
        try statement.bind { binder in
            try binder.bind(table)
            for rowID in rowIDs { try binder.bind(rowID) }
        }
        defer { statement.clearValues() }
        let cursor = try Row.fetchCursor(statement)
        var known: [(rowID: String, version: Int64, stamp: Int64?)] = []
        while let row = try cursor.next() {
            known.append((row[0], row[1], row[2]))
        }
        return known
    }

    /// Forgets `rowID`: the device knows no version of it.
    static func forget(table: String, rowID: String, _ db: Database) throws {
        try db.cachedStatement(sql: "DELETE FROM ferry_rows WHERE tbl = ? AND row_id = ?").execute(arguments: [table, rowID])
    }

    /// Forgets the rows of `table` that `rowIDs` (a `SELECT` of ids, with
    /// its `arguments`) names.
    static func forget(table: String, rowIDs select: String, arguments: StatementArguments = [], _ db: Database) throws {
        try db.execute(
            sql: "DELETE FROM ferry_rows WHERE tbl = ? AND row_id IN (\(select))",
            arguments: [table] + arguments)
    }

    /// Forgets the rows of `table` the device no longer holds (`key` is the
    /// table's primary key, quoted).
    static func forgetMissing(from table: String, key: String, _ db: Database) throws {
        try db.execute(
            sql: "DELETE FROM ferry_rows WHERE tbl = ? AND row_id NOT IN (SELECT \(key) FROM \(SQLText.identifier(table)))",
            arguments: [table])
    }

    /// Keeps the rows `rowIDs` names as known but based on nothing
    /// (version 0): a server that lost history holds no version of them.
    static func clear(table: String, rowIDs select: String, arguments: StatementArguments = [], _ db: Database) throws {
        try db.execute(
            sql: "UPDATE ferry_rows SET version = 0 WHERE tbl = ? AND row_id IN (\(select))",
            arguments: [table] + arguments)
    }

    /// SQL for the stamp the device holds of the row `rowID` (an SQL
    /// expression) of `table` (an SQL string literal), or `fallback`.
    static func stampSQL(table: String, rowID: String, orElse fallback: String) -> String {
        "coalesce((SELECT hlc FROM ferry_rows WHERE tbl = \(table) AND row_id = \(rowID)), \(fallback))"
    }

    /// SQL for the version the device holds of the row `rowID` (an SQL
    /// expression) of `table` (an SQL string literal): `NULL` for none.
    static func versionSQL(table: String, rowID: String) -> String {
        "(SELECT version FROM ferry_rows WHERE tbl = \(table) AND row_id = \(rowID))"
    }
}
