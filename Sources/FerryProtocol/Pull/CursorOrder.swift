import Foundation

/// Where a Ferry server's pull cursor stands in its store's change order,
/// read from the cursor's unsigned part: the Ferry client uses it to tell
/// whether a live page covers its own cursor (``PullPage/after``). Cursors
/// stay opaque on the wire; only Ferry's own client reads them, and a cursor
/// it cannot read (another format, another server) is compared by equality.
/// The server signs what it issues (`PullCursorCodec` in `FerryServer`) and
/// checks the signature on every pull, so reading changes nothing it trusts.
///
/// ```swift
/// let mine = CursorOrder(cursor), after = CursorOrder(page.after), end = CursorOrder(page.cursor)
/// CursorOrder.covers(mine, from: after, to: end)   // true: the page holds every change after `mine`
/// ```
package struct CursorOrder: Hashable, Sendable {
    /// Everything but the position: two cursors compare only when these match.
    package var epoch: String
    package var scope: String
    package var generation: String
    package var position: Int64
    package var subposition: Int64

    /// Reads a `c2` cursor (`base64url(c2|epoch|scope|position|subposition|generation).mac`); `nil` for any other text.
    package init?(_ cursor: String?) {
        guard let cursor, cursor.utf8.count <= 1024 else { return nil }
        let parts = cursor.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty else { return nil }
        var base64 = parts[0].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.utf8.count % 4) % 4)
        guard let data = Data(base64Encoded: base64), let text = String(data: data, encoding: .utf8) else { return nil }
        let fields = text.split(separator: "|", omittingEmptySubsequences: false)
        guard fields.count == 6, fields[0] == "c2", let position = Int64(fields[3]), let subposition = Int64(fields[4]),
            position >= 0, subposition >= 0
        else { return nil }
        (epoch, scope, generation) = (String(fields[1]), String(fields[2]), String(fields[5]))
        (self.position, self.subposition) = (position, subposition)
    }

    /// Whether a page holding every change after `after` up to `end` covers
    /// a client at `cursor`: the three from one epoch, scope and generation,
    /// and `after ≤ cursor ≤ end` in change order. Then the client that
    /// applies the page has every change up to `end`.
    package static func covers(_ cursor: CursorOrder?, from after: CursorOrder?, to end: CursorOrder?) -> Bool {
        guard let cursor, let after, let end,
            cursor.sameHistory(as: after), cursor.sameHistory(as: end)
        else { return false }
        return after.key <= cursor.key && cursor.key <= end.key
    }

    /// Whether a client at `cursor` holds every change up to `end` once it
    /// has those after `after`: it is at `after` (compared as text, for a
    /// cursor this type cannot read), or lies between the two.
    package static func covers(_ cursor: String?, after: String?, end: String) -> Bool {
        guard let cursor, let after else { return false }
        return cursor == after || covers(CursorOrder(cursor), from: CursorOrder(after), to: CursorOrder(end))
    }

    private func sameHistory(as other: CursorOrder) -> Bool {
        epoch == other.epoch && scope == other.scope && generation == other.generation
    }

    private var key: Pair { Pair(position, subposition) }

    private struct Pair: Comparable {
        var major: Int64, minor: Int64
        init(_ major: Int64, _ minor: Int64) { (self.major, self.minor) = (major, minor) }
        static func < (a: Pair, b: Pair) -> Bool { (a.major, a.minor) < (b.major, b.minor) }
    }
}
