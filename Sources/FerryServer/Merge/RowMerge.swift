import FerryProtocol

/// The field-level merge of one mutation into one row: ARCHITECTURE.md's server
/// semantics 3 and 4 as a pure function.
///
/// - A column conflicts only if another client changed it after the
///   mutation's base version and it holds a different value. Other columns
///   apply.
/// - Conflicting columns follow the table's policy; whatever the policy
///   discards is returned as a ``Conflict`` with base, local and server values.
/// - A delete wins over a concurrent update; an update of a deleted row is
///   a conflict unless its base is at or after the delete.
enum RowMerge {
    struct Outcome: Hashable, Sendable {
        /// The row after the mutation (`nil`: there is still no row).
        var row: StoredRow?
        var status: MutationResult.Status
        var conflicts: [Conflict]
        /// The mutation changed the row, so it consumed `version`.
        var changed: Bool
        /// Values overwritten by this mutation, for later base lookups.
        var overwritten: [HistoricValue]
        /// Other writers' applied values this mutation discarded without
        /// having seen them: each writer gets a notice.
        var overridden: [OverriddenValue] = []
    }

    /// Merges `mutation`, sent by `clientID`, into `current`.
    ///
    /// - Parameters:
    ///   - clientID: the writer's identity (user and client: a client's later
    ///     mutation never conflicts with its own earlier one).
    ///   - version: the store version the row takes if it changes.
    ///   - horizon: the tombstone horizon; tombstones at or below it are collected.
    static func merge(
        _ mutation: Mutation,
        from clientID: String,
        into current: StoredRow?,
        policy: ConflictPolicy,
        version: Int64,
        horizon: Int64 = 0
    ) -> Outcome {
        switch mutation.operation {
        case .upsert:
            upsert(mutation, from: clientID, into: current, policy: policy, version: version, horizon: horizon)
        case .delete:
            delete(mutation, from: clientID, into: current, version: version)
        }
    }

    private static func upsert(
        _ mutation: Mutation,
        from clientID: String,
        into current: StoredRow?,
        policy: ConflictPolicy,
        version: Int64,
        horizon: Int64
    ) -> Outcome {
        func fresh(history: [HistoricValue]) -> StoredRow {
            StoredRow(
                version: version,
                deleted: false,
                cells: mutation.columns.mapValues {
                    StoredCell(value: $0, version: version, hlc: mutation.hlc, clientID: clientID)
                },
                clientID: clientID,
                history: history
            )
        }

        guard let row = current else {
            if let base = mutation.baseVersion, base < horizon {
                // The client saw this row at `base`, and it is gone: deleted,
                // and its tombstone collected. The delete still wins. (A base
                // at or past the horizon is past the collected delete: the
                // client saw it, so it may re-create the row.)
                return lostToDelete(mutation, row: nil, base: base)
            }
            return Outcome(row: fresh(history: []), status: .applied, conflicts: [], changed: true, overwritten: [])
        }

        if row.deleted {
            let sawDelete = mutation.baseVersion.map { $0 >= row.version } ?? false
            if sawDelete || row.clientID == clientID {
                // Re-created by a client that knew of the delete. Columns it
                // does not name (an older app version's device does not know
                // them) keep the values the row held when it was deleted.
                var recreated = fresh(history: row.history)
                for (column, value) in row.serverRow.values where mutation.columns[column] == nil {
                    recreated.cells[column] = StoredCell(value: value, version: version, hlc: mutation.hlc, clientID: clientID)
                }
                return Outcome(row: recreated, status: .applied, conflicts: [], changed: true, overwritten: [])
            }
            return lostToDelete(mutation, row: row, base: mutation.baseVersion ?? 0)
        }

        let base = mutation.baseVersion ?? 0
        var merged = row
        var conflicts: [Conflict] = []
        var overwritten: [HistoricValue] = []
        var overridden: [OverriddenValue] = []
        var changed = false

        func set(_ column: String, _ value: ColumnValue) {
            if let old = merged.cells[column] {
                overwritten.append(HistoricValue(column: column, overwritten: old))
            }
            merged.cells[column] = StoredCell(value: value, version: version, hlc: mutation.hlc, clientID: clientID)
            changed = true
        }

        for (column, local) in mutation.columns.sorted(by: { $0.key < $1.key }) {
            guard let cell = row.cells[column] else {
                set(column, local)
                continue
            }
            if cell.value == local {
                continue
            }
            let concurrent = cell.version > base && cell.clientID != clientID
            guard concurrent else {
                set(column, local)
                continue
            }
            func conflict(_ resolution: Conflict.Resolution) -> Conflict {
                Conflict(
                    kind: .column,
                    column: column,
                    base: row.value(of: column, at: base),
                    local: local,
                    server: cell.value,
                    resolution: resolution
                )
            }
            /// The mutation's value replaces the other writer's: they are told.
            func override() {
                set(column, local)
                conflicts.append(conflict(.keptLocal))
                overridden.append(
                    OverriddenValue(
                        writer: cell.clientID,
                        conflict: Conflict(
                            kind: .column, column: column, base: row.value(of: column, at: base),
                            local: cell.value, server: local, resolution: .keptServer
                        )
                    ))
            }
            switch policy {
            case .lastWriteWins:
                if mutation.hlc > cell.hlc {
                    override()
                } else {
                    conflicts.append(conflict(.keptServer))
                }
            case .serverWins:
                conflicts.append(conflict(.keptServer))
            case .clientWins:
                override()
            case .manual:
                conflicts.append(conflict(.unresolved))
            }
        }

        if changed {
            merged.version = version
            merged.clientID = clientID
            merged.history += overwritten
        }
        let othersChanged = row.cells.values.contains { $0.version > base && $0.clientID != clientID }
        let status: MutationResult.Status = !conflicts.isEmpty ? .conflict : (othersChanged ? .merged : .applied)
        return Outcome(
            row: merged, status: status, conflicts: conflicts, changed: changed, overwritten: overwritten, overridden: overridden
        )
    }

    private static func delete(
        _ mutation: Mutation,
        from clientID: String,
        into current: StoredRow?,
        version: Int64
    ) -> Outcome {
        guard let row = current, !row.deleted else {
            return Outcome(row: current, status: .applied, conflicts: [], changed: false, overwritten: [])
        }
        let base = mutation.baseVersion ?? 0
        let unseen = row.cells
            .filter { $0.value.version > base && $0.value.clientID != clientID }
            .sorted { $0.key < $1.key }
        let conflicts = unseen.map { column, cell in
            Conflict(
                kind: .deleteOverrodeUpdate,
                column: column,
                base: row.value(of: column, at: base),
                local: nil,
                server: cell.value,
                resolution: .keptLocal
            )
        }
        // Each writer of an unseen value learns that their update lost to this delete.
        let overridden = unseen.map { column, cell in
            OverriddenValue(
                writer: cell.clientID,
                conflict: Conflict(
                    kind: .updateLostToDelete, column: column, base: row.value(of: column, at: base),
                    local: cell.value, server: nil, resolution: .keptServer
                )
            )
        }
        let overwritten = row.cells
            .sorted { $0.key < $1.key }
            .map { HistoricValue(column: $0.key, overwritten: $0.value) }
        let tombstone = StoredRow(
            version: version,
            deleted: true,
            cells: [:],
            clientID: clientID,
            history: row.history + overwritten
        )
        return Outcome(
            row: tombstone,
            status: conflicts.isEmpty ? .applied : .conflict,
            conflicts: conflicts,
            changed: true,
            overwritten: overwritten,
            overridden: overridden
        )
    }

    /// An update that lost to a delete: every column it carried is recorded.
    private static func lostToDelete(_ mutation: Mutation, row: StoredRow?, base: Int64) -> Outcome {
        var conflicts = mutation.columns.sorted { $0.key < $1.key }.map { column, local in
            Conflict(
                kind: .updateLostToDelete,
                column: column,
                base: row?.value(of: column, at: base),
                local: local,
                server: nil,
                resolution: .keptServer
            )
        }
        if conflicts.isEmpty {
            conflicts = [Conflict(kind: .updateLostToDelete, column: nil, base: nil, local: nil, server: nil, resolution: .keptServer)]
        }
        return Outcome(row: row, status: .conflict, conflicts: conflicts, changed: false, overwritten: [])
    }
}
