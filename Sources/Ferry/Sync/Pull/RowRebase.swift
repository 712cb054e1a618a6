import FerryProtocol

/// What applying one pulled row does to the local row: a pure decision.
///
/// - A row the device already knows at a newer version is left alone (a
///   page from an older cursor never rolls a row back).
/// - Pending local edits win locally until they are pushed: their columns
///   are kept, the others are taken from the server (a rebase). A pending
///   delete keeps the row deleted; a server delete keeps a row that has
///   pending edits (the push will settle it: the server reports the update
///   as lost to the delete).
/// - Columns the local table does not have are ignored; local columns the
///   server row lacks are left as they are.
enum RowRebase {
    /// The local edits of one row not yet acknowledged.
    enum Pending: Equatable, Sendable {
        case none
        /// Pending changes to these columns.
        case columns(Set<String>)
        /// A pending insert: every column is the device's.
        case allColumns
        /// A pending delete.
        case deleted
    }

    enum Plan: Equatable, Sendable {
        /// Nothing to write; `recordVersion` says whether the row's known
        /// server version still moves up to the pulled one.
        case keep(recordVersion: Bool)
        /// Delete the local row.
        case delete
        /// Insert or update the row with these values (primary key excluded).
        case write([String: ColumnValue])
    }

    static func plan(
        _ change: RowChange, pending: Pending, knownVersion: Int64?,
        columns: [String], primaryKey: String
    ) -> Plan {
        if let knownVersion, knownVersion > change.version {
            return .keep(recordVersion: false)
        }
        if change.deleted {
            return pending == .none ? .delete : .keep(recordVersion: true)
        }
        let protected: Set<String>
        switch pending {
        case .deleted, .allColumns: return .keep(recordVersion: true)
        case .columns(let columns): protected = columns
        case .none: protected = []
        }
        if protected.isEmpty, change.values.keys.allSatisfy({ $0 != primaryKey && columns.contains($0) }) {
            // The common case: every pulled column is a local one, none pending.
            return .write(change.values)
        }
        var values: [String: ColumnValue] = [:]
        values.reserveCapacity(columns.count)
        for column in columns where column != primaryKey && !protected.contains(column) {
            if let value = change.values[column] { values[column] = value }
        }
        return .write(values)
    }

    /// The pending state of a row from its pending outbox entries, in order.
    static func pending(_ entries: [(operation: OutboxEntry.Operation, columns: Set<String>?)]) -> Pending {
        var state = Pending.none
        for entry in entries {
            switch entry.operation {
            case .delete: state = .deleted
            case .insert: state = .allColumns
            case .update:
                switch state {
                case .none: state = entry.columns.map(Pending.columns) ?? .allColumns
                case .columns(let columns): state = entry.columns.map { .columns(columns.union($0)) } ?? .allColumns
                case .allColumns, .deleted: state = state == .deleted ? .allColumns : state
                }
            }
        }
        return state
    }
}
