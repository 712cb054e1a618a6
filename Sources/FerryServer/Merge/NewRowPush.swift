import FerryProtocol

/// Whether a push may be planned without reading its rows first.
///
/// Most pushes create rows: a device sends an upsert with no base version
/// for a row it made itself and has never seen on the server. A store may
/// plan such a push as if none of its rows were stored, and write each of
/// them with a plain insert: the store's unique key on the row then checks
/// what the plan assumed. When a row was stored after all, the insert fails,
/// the transaction rolls back, and the store runs the push again reading
/// its rows, so the plan made on the assumption is never committed.
///
/// ```swift
/// var plan = try rules.plan(request, userID: user, lastApplied: last, rows: [:], version: v, allocated: a, horizon: h)
/// if !NewRowPush.isChecked(plan, fresh: fresh) {
///     plan = try rules.plan(request, userID: user, lastApplied: last, rows: try load(keys), version: v, allocated: a, horizon: h)
/// }
/// ```
package enum NewRowPush {
    /// Whether every mutation upserts a row its device has never seen on the
    /// server: the case worth planning without a read. A push that fails
    /// this test could still be checked, but would rarely pass.
    package static func isLikely(_ mutations: [Mutation]) -> Bool {
        !mutations.isEmpty && mutations.allSatisfy { $0.operation == .upsert && $0.baseVersion == nil }
    }

    /// Whether `plan`, made as if none of the rows of `fresh` were stored,
    /// writes every one of those rows: only then do the plan's inserts check
    /// every row it assumed absent. Otherwise (a mutation rejected, or one
    /// that changed nothing) the store reads the rows and plans again.
    package static func isChecked(_ plan: PushPlan, fresh: [Mutation]) -> Bool {
        fresh.allSatisfy { plan.rows[RowKey(scope: $0.scope, table: $0.table, rowID: $0.rowID)] != nil }
    }
}
