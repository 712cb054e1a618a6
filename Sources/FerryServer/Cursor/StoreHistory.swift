/// What a store remembers of the history its cursors were issued in.
///
/// The SQLite store begins a *generation* each time it opens and ends the
/// one before at the version it holds then; every cursor names the
/// generation that issued it. A data directory restored from a backup (or
/// copied while the server ran) does not know the generations that came
/// after the copy, and knows where the copied one ended: a cursor from
/// either points into history the store lost, even once new writes carry
/// the version counter past it. The PostgreSQL store renews its epoch
/// instead (a dump loaded into another database or cluster), so its history
/// is ``continuous``.
///
/// ```swift
/// let history = StoreHistory(current: "g2", ended: ["g1": ChangePosition(major: 40)])
/// history.holds(generation: "g1", position: ChangePosition(major: 30))   // true
/// history.holds(generation: "g1", position: ChangePosition(major: 41))   // false: lost
/// history.holds(generation: "g0", position: ChangePosition(major: 1))    // false: unknown
/// ```
package struct StoreHistory: Hashable, Sendable {
    /// The generation new cursors name.
    package var current: String
    /// Every earlier generation this store knows, with the furthest
    /// position a cursor it issued can hold.
    package var ended: [String: ChangePosition]

    /// One generation that never ends (the PostgreSQL store, and tests).
    package static let continuous = StoreHistory(current: "", ended: [:])

    /// Whether a cursor of `generation` at `position` points into history
    /// this store still holds.
    package func holds(generation: String, position: ChangePosition) -> Bool {
        if generation == current { return true }
        guard let end = ended[generation] else { return false }
        return position <= end
    }
}
