/// A place in a store's change order, compared field by field: for the
/// SQLite store the version alone, for the PostgreSQL store the writing
/// transaction's id, then the version.
struct ChangePosition: Hashable, Comparable, Sendable {
    var major: Int64
    var minor: Int64 = 0

    static let start = ChangePosition(major: 0)

    static func < (lhs: ChangePosition, rhs: ChangePosition) -> Bool {
        (lhs.major, lhs.minor) < (rhs.major, rhs.minor)
    }
}

/// Where a pull of one scope starts, decided from its cursor (DESIGN.md
/// server semantic 6): at the cursor, or from scratch with a reset when the
/// cursor is older than the tombstone horizon, from another epoch, or ahead
/// of the store (a store restored from a backup).
enum PullStart: Hashable, Sendable {
    case after(ChangePosition)
    case fromScratch(reset: Bool)

    /// - Parameters:
    ///   - horizon: the newest position of a collected tombstone.
    ///   - end: the furthest position a cursor of this store can hold.
    init(cursor text: String, scope: String, codec: PullCursorCodec, horizon: ChangePosition, end: ChangePosition) throws(FerryServerError) {
        let decoded: PullCursorCodec.Decoded
        do {
            decoded = try codec.decode(text, scope: scope)
        } catch .wrongScope {
            throw .badRequest("the cursor for scope `\(scope)` was issued for another scope")
        } catch {
            throw .badRequest("the cursor for scope `\(scope)` is not one this server issued; start again without a cursor")
        }
        switch decoded {
        case .otherEpoch:
            self = .fromScratch(reset: true)
        case .position(let major, let minor):
            let position = ChangePosition(major: major, minor: minor)
            self = position < horizon || position > end ? .fromScratch(reset: true) : .after(position)
        }
    }

    var position: ChangePosition {
        if case .after(let position) = self { position } else { .start }
    }

    var isFromScratch: Bool {
        if case .fromScratch = self { true } else { false }
    }

    var isReset: Bool {
        if case .fromScratch(true) = self { true } else { false }
    }
}
