import FerryProtocol

/// A mutation the server refused, set aside with its reason. It never blocks
/// the mutations queued after it.
///
/// ```swift
/// for rejected in try database.outbox.rejectedMutations() {
///     showAlert("Could not save \(rejected.rowID): \(rejected.reason)")
/// }
/// ```
public struct RejectedMutation: Sendable, Hashable {
    /// The outbox entries the mutation was made of.
    public var entrySeqs: [Int64]
    public var table: String
    public var rowID: String
    /// Why the server refused it.
    public var reason: String
    /// When it was set aside (Unix milliseconds).
    public var rejectedAt: Int64
    /// The values the server refused, as they were sent (empty for a
    /// delete). They stay here even after a pull gives the row other
    /// writers' values, until the mutation is resent or discarded.
    public var values: [String: ColumnValue] = [:]
}
