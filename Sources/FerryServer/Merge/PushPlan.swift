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
        /// The pushed mutation that overrode the value.
        var mutationID: Int64
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

extension PushPlan {
    /// Names, in the reply, the notices this push sends to its own user's
    /// other devices: when the pusher overrode a value its user wrote on
    /// another device, the reply's conflict and that notice are one loss,
    /// and settling either settles both (ARCHITECTURE.md: conflicts are the
    /// user's, not a device's).
    ///
    /// ```swift
    /// plan.linkNotices(ids: [41, 42]) { NoticeCursor.id($0, epoch: epoch) }
    /// ```
    ///
    /// - Parameters:
    ///   - ids: the store's id of each of ``notices``, in order.
    ///   - name: the public id of a notice the store numbered `id`.
    mutating func linkNotices(ids: [Int64], name: (Int64) -> String) {
        var named: [NoticeLink: String] = [:]
        for (notice, id) in zip(notices, ids) where notice.userID == notice.byUserID {
            named[NoticeLink(mutationID: notice.mutationID, column: notice.conflict.column)] = name(id)
        }
        guard !named.isEmpty else { return }
        for index in results.indices {
            let mutationID = results[index].mutationID
            for conflict in results[index].conflicts.indices {
                let link = NoticeLink(mutationID: mutationID, column: results[index].conflicts[conflict].column)
                if let id = named[link] { results[index].conflicts[conflict].noticeID = id }
            }
        }
        for index in conflicts.indices {
            let link = NoticeLink(mutationID: conflicts[index].mutationID, column: conflicts[index].conflict.column)
            if let id = named[link] { conflicts[index].conflict.noticeID = id }
        }
    }

    private struct NoticeLink: Hashable {
        var mutationID: Int64
        var column: String?
    }
}
