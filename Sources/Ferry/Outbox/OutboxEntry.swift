import FerryProtocol

/// One change captured by Ferry's triggers: a row of `ferry_outbox`.
///
/// Entries are what the triggers write; ``PendingMutation`` is what the sync
/// engine pushes, made by coalescing the entries of each row.
public struct OutboxEntry: Sendable, Hashable {
    /// The kind of SQL change captured.
    public enum Operation: String, Sendable, Hashable {
        case insert, update, delete
    }

    /// The entry's position in the outbox: the order of the writes.
    public var seq: Int64
    /// The synced table.
    public var table: String
    /// The primary key of the changed row.
    public var rowID: String
    /// What the write did.
    public var operation: Operation
    /// The columns an update changed; `nil` means every column (inserts and deletes).
    public var columns: Set<String>?
    /// The scope named by the row's scope column, or `nil` for the user's own scope.
    public var scope: String?
    /// The last server version of the row known when the edit was made.
    public var baseVersion: Int64?
    /// When the edit was made, on Ferry's hybrid logical clock.
    public var hlc: HLCTimestamp
    /// The mutation id the entry was sent under, once it has been handed to a push.
    public var mutationID: Int64?

    public init(
        seq: Int64, table: String, rowID: String, operation: Operation,
        columns: Set<String>? = nil, scope: String? = nil, baseVersion: Int64? = nil,
        hlc: HLCTimestamp, mutationID: Int64? = nil
    ) {
        self.seq = seq
        self.table = table
        self.rowID = rowID
        self.operation = operation
        self.columns = columns
        self.scope = scope
        self.baseVersion = baseVersion
        self.hlc = hlc
        self.mutationID = mutationID
    }
}
