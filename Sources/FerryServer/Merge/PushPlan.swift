import FerryProtocol

/// What one push does to a store, decided before anything is written.
///
/// A store loads the client's last applied id and the rows the push touches,
/// asks ``PushPlanner`` for a plan, and writes the plan in the same
/// transaction. The decisions are all here, shared by every store.
package struct PushPlan: Sendable {
    /// A conflict to record, with the mutation it came from.
    package struct RecordedConflict: Sendable, Hashable {
        package var key: RowKey
        package var mutationID: Int64
        package var version: Int64?
        package var conflict: Conflict
    }

    /// A notice to record for the writer of a value this push discarded.
    package struct RecordedNotice: Sendable, Hashable {
        package var key: RowKey
        /// The pushed mutation that overrode the value.
        package var mutationID: Int64
        /// Who receives it: every device of this user.
        package var userID: String
        /// The writer whose push overrode the value: that device already
        /// holds the conflict from its own reply.
        package var byUserID: String
        package var byClientID: String
        package var conflict: Conflict
        /// The row after the overriding write.
        package var row: ServerRow?
        /// The policy that chose the other value; `nil` when a delete won.
        package var policy: ConflictPolicy?
        /// The version of the overriding write.
        package var version: Int64
    }

    /// A rejection to record.
    package struct RecordedRejection: Sendable, Hashable {
        package var mutation: Mutation
        package var reason: String
    }

    package var lastAppliedMutationID: Int64
    /// The store's version counter after the push.
    package var version: Int64
    /// Results of the mutations applied now, in order (replayed ones are not here).
    package var results: [MutationResult]
    /// Ids at or below the last applied id: acknowledged without effect.
    package var replayedIDs: [Int64]
    /// The digest of each mutation applied now (``results``' ids, in order,
    /// from the last applied id before the push plus one): stored, so a
    /// later replay of these ids is checked against them.
    package var digests: [MutationDigest] = []
    /// The final state of every row that changed.
    package var rows: [RowKey: StoredRow]
    /// Values overwritten, per row that had any, to append to its history.
    package var overwritten: [RowKey: [HistoricValue]]
    package var conflicts: [RecordedConflict]
    package var rejections: [RecordedRejection]
    package var notices: [RecordedNotice] = []

    /// Scopes whose rows changed: their live subscribers hear of it.
    package var changedScopes: Set<String> {
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
    package mutating func linkNotices(ids: [Int64], name: (Int64) -> String) {
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
        package var mutationID: Int64
        package var column: String?
    }
}
