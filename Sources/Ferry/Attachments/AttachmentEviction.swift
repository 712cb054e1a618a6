/// Which downloaded attachment files to delete to bring the cache under its
/// limit: a pure decision, least recently opened first, never a file the
/// server does not hold yet.
///
/// ```swift
/// let plan = AttachmentEviction(limit: 10_000_000, keeping: justOpened)
/// let evict = plan.evict(files)   // ids, oldest first, until the rest fit
/// ```
struct AttachmentEviction: Sendable {
    /// One attachment whose file is on this device.
    struct File: Sendable, Hashable {
        var id: String
        var size: Int64
        /// Only uploaded files (the server holds them whole) may go.
        var uploaded: Bool
        /// Unix milliseconds; `nil` sorts as never opened.
        var lastOpenedAt: Int64?
    }

    var limit: Int64
    /// An attachment never evicted this time (the one just opened).
    var keeping: String?

    /// The ids to evict, in eviction order. The rest may still exceed the
    /// limit when what remains cannot go (not uploaded, or kept).
    func evict(_ files: [File]) -> [String] {
        var total = files.reduce(0) { $0 + $1.size }
        guard total > limit else { return [] }
        let candidates = files.filter { $0.uploaded && $0.id != keeping }
            .sorted { ($0.lastOpenedAt ?? .min, $0.id) < ($1.lastOpenedAt ?? .min, $1.id) }
        var evicted: [String] = []
        for file in candidates where total > limit {
            evicted.append(file.id)
            total -= file.size
        }
        return evicted
    }
}
