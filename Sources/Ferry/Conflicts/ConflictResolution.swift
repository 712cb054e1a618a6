import FerryProtocol

/// What settling a conflict writes, as a pure decision: the row is deleted,
/// or `set` is written into it, creating it from `fill` first when the
/// device does not hold it (a row deleted on the server, or never pulled).
///
/// `fill` is the whole row the report came with (for a deleted row, the
/// values it held when deleted), under this device's own snapshot of the
/// row for an update that lost to a delete: so a table with any number of
/// NOT NULL columns can be re-created.
enum ConflictResolution: Equatable, Sendable {
    case delete
    case write(set: [String: ColumnValue], fill: [String: ColumnValue])

    static func plan(for conflict: SyncConflict, choice: ConflictChoice) -> ConflictResolution {
        let fill = (conflict.serverRow?.values ?? [:]).merging(conflict.rowValues ?? [:]) { _, local in local }
        func column(_ value: ColumnValue?) -> [String: ColumnValue] {
            guard let name = conflict.column, let value else { return [:] }
            return [name: value]
        }
        switch (conflict.kind, choice) {
        case (.column, .mine), (.updateLostToDelete, .mine):
            return .write(set: column(conflict.mine), fill: fill)
        case (.column, .theirs), (.deleteOverrodeUpdate, .theirs):
            return .write(set: column(conflict.theirs), fill: fill)
        case (.updateLostToDelete, .theirs), (.deleteOverrodeUpdate, .mine):
            return .delete
        case (_, .merged(let values)):
            return .write(set: values, fill: fill)
        }
    }
}
