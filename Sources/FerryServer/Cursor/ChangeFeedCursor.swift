import FerryProtocol

/// The change feed's cursors: a ``PullCursor`` under a name no scope can
/// have, so one codec signs both and a feed cursor is never taken for a
/// scope's. Where a feed starts is decided here, for both stores.
///
/// ```swift
/// let start = try ChangeFeedCursor.start(text, codec: codec, end: end)   // .start for nil or lost history
/// let next = ChangeFeedCursor.encode(position, codec: codec)
/// ```
package enum ChangeFeedCursor {
    /// The cursor's scope field; `*` is in no scope name.
    package static let name = "*changes*"

    /// Where a feed read starts: after the cursor, or from the beginning
    /// when there is none or it points into history this store lost
    /// (another epoch, an unknown generation, or ahead of the store). The
    /// tombstone horizon does not matter: a collected tombstone stays as
    /// its deletion record, which the feed delivers.
    package static func start(_ text: String?, codec: PullCursorCodec, end: ChangePosition) throws(FerryServerError) -> ChangePosition {
        guard let text else { return .start }
        let decoded: PullCursorCodec.Decoded
        do {
            decoded = try codec.decode(text, scope: name)
        } catch {
            throw .badRequest("the cursor is not a change feed cursor this server issued; start again without one")
        }
        guard case .position(let major, let minor, let generation) = decoded else { return .start }
        let position = ChangePosition(major: major, minor: minor)
        guard codec.history.holds(generation: generation, position: position), position <= end else { return .start }
        return position
    }

    package static func encode(_ position: ChangePosition, codec: PullCursorCodec) -> String {
        codec.encode(PullCursor(epoch: codec.epoch, scope: name, position: position.major, subposition: position.minor))
    }

    /// A page from the rows a store read after `start` (at most `limit + 1`,
    /// in change order): the first `limit`, and a cursor past the last one
    /// returned, or at `end` when nothing more is readable.
    package static func page(_ rows: [(entry: ChangeFeedEntry, position: ChangePosition)], limit: Int, end: ChangePosition, codec: PullCursorCodec)
        -> ChangeFeedPage
    {
        let hasMore = rows.count > limit
        let kept = rows.prefix(limit)
        let next = hasMore ? kept.last!.position : max(end, kept.last?.position ?? .start)
        return ChangeFeedPage(changes: kept.map(\.entry), cursor: encode(next, codec: codec), hasMore: hasMore)
    }
}
