/// A write by the app's backend, through the admin API
/// (`POST /admin/v1/writes`): rows inserted, changed or deleted in any
/// scope, merged like a device's push and attributed to a named server
/// writer (`server:<writer>`).
///
/// A request id names one write: sending the same request again (after a
/// lost reply) returns the same results and changes nothing more.
///
/// ```swift
/// let request = BackendWriteRequest(
///     writer: "moderation", requestID: "hide-1742",
///     writes: [BackendWrite(scope: "user:alice", table: "note", rowID: "n1", columns: ["hidden": .integer(1)])]
/// )
/// ```
public struct BackendWriteRequest: Sendable, Hashable, Codable {
    /// The server writer's name: the writes are attributed to the user
    /// `server:<writer>`, and a device whose value they override gets a
    /// conflict notice naming it.
    public var writer: String
    /// Names this write for idempotency: the same id again is answered with
    /// the first results and applies nothing.
    public var requestID: String
    /// Applied in order, all in one transaction.
    public var writes: [BackendWrite]

    public init(writer: String, requestID: String, writes: [BackendWrite]) {
        self.writer = writer
        self.requestID = requestID
        self.writes = writes
    }
}

/// One row a backend writes: an upsert of some columns (the others keep
/// their values) or a delete.
public struct BackendWrite: Sendable, Hashable, Codable {
    public var scope: String
    public var table: String
    public var rowID: String
    public var operation: Mutation.Operation
    /// The columns an upsert sets; none for a delete.
    public var columns: [String: ColumnValue]?
    /// The row version the backend read before it decided this write, so a
    /// column changed since is merged by the table's conflict policy and
    /// its writer notified; `nil` writes over the row as it is now.
    public var baseVersion: Int64?

    public init(
        scope: String, table: String, rowID: String, operation: Mutation.Operation = .upsert,
        columns: [String: ColumnValue]? = nil, baseVersion: Int64? = nil
    ) {
        self.scope = scope
        self.table = table
        self.rowID = rowID
        self.operation = operation
        self.columns = columns
        self.baseVersion = baseVersion
    }
}

/// What a backend write did: one result per write, in order, as a push
/// reply gives them (`replayed` when the request id was seen before).
public struct BackendWriteResponse: Sendable, Hashable, Codable {
    public var results: [MutationResult]

    public init(results: [MutationResult]) {
        self.results = results
    }
}
