/// The reply to a pull, read from one consistent snapshot of the server.
///
/// `lastAppliedMutationID` comes from the same snapshot as the pages: every
/// mutation at or below it is already reflected in them, so the client may
/// drop those from its outbox and take the pulled values.
///
/// ```swift
/// for page in response.pages {
///     if page.reset { /* refetching: rows of the scope not sent again are gone */ }
///     for change in page.changes { apply(change) }
///     save(page.cursor, for: page.scope)
/// }
/// ```
public struct PullResponse: Sendable, Hashable, Codable {
    public var lastAppliedMutationID: Int64
    public var pages: [PullPage]

    public init(lastAppliedMutationID: Int64, pages: [PullPage]) {
        self.lastAppliedMutationID = lastAppliedMutationID
        self.pages = pages
    }
}

/// Changed rows of one scope, oldest change first.
public struct PullPage: Sendable, Hashable, Codable {
    public var scope: String
    public var changes: [RowChange]
    /// Where the next pull of this scope starts. Opaque.
    public var cursor: String
    /// More changes wait: pull again with `cursor` right away.
    public var hasMore: Bool
    /// The given cursor was too old (past the tombstone horizon) or from
    /// another server epoch. This page starts the scope from scratch: the
    /// client refetches it, keeps its outbox and re-applies pending changes.
    public var reset: Bool

    public init(scope: String, changes: [RowChange], cursor: String, hasMore: Bool, reset: Bool) {
        self.scope = scope
        self.changes = changes
        self.cursor = cursor
        self.hasMore = hasMore
        self.reset = reset
    }
}

/// One row as the server holds it now.
public struct RowChange: Sendable, Hashable, Codable {
    public var table: String
    public var rowID: String
    /// The row's server version: the base of the client's next edit to it.
    public var version: Int64
    /// The row is deleted; `values` is empty.
    public var deleted: Bool
    /// Every column's current value.
    public var values: [String: ColumnValue]

    public init(table: String, rowID: String, version: Int64, deleted: Bool, values: [String: ColumnValue]) {
        self.table = table
        self.rowID = rowID
        self.version = version
        self.deleted = deleted
        self.values = values
    }
}
