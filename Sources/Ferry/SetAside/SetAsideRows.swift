import GRDB

/// The pulled rows that could not be applied, until a retry or a newer
/// version of them applies: listed, counted and observed like conflicts.
///
/// ```swift
/// for try await rows in database.setAsideRows.observe() {
///     warning.isHidden = rows.isEmpty
/// }
/// ```
public struct SetAsideRows: Sendable {
    let database: FerryDatabase

    /// Every row set aside, oldest first.
    public func list() throws -> [SetAsideRow] {
        try database.read(Self.list)
    }

    /// How many rows are set aside.
    public func count() throws -> Int {
        try database.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM ferry_set_aside") ?? 0 }
    }

    /// The list as an async sequence that yields after every change.
    public func observe() -> AsyncValueObservation<[SetAsideRow]> {
        ValueObservation.tracking(Self.list).removeDuplicates().values(in: database.writer)
    }

    static func list(_ db: Database) throws -> [SetAsideRow] {
        try Row.fetchAll(db, sql: "SELECT tbl, row_id, scope, version, reason FROM ferry_set_aside ORDER BY set_aside_at, tbl, row_id")
            .map { row in
                SetAsideRow(table: row["tbl"], rowID: row["row_id"], scope: row["scope"], version: row["version"], reason: row["reason"])
            }
    }
}

extension FerryDatabase {
    /// The pulled rows that could not be applied.
    public var setAsideRows: SetAsideRows { SetAsideRows(database: self) }
}
