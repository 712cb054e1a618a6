/// One entry of the admin change feed (`GET /admin/v1/changes`): a row as
/// it stands after a change, in the store's commit order.
///
/// The feed carries each row at its latest version: a row changed twice
/// before a reader catches up appears once, with its newest values. A
/// delete appears as `deleted` with no values.
public struct ChangeFeedEntry: Sendable, Hashable, Codable {
    public var scope: String
    public var table: String
    public var rowID: String
    public var version: Int64
    public var deleted: Bool
    public var values: [String: ColumnValue]
    /// The client that made the change, as `<user>:<client>` (`server:<writer>:<request id>` for a backend write).
    public var clientID: String
    /// When the server applied it, in milliseconds since 1970.
    public var changedAt: Int64

    public init(
        scope: String, table: String, rowID: String, version: Int64, deleted: Bool, values: [String: ColumnValue],
        clientID: String, changedAt: Int64
    ) {
        self.scope = scope
        self.table = table
        self.rowID = rowID
        self.version = version
        self.deleted = deleted
        self.values = values
        self.clientID = clientID
        self.changedAt = changedAt
    }
}

/// A page of the change feed and where the next one starts.
///
/// ```swift
/// var cursor: String? = nil
/// repeat {
///     let page = try await admin.changes(after: cursor)
///     for change in page.changes { handle(change) }
///     cursor = page.cursor          // store it after handling: at-least-once
/// } while page.hasMore
/// ```
public struct ChangeFeedPage: Sendable, Hashable, Codable {
    public var changes: [ChangeFeedEntry]
    /// Opaque; pass it back as `cursor` for the changes after this page.
    public var cursor: String
    /// More changes are readable now.
    public var hasMore: Bool

    public init(changes: [ChangeFeedEntry], cursor: String, hasMore: Bool) {
        self.changes = changes
        self.cursor = cursor
        self.hasMore = hasMore
    }
}
