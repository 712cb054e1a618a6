import FerryProtocol
import GRDB

/// A change waiting to be pushed: every pending edit of one row, coalesced.
///
/// Several edits of one row become one upsert carrying the union of their
/// changed columns; a delete supersedes earlier edits; a row inserted and
/// deleted before it was ever pushed produces nothing.
///
/// ```swift
/// for mutation in try database.outbox.pendingMutations() {
///     print(mutation.table, mutation.rowID, mutation.operation, mutation.columns ?? [])
/// }
/// ```
public struct PendingMutation: Sendable, Hashable {
    /// What the mutation asks the server to do.
    public enum Operation: String, Sendable, Hashable {
        /// Create the row or change the listed columns.
        case upsert
        /// Delete the row (a versioned tombstone on the server).
        case delete
    }

    /// The mutation id the server deduplicates on, once one is assigned.
    public var mutationID: Int64?
    /// The outbox entries this mutation settles when acknowledged or rejected.
    public var entrySeqs: [Int64]
    public var table: String
    public var rowID: String
    public var operation: Operation
    /// The changed columns of an upsert; `nil` means every column.
    public var columns: Set<String>?
    /// The row's current values for the changed columns (empty for deletes).
    public var values: [String: DatabaseValue]
    /// The scope named by the row's scope column, or `nil` for the user's own scope.
    public var scope: String?
    /// The server version the first coalesced edit was made on.
    public var baseVersion: Int64?
    /// The stamp of the latest coalesced edit.
    public var hlc: HLCTimestamp

    public init(
        mutationID: Int64? = nil, entrySeqs: [Int64], table: String, rowID: String, operation: Operation,
        columns: Set<String>?, values: [String: DatabaseValue] = [:], scope: String?, baseVersion: Int64?,
        hlc: HLCTimestamp
    ) {
        self.mutationID = mutationID
        self.entrySeqs = entrySeqs
        self.table = table
        self.rowID = rowID
        self.operation = operation
        self.columns = columns
        self.values = values
        self.scope = scope
        self.baseVersion = baseVersion
        self.hlc = hlc
    }
}
