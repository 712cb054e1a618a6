import FerryProtocol

/// Decides a whole push: idempotency, ordering, validation, clock drift and
/// the merge of each mutation (ARCHITECTURE.md server semantics 1–4).
package struct PushPlanner: Sendable {
    package var tables: ServerTables
    /// How far ahead of server time a last-write-wins stamp may be.
    package var maxClockDriftMilliseconds: Int64
    /// The most columns a stored row may hold.
    package var maxColumnsPerRow = 1024

    package enum Refusal: Error, Equatable {
        /// A fresh mutation id does not follow the last applied one.
        case gap(lastApplied: Int64, found: Int64)
        /// A mutation at or below the last applied id is not the one
        /// applied under its id (``MutationDigest``): another copy of the
        /// client's database pushed under the same client id.
        case differentReplay(lastApplied: Int64, mutationID: Int64)
    }

    /// Plans `mutations` (strictly increasing ids, checked by the caller).
    ///
    /// - Parameters:
    ///   - rows: the current state of every row the fresh mutations touch
    ///     (absent: no such row).
    ///   - version: the store's version counter before the push: the newest
    ///     version it has issued.
    ///   - allocated: the versions to give changed rows, in increasing order,
    ///     for a store whose counter is a database sequence (at least one per
    ///     fresh mutation). `nil` gives `version + 1`, `version + 2`, …
    ///   - recorded: the digests stored for the mutations at or below
    ///     `lastApplied` that the push sends again; an id with none (collected,
    ///     or applied before digests were kept) is taken as a replay.
    ///   - nowMilliseconds: server wall time, for the drift limit.
    package func plan(
        userID: String,
        clientID: String,
        mutations: [Mutation],
        lastApplied: Int64,
        rows: [RowKey: StoredRow],
        version: Int64,
        allocated: [Int64]? = nil,
        horizon: Int64 = 0,
        recorded: [Int64: MutationDigest] = [:],
        nowMilliseconds: Int64
    ) throws(Refusal) -> PushPlan {
        let replayed = mutations.prefix { $0.mutationID <= lastApplied }
        for mutation in replayed {
            if let digest = recorded[mutation.mutationID], digest != MutationDigest(mutation) {
                throw .differentReplay(lastApplied: lastApplied, mutationID: mutation.mutationID)
            }
        }
        let fresh = mutations.dropFirst(replayed.count)
        var expected = lastApplied + 1
        for mutation in fresh {
            guard mutation.mutationID == expected else {
                throw .gap(lastApplied: lastApplied, found: mutation.mutationID)
            }
            expected += 1
        }

        var plan = PushPlan(
            lastAppliedMutationID: fresh.last?.mutationID ?? lastApplied,
            version: version,
            results: [],
            replayedIDs: replayed.map(\.mutationID),
            digests: fresh.map(MutationDigest.init),
            rows: [:],
            overwritten: [:],
            conflicts: [],
            rejections: []
        )
        // Sized for every mutation up front: a push of hundreds of rows no longer regrows its tables.
        plan.results.reserveCapacity(fresh.count)
        plan.rows.reserveCapacity(fresh.count)
        var state = rows
        state.reserveCapacity(rows.count + fresh.count)
        var used = 0
        func nextVersion(after current: Int64) -> Int64 {
            allocated.map { $0[used] } ?? current + 1
        }
        // Cells remember user and client: client ids are only unique per user.
        let writer = "\(userID):\(clientID)"

        for mutation in fresh {
            let key = RowKey(scope: mutation.scope, table: mutation.table, rowID: mutation.rowID)
            let current = state[key]
            guard let rule = tables.rule(for: mutation.table) else {
                // Callers refuse unknown tables before planning; keep the plan total anyway.
                reject(mutation, "table `\(mutation.table)` is not synced by this server", current: current, into: &plan)
                continue
            }
            if rule.policy == .lastWriteWins,
                mutation.hlc.wallMilliseconds > nowMilliseconds + maxClockDriftMilliseconds
            {
                let ahead = mutation.hlc.wallMilliseconds - nowMilliseconds
                reject(
                    mutation,
                    "the edit's clock stamp is \(ahead) ms ahead of the server (limit \(maxClockDriftMilliseconds) ms); correct the device clock",
                    current: current, into: &plan
                )
                continue
            }
            if let base = mutation.baseVersion, base > (current?.version ?? plan.version) {
                // A base the server never issued would switch off conflict detection.
                reject(mutation, "baseVersion \(base) is newer than any version of this row the server has issued", current: current, into: &plan)
                continue
            }
            if let validator = rule.validator {
                let proposed = ProposedMutation(
                    userID: userID,
                    clientID: clientID,
                    mutation: mutation,
                    currentValues: current.flatMap { $0.deleted ? nil : $0.values }
                )
                if case .reject(let reason) = validator.validate(proposed) {
                    reject(mutation, reason, current: current, into: &plan)
                    continue
                }
            }

            let outcome = RowMerge.merge(
                mutation,
                from: writer,
                into: current,
                policy: rule.policy,
                version: nextVersion(after: plan.version),
                horizon: horizon
            )
            if let row = outcome.row, row.cells.count > maxColumnsPerRow {
                reject(mutation, "the row would hold \(row.cells.count) columns; the limit is \(maxColumnsPerRow)", current: current, into: &plan)
                continue
            }
            if outcome.changed, let row = outcome.row {
                plan.version = nextVersion(after: plan.version)
                used += 1
                state[key] = row
                plan.rows[key] = row
                if !outcome.overwritten.isEmpty {
                    // Only rows that had values to keep: a push of new rows sorts no empty histories.
                    plan.overwritten[key, default: []] += outcome.overwritten
                }
            }
            let rowVersion = outcome.row?.version
            // The row as a result or a notice shows it: made only for them (a plain apply names its version alone).
            let serverRow = outcome.conflicts.isEmpty && outcome.overridden.isEmpty ? nil : outcome.row?.serverRow
            plan.results.append(
                MutationResult(
                    mutationID: mutation.mutationID,
                    status: outcome.status,
                    version: rowVersion,
                    conflicts: outcome.conflicts,
                    row: outcome.conflicts.isEmpty ? nil : serverRow
                ))
            plan.conflicts += outcome.conflicts.map {
                PushPlan.RecordedConflict(key: key, mutationID: mutation.mutationID, version: rowVersion, conflict: $0)
            }
            plan.notices += outcome.overridden.map {
                PushPlan.RecordedNotice(
                    key: key, mutationID: mutation.mutationID, userID: $0.userID, byUserID: userID, byClientID: clientID,
                    conflict: $0.conflict,
                    row: serverRow, policy: mutation.operation == .delete ? nil : rule.policy, version: rowVersion ?? plan.version
                )
            }
        }
        return plan
    }

    /// Refuses a mutation; the result carries the row as it stays, so the
    /// client can restore it when it drops the edit.
    private func reject(_ mutation: Mutation, _ reason: String, current: StoredRow?, into plan: inout PushPlan) {
        plan.results.append(
            MutationResult(
                mutationID: mutation.mutationID, status: .rejected, reason: reason, row: current.map(\.serverRow)
            ))
        plan.rejections.append(PushPlan.RecordedRejection(mutation: mutation, reason: reason))
    }
}
