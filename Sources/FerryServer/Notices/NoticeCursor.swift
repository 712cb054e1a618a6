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
/// let start = try NoticeCursor.position(from: "0.17")   // ChangePosition(major: 0, minor: 17)
/// NoticeCursor.text(start)                              // "0.17"
/// ```
enum NoticeCursor {
    static func text(_ position: ChangePosition) -> String {
        "\(position.major).\(position.minor)"
    }

    /// The position a cursor names; `nil` text is the start.
    static func position(from text: String?) throws(FerryServerError) -> ChangePosition {
        guard let text else { return .start }
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, let major = Int64(parts[0]), let minor = Int64(parts[1]), major >= 0, minor >= 0 else {
            throw .badRequest("the notice cursor \(MutationCheck.quoted(text)) is not one this server issued; start again without it")
        }
        return ChangePosition(major: major, minor: minor)
    }
}
