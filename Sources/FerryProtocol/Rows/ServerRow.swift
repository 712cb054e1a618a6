/// A row as the server holds it: carried by a conflict, a rejection and a
/// conflict notice, and returned by `GET /v1/rows/{scope}/{table}/{rowID}`,
/// so a client can settle a conflict or drop a rejected edit even when it
/// does not hold the row itself.
///
/// A deleted row keeps, in `values`, what it held when it was deleted (as
/// far as the server still knows it), so "restore the row" has every
/// column to restore.
///
/// ```swift
/// if let row = result.row, !row.deleted {
///     print("the server holds version", row.version, row.values)
/// }
/// ```
public struct ServerRow: Sendable, Hashable, Codable {
    /// The row's version: the base of an edit made on top of it.
    public var version: Int64
    public var deleted: Bool
    /// Every column's value (for a deleted row, the values it last held).
    public var values: [String: ColumnValue]

    public init(version: Int64, deleted: Bool, values: [String: ColumnValue]) {
        self.version = version
        self.deleted = deleted
        self.values = values
    }
}
