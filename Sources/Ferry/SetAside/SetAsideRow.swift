/// A pulled row that could not be applied (a constraint, a type), kept with
/// its values in `ferry_set_aside` and retried after later pages of its
/// scope; a newer valid version of the row clears it.
///
/// ```swift
/// for row in try database.setAsideRows.list() {
///     print("\(row.table) \(row.rowID) v\(row.version): \(row.reason)")
/// }
/// ```
public struct SetAsideRow: Sendable, Hashable {
    public var table: String
    public var rowID: String
    public var scope: String
    public var version: Int64
    /// The error SQLite gave.
    public var reason: String
}
