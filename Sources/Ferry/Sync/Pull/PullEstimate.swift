import FerryProtocol

/// How many rows a sync's pull expects in all, from the estimates the
/// server puts on the first page of each scope it sends from scratch
/// (``PullPage/estimatedRows``): the rows applied so far, plus what each
/// estimated scope still has to come. It never falls below the rows applied
/// and never shrinks while the pull runs (a scope that sends more than its
/// estimate just has none left to come); ``finish()`` makes it the count
/// applied, so a display ends full.
///
/// ```swift
/// var estimate = PullEstimate()
/// estimate.applied(page)            // first page of a first sync: 500 rows, estimatedRows 2000
/// estimate.total                    // 2000
/// estimate.finish()                 // the sync ended: total == applied
/// ```
struct PullEstimate: Sendable, Hashable {
    /// Rows applied in this pull so far.
    private(set) var applied = 0
    /// Rows each estimated scope still has to come.
    private var remaining: [String: Int] = [:]
    /// The largest total given so far (a scope started over again may
    /// estimate less than it had left); `nil` until a page carried an estimate.
    private var highest: Int?

    /// About how many rows the pull applies in all; `nil` until a page
    /// carried an estimate.
    var total: Int? { highest }

    /// Counts `page`'s rows as applied, after taking its estimate if it has one.
    mutating func applied(_ page: PullPage) {
        applied(page.changes.count, of: page.scope, estimate: page.estimatedRows)
    }

    mutating func applied(_ rows: Int, of scope: String, estimate: Int?) {
        if let estimate { remaining[scope] = max(0, estimate) }
        applied += rows
        if let left = remaining[scope] { remaining[scope] = max(0, left - rows) }
        if estimate != nil || highest != nil {
            highest = max(highest ?? 0, applied + remaining.values.reduce(0, +))
        }
    }

    /// The pull is over: what was applied is the whole.
    mutating func finish() {
        remaining = [:]
        if highest != nil { highest = applied }
    }
}
