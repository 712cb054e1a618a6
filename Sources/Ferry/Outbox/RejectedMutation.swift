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
}
