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
        try database.read(SetAsideRecord.fetchCount)
    }

    /// The list as an async sequence that yields after every change.
    public func observe() -> AsyncValueObservation<[SetAsideRow]> {
        ValueObservation.tracking(Self.list).removeDuplicates().values(in: database.writer)
    }

    static func list(_ db: Database) throws -> [SetAsideRow] {
        typealias Columns = SetAsideRecord.Columns
        return try SetAsideRecord.order(Columns.setAsideAt, Columns.table, Columns.rowID).fetchAll(db).map(\.row)
    }
}

extension FerryDatabase {
    /// The pulled rows that could not be applied.
    public var setAsideRows: SetAsideRows { SetAsideRows(database: self) }
}
