/// Where a device stands in one scope's conflict notices: the position of
/// the last notice it received, as `major.minor` text (the SQLite store
/// uses the notice id alone; the PostgreSQL store the writing transaction,
/// then the id).
///
/// It needs no signature: a store only ever returns the asking user's own
/// notices in a scope they may read, so a made-up cursor can show nothing
/// new; it can only repeat or skip that user's notices.
///
/// ```swift
/// let start = try NoticeCursor.position(from: "e1/0.17", epoch: "e1")   // ChangePosition(major: 0, minor: 17)
/// NoticeCursor.text(start, epoch: "e1")                                 // "e1/0.17"
/// ```
package enum NoticeCursor {
    package static func text(_ position: ChangePosition, epoch: String) -> String {
        "\(epoch)/\(position.major).\(position.minor)"
    }

    /// The position a cursor names; the start when it comes from another
    /// epoch of the store (restored from a backup, or replaced), where its
    /// numbers mean nothing.
    package static func position(from text: String?, epoch: String) throws(FerryServerError) -> ChangePosition {
        guard let text else { return .start }
        let halves = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        let parts = halves.count == 2 ? halves[1].split(separator: ".", omittingEmptySubsequences: false) : []
        guard parts.count == 2, let major = Int64(parts[0]), let minor = Int64(parts[1]), major >= 0, minor >= 0 else {
            throw .badRequest("the notice cursor \(MutationCheck.quoted(text)) is not one this server issued; start again without it")
        }
        guard halves[0] == epoch else { return .start }
        return ChangePosition(major: major, minor: minor)
    }

    /// A notice's id: unique across the store's epochs, and across a
    /// restore that numbers notices again (the store generation it was
    /// recorded in), so a client that keeps the ids it holds never confuses
    /// a new notice with an old one.
    package static func id(_ id: Int64, epoch: String, generation: String = "") -> String {
        generation.isEmpty ? "\(epoch)/\(id)" : "\(epoch)/\(generation).\(id)"
    }

    /// The store id and generation a public notice id names, or `nil` for
    /// an id of another epoch (a notice this store does not hold) or one it
    /// never issued.
    package static func parse(id text: String, epoch: String) -> (generation: String, id: Int64)? {
        guard let slash = text.firstIndex(of: "/"), text[..<slash] == epoch else { return nil }
        let rest = text[text.index(after: slash)...]
        guard let dot = rest.lastIndex(of: ".") else { return Int64(rest).map { ("", $0) } }
        guard let id = Int64(rest[rest.index(after: dot)...]) else { return nil }
        return (String(rest[..<dot]), id)
    }
}
