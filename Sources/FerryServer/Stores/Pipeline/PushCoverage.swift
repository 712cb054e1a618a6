import FerryProtocol

/// The scopes a push's reply lets its client move its cursor through
/// without pulling its own rows back (``PushResponse/covered``): a device
/// that drains 100k offline edits and then syncs does not download the
/// 100k rows it just sent.
///
/// A scope qualifies when the push wrote rows there and every mutation it
/// applied there now was applied as sent (`applied`, no conflict): the
/// store's rows are then the device's own, value for value. Its range runs
/// from the scope's last change before the push (never before the
/// tombstone horizon, where a pull would start over) to the store's
/// version after it, and holds only the push's own rows; a scope that held
/// no row before is one a client that never pulled it may take too (its
/// first pull would bring the push's rows alone). That holds in a
/// store whose writes commit in version order (the SQLite store); the
/// PostgreSQL store names no range.
///
/// ```swift
/// let scopes = PushCoverage.scopes(of: plan, request: request)
/// let covered = PushCoverage.covered(scopes, lastBefore: last, horizon: horizon, end: plan.version) { scope, position in
///     codec.encode(PullCursor(epoch: codec.epoch, scope: scope, position: position))
/// }
/// ```
package enum PushCoverage {
    /// The scopes the plan wrote rows in where every mutation applied now
    /// was applied as sent.
    package static func scopes(of plan: PushPlan, request: PushRequest) -> Set<String> {
        var written = plan.changedScopes
        let unclean = plan.results.filter { $0.status != .applied || !$0.conflicts.isEmpty }
        // The usual push, every mutation applied as sent, needs no look-up of their scopes.
        guard !written.isEmpty, !unclean.isEmpty else { return written }
        let scopeOf = Dictionary(request.mutations.map { ($0.mutationID, $0.scope) }, uniquingKeysWith: { first, _ in first })
        for result in unclean {
            // A mutation of no known scope taints them all.
            guard let scope = scopeOf[result.mutationID] else { return [] }
            written.remove(scope)
        }
        return written
    }

    /// The ranges of `scopes`, sorted by scope.
    ///
    /// - Parameters:
    ///   - lastBefore: the version of the scope's newest row before the
    ///     push (live or a tombstone), `nil` for none.
    ///   - horizon: the newest version of a collected tombstone.
    ///   - end: the store's version after the push.
    ///   - cursor: the cursor of a scope at a version, signed.
    package static func covered(
        _ scopes: Set<String>, lastBefore: (String) throws -> Int64?, horizon: Int64, end: Int64,
        cursor: (String, Int64) -> String
    ) rethrows -> [PushResponse.CoveredScope] {
        try scopes.sorted().compactMap { scope in
            let last = try lastBefore(scope)
            let after = max(last ?? 0, horizon)
            guard after < end else { return nil }
            return PushResponse.CoveredScope(
                scope: scope, after: cursor(scope, after), cursor: cursor(scope, end), emptyBefore: last == nil ? true : nil)
        }
    }
}
