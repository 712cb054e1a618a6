/// Where a pull of one scope starts, decided from its cursor (DESIGN.md
/// server semantic 6): at the cursor, or from scratch with a reset when the
/// cursor is older than the tombstone horizon, from another epoch, or ahead
/// of the store (a store restored from a backup).
enum PullStart: Hashable, Sendable {
    case after(Int64)
    case fromScratch(reset: Bool)

    init(cursor text: String, scope: String, codec: PullCursorCodec, horizon: Int64, version: Int64) throws(FerryServerError) {
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
        case .position(let position, _):
            self = position < horizon || position > version ? .fromScratch(reset: true) : .after(position)
        }
    }

    var position: Int64 {
        if case .after(let position) = self { position } else { 0 }
    }

    var isFromScratch: Bool {
        if case .fromScratch = self { true } else { false }
    }

    var isReset: Bool {
        if case .fromScratch(true) = self { true } else { false }
    }
}
