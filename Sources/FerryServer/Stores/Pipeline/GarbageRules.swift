import Foundation

/// What garbage collection removes, the same in every store (ARCHITECTURE.md
/// server semantic 6); each store writes these rules in its own SQL, and
/// the conformance suite checks both against the same scenarios.
///
/// 1. Conflict notices created before the cutoff.
/// 2. Tombstones last changed before the cutoff (on PostgreSQL, only those
///    every pull can already read) lose their values and history, and stay
///    as deletion records: keys, delete version and deleter. A write of
///    the row by a client that never saw the delete meets it as it met the
///    tombstone (the delete wins and the writer is told), so a collected
///    delete never silently comes back. The horizon moves to the newest one
///    collected: a cursor behind it gets a reset (the records are not sent),
///    and an edit whose base is behind it is treated as an edit of a removed row.
/// 3. History no base can need: per row and column, every value older than
///    the newest one at or below the horizon. Run on every collection, since
///    an overwrite can add an old value below an unchanged horizon.
/// 4. Recorded push results older than the horizon, but each client's
///    newest: a replay of the client's last push still gets its full answer,
///    and an older replay is answered as plainly applied.
///
/// ```swift
/// let cutoff = GarbageRules.milliseconds(Date().addingTimeInterval(-30 * 86_400))
/// ```
package enum GarbageRules {
    /// A cutoff as the stores compare it with `changed_at` and `created_at`.
    package static func milliseconds(_ cutoff: Date) -> Int64 {
        Int64((cutoff.timeIntervalSince1970 * 1000).rounded(.down))
    }
}
