/// How the server handled one mutation of a push.
///
/// ```swift
/// for result in response.results where result.status == .conflict {
///     for conflict in result.conflicts { print(conflict.column ?? "row", conflict.resolution) }
/// }
/// ```
public struct MutationResult: Sendable, Hashable, Codable {
    /// The outcome of one mutation.
    public enum Status: String, Sendable, Hashable, Codable, CaseIterable {
        /// Applied; nobody else had changed the row since its base.
        case applied
        /// Applied; others had changed other columns of the row, which were kept.
        case merged
        /// At least one value was discarded by the table's conflict policy (or,
        /// with `manual`, left for the app to resolve); see `conflicts`.
        case conflict
        /// Refused by a validation rule; nothing applied. See `reason`.
        case rejected
    }

    public var mutationID: Int64
    public var status: Status
    /// The row's server version after this mutation, when the row exists.
    public var version: Int64?
    /// Every value a policy discarded or left unresolved, with base, local and server values.
    public var conflicts: [Conflict]
    /// Why the mutation was rejected.
    public var reason: String?
    /// True when this id had been applied by an earlier push: nothing was
    /// applied again and the result is the one recorded the first time.
    public var replayed: Bool
    /// For a conflict or a rejection: the row as the server holds it after
    /// this mutation (`nil`: the server has no such row), so the client can
    /// settle the conflict or drop the rejected edit without a fetch.
    public var row: ServerRow?

    public init(
        mutationID: Int64,
        status: Status,
        version: Int64? = nil,
        conflicts: [Conflict] = [],
        reason: String? = nil,
        replayed: Bool = false,
        row: ServerRow? = nil
    ) {
        self.mutationID = mutationID
        self.status = status
        self.version = version
        self.conflicts = conflicts
        self.reason = reason
        self.replayed = replayed
        self.row = row
    }
}
