import FerryProtocol

/// Identifies a row in a store: rows are keyed by scope, so one scope can
/// never see, overwrite or learn of a row in another.
package struct RowKey: Hashable, Sendable, Comparable {
    package var scope: String
    package var table: String
    package var rowID: String

    package init(scope: String, table: String, rowID: String) {
        self.scope = scope
        self.table = table
        self.rowID = rowID
    }

    package static func < (lhs: RowKey, rhs: RowKey) -> Bool {
        (lhs.scope, lhs.table, lhs.rowID) < (rhs.scope, rhs.table, rhs.rowID)
    }
}

/// A column's current value and who last changed it.
package struct StoredCell: Hashable, Sendable, Codable {
    package var value: ColumnValue
    /// The server version of the mutation that set this value.
    package var version: Int64
    /// The writer's hybrid logical clock stamp, for last-write-wins.
    package var hlc: HLCTimestamp
    /// The client that wrote it: a client's later mutation never conflicts with its own earlier one.
    package var clientID: String
}

/// A value a column held before it was overwritten, kept so a conflict can
/// report the value at the mutation's base.
package struct HistoricValue: Hashable, Sendable {
    package var column: String
    /// The version that set this value.
    package var version: Int64
    package var value: ColumnValue
    /// The client that wrote it (`user:client`), when kept: for the console's
    /// row inspector, never for the merge.
    package var clientID: String?
    /// The writer's clock when it wrote the value (milliseconds since 1970), when kept.
    package var writtenAt: Int64?

    package init(column: String, version: Int64, value: ColumnValue, clientID: String? = nil, writtenAt: Int64? = nil) {
        self.column = column
        self.version = version
        self.value = value
        self.clientID = clientID
        self.writtenAt = writtenAt
    }

    /// The value a cell held, with its writer.
    package init(column: String, overwritten cell: StoredCell) {
        self.init(column: column, version: cell.version, value: cell.value, clientID: cell.clientID, writtenAt: cell.hlc.wallMilliseconds)
    }
}

/// A row as a store holds it: the input and output of a merge.
package struct StoredRow: Hashable, Sendable {
    /// The version of the last change to the row (its delete, for a tombstone).
    package var version: Int64
    package var deleted: Bool
    package var cells: [String: StoredCell]
    /// The client that made the last change.
    package var clientID: String
    /// Older values of the row's columns, oldest first.
    package var history: [HistoricValue] = []

    package init(version: Int64, deleted: Bool, cells: [String: StoredCell], clientID: String, history: [HistoricValue] = []) {
        self.version = version
        self.deleted = deleted
        self.cells = cells
        self.clientID = clientID
        self.history = history
    }

    /// The column's value as of `version`, or `nil` when it had none or the
    /// store no longer knows it (history older than the tombstone horizon).
    package func value(of column: String, at version: Int64) -> ColumnValue? {
        if let cell = cells[column], cell.version <= version {
            return cell.value
        }
        return
            history
            .filter { $0.column == column && $0.version <= version }
            .max { $0.version < $1.version }?
            .value
    }

    /// Current values, as a pull returns them.
    package var values: [String: ColumnValue] {
        cells.mapValues(\.value)
    }

    /// The newest edit stamp among the row's values.
    package var newestStamp: HLCTimestamp? {
        cells.values.map(\.hlc).max()
    }

    /// The row as a client sees it in a conflict, a rejection or a notice:
    /// a tombstone carries the values it held when deleted, from history.
    package var serverRow: ServerRow {
        guard deleted else { return ServerRow(version: version, deleted: false, values: values) }
        var last: [String: HistoricValue] = [:]
        for old in history where old.version < version && (last[old.column]?.version ?? .min) < old.version {
            last[old.column] = old
        }
        return ServerRow(version: version, deleted: true, values: last.mapValues(\.value))
    }
}
