/// One change a client made to one row, as it travels in a push.
///
/// Mutation ids are strictly increasing per client, with no gaps: the server
/// applies mutation `n + 1` only after `n`, and acknowledges a replayed id
/// without applying it again.
///
/// ```swift
/// let mutation = Mutation(
///     mutationID: 7, table: "note", rowID: "6F1C…", scope: "user:alice",
///     operation: .upsert, columns: ["title": "Milk"], baseVersion: 41,
///     hlc: HLCTimestamp(wallMilliseconds: 1_700_000_000_000, counter: 0)
/// )
/// ```
public struct Mutation: Sendable, Hashable, Codable {
    /// What a mutation does to its row.
    public enum Operation: String, Sendable, Hashable, Codable, CaseIterable {
        /// Creates the row, or changes the given columns of it.
        case upsert
        /// Deletes the row; the server keeps a versioned tombstone.
        case delete
    }

    /// The client's id for this mutation: one more than the one before.
    public var mutationID: Int64
    /// The synced table.
    public var table: String
    /// The row's globally unique id (a UUID made on the device).
    public var rowID: String
    /// The scope the row belongs to, such as `user:alice` or a shared scope.
    public var scope: String
    public var operation: Operation
    /// The columns the client changed, with their new values. Empty for a delete.
    public var columns: [String: ColumnValue]
    /// The server version of the row the edit was made on; `nil` when the
    /// client never saw the row on the server (it created it).
    public var baseVersion: Int64?
    /// When the edit was made, on the client's hybrid logical clock.
    public var hlc: HLCTimestamp

    public init(
        mutationID: Int64,
        table: String,
        rowID: String,
        scope: String,
        operation: Operation,
        columns: [String: ColumnValue] = [:],
        baseVersion: Int64?,
        hlc: HLCTimestamp
    ) {
        self.mutationID = mutationID
        self.table = table
        self.rowID = rowID
        self.scope = scope
        self.operation = operation
        self.columns = columns
        self.baseVersion = baseVersion
        self.hlc = hlc
    }
}
