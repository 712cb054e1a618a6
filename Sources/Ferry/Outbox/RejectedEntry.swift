import FerryProtocol

/// An outbox entry the server refused, with its reason.
public struct RejectedEntry: Sendable, Hashable {
    public var entry: OutboxEntry
    /// Why the server refused it.
    public var reason: String
    /// When it was rejected (Unix milliseconds).
    public var rejectedAt: Int64
    /// The values its mutation carried when the server refused it (empty
    /// for a delete, and for entries rejected before Ferry kept them).
    public var values: [String: ColumnValue]
}
