import FerryProtocol

/// A place in a store's change order, compared field by field: for the
/// SQLite store the version alone, for the PostgreSQL store the writing
/// transaction's id, then the version.
package struct ChangePosition: Hashable, Comparable, Sendable {
    package var major: Int64
    package var minor: Int64 = 0

    package init(major: Int64, minor: Int64 = 0) {
        self.major = major
        self.minor = minor
    }

    package static let start = ChangePosition(major: 0)

    package static func < (lhs: ChangePosition, rhs: ChangePosition) -> Bool {
        (lhs.major, lhs.minor) < (rhs.major, rhs.minor)
    }
}

/// Where a pull of one scope starts, decided from its cursor (ARCHITECTURE.md
/// server semantic 6): at the cursor, or from scratch.
///
/// From scratch is a reset of one of two kinds. A cursor older than the
/// tombstone horizon only missed deletes the store has collected: the client
/// refetches and drops what did not come back. A cursor from another epoch,
/// from a generation the store does not know, or ahead of the store points
/// into history the store *lost* (restored from a backup, wiped, or another
/// server): the client keeps every row and sends back what the store lacks.
package enum PullStart: Hashable, Sendable {
    case after(ChangePosition)
    case fromScratch(Reason)

    package enum Reason: Hashable, Sendable {
        /// No cursor: a first pull.
        case firstPull
        /// The cursor is older than the tombstone horizon.
        case behindHorizon
        /// The cursor points into history this store does not hold.
        case lostHistory
    }

    /// - Parameters:
    ///   - horizon: the newest position of a collected tombstone.
    ///   - end: the furthest position a cursor of this store can hold.
    package init(cursor text: String, scope: String, codec: PullCursorCodec, horizon: ChangePosition, end: ChangePosition) throws(FerryServerError) {
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
            self = .fromScratch(.lostHistory)
        case .position(let major, let minor, let generation):
            let position = ChangePosition(major: major, minor: minor)
            if !codec.history.holds(generation: generation, position: position) || position > end {
                self = .fromScratch(.lostHistory)
            } else if position < horizon {
                self = .fromScratch(.behindHorizon)
            } else {
                self = .after(position)
            }
        }
    }

    /// Refuses a push whose ``PushRequest/seen`` cursor points into history
    /// this store lost: its mutations were made on rows the store may not
    /// have, so the client pulls (and sends those back whole) first.
    package static func checkHistory(seen: PushRequest.Seen?, codec: PullCursorCodec, end: ChangePosition) throws(FerryServerError) {
        // A cursor this store cannot read (another scope's, garbled) says nothing of its history.
        guard let seen, let start = try? PullStart(cursor: seen.cursor, scope: seen.scope, codec: codec, horizon: .start, end: end)
        else { return }
        if start.isLostHistory {
            throw FerryServerError(.historyLost, "this server lost the history the push was made on (restored from a backup, or wiped); pull first, then push")
        }
    }

    package var position: ChangePosition {
        if case .after(let position) = self { position } else { .start }
    }

    package var isFromScratch: Bool {
        if case .fromScratch = self { true } else { false }
    }

    package var isReset: Bool {
        if case .fromScratch(let reason) = self { reason != .firstPull } else { false }
    }

    package var isLostHistory: Bool {
        self == .fromScratch(.lostHistory)
    }
}
