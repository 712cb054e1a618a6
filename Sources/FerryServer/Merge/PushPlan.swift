import FerryProtocol

/// What one push does to a store, decided before anything is written.
///
/// A store loads the client's last applied id and the rows the push touches,
/// asks ``PushPlanner`` for a plan, and writes the plan in the same
/// transaction. The decisions are all here, shared by every store.
struct PushPlan: Sendable {
    /// A conflict to record, with the mutation it came from.
    struct RecordedConflict: Sendable, Hashable {
        var key: RowKey
        var mutationID: Int64
        var version: Int64?
        var conflict: Conflict
    }

    /// A notice to record for the writer of a value this push discarded.
    struct RecordedNotice: Sendable, Hashable {
        var key: RowKey
        /// Who receives it: every device of this user.
        var userID: String
        /// The writer whose push overrode the value: that device already
        /// holds the conflict from its own reply.
        var byUserID: String
        var byClientID: String
        var conflict: Conflict
        /// The row after the overriding write.
        var row: ServerRow?
        /// The policy that chose the other value; `nil` when a delete won.
        var policy: ConflictPolicy?
        /// The version of the overriding write.
        var version: Int64
    }

    /// A rejection to record.
    struct RecordedRejection: Sendable, Hashable {
        var mutation: Mutation
        var reason: String
    }

    var lastAppliedMutationID: Int64
    /// The store's version counter after the push.
    var version: Int64
    /// Results of the mutations applied now, in order (replayed ones are not here).
    var results: [MutationResult]
    /// Ids at or below the last applied id: acknowledged without effect.
    var replayedIDs: [Int64]
    /// The final state of every row that changed.
    var rows: [RowKey: StoredRow]
    /// Values overwritten, per row, to append to its history.
    var overwritten: [RowKey: [HistoricValue]]
    var conflicts: [RecordedConflict]
    var rejections: [RecordedRejection]
    var notices: [RecordedNotice] = []

    /// Scopes whose rows changed: their live subscribers hear of it.
    var changedScopes: Set<String> {
        Set(rows.keys.map(\.scope))
    }
}
