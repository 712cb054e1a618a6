import FerryProtocol
import FerrySQLite
import Foundation
import GRDB

/// The conflicts the server reported, until the app resolves them.
///
/// ```swift
/// for try await conflicts in database.conflicts.observe() {
///     badge.count = conflicts.count
/// }
/// let conflict = try database.conflicts.list()[0]
/// try database.conflicts.resolve(conflict, with: .mine)   // an ordinary new edit, pushed at the next sync
/// ```
public struct Conflicts: Sendable {
    let database: FerryDatabase

    /// Every unresolved conflict, oldest first.
    public func list() throws -> [SyncConflict] {
        try database.read(Self.list)
    }

    /// How many conflicts await a decision.
    public func count() throws -> Int {
        try database.read(Self.count)
    }

    /// The list as an async sequence that yields after every change.
    public func observe() -> AsyncValueObservation<[SyncConflict]> {
        ValueObservation.tracking(Self.list).removeDuplicates().values(in: database.writer)
    }

    /// Settles `conflict`: writes the chosen values as an ordinary local
    /// edit (captured into the outbox, based on the server version the
    /// report came with) and removes the conflict from the list, in one
    /// transaction. The conflict is the user's, not this device's: the next
    /// sync settles it on every other device of the user that holds it.
    ///
    /// Every choice works whether this device holds the row or not: a row
    /// that is absent is re-created from the server's row the report came
    /// with (for a deleted row, the values it held when deleted), with the
    /// chosen values on top. `.mine` and `.theirs` mean, by kind:
    ///
    /// | kind | `.mine` | `.theirs` |
    /// |---|---|---|
    /// | `column` | my value | the server's value |
    /// | `updateLostToDelete` | re-create the row with my value | leave it deleted |
    /// | `deleteOverrodeUpdate` | leave it deleted | restore the row with their value |
    ///
    /// - throws: ``FerryError`` `.conflictNotFound` if it was already resolved;
    ///   `DatabaseError` if the write breaks a constraint (nothing changes).
    public func resolve(_ conflict: SyncConflict, with choice: ConflictChoice) throws {
        guard let layout = database.layouts[conflict.table] else {
            throw FerryError(.invalidSyncedTable, "table `\(conflict.table)` is no longer synced; discard the conflict instead")
        }
        try database.write { db in
            guard let record = try ConflictRecord.fetchOne(db, key: conflict.id), try record.delete(db) else {
                throw FerryError(.conflictNotFound, "conflict \(conflict.id) on `\(conflict.table)` row \(conflict.rowID) was already resolved")
            }
            try SettledNotices.settle(record, db)
            let before = try OutboxRecord.select(max(OutboxRecord.Columns.seq), as: Int64.self).fetchOne(db) ?? 0
            try Self.write(choice, for: conflict, layout: layout, db)
            let version = max(conflict.serverVersion ?? 0, conflict.serverRow?.version ?? 0)
            if version > 0 {
                // Based on the version the report showed: the resolution does not conflict again.
                typealias Columns = OutboxRecord.Columns
                try OutboxRecord.filter(Columns.seq > before).filter(row: RowKey(table: conflict.table, rowID: conflict.rowID))
                    .filter(Columns.baseVersion == nil || Columns.baseVersion < version)
                    .updateAll(db, Columns.baseVersion.set(to: version))
            }
        }
    }

    /// Removes a conflict from the list without writing anything. Like a
    /// resolution, it settles the conflict on the user's other devices.
    public func dismiss(_ conflict: SyncConflict) throws {
        try database.write { db in
            guard let record = try ConflictRecord.fetchOne(db, key: conflict.id) else { return }
            try record.delete(db)
            try SettledNotices.settle(record, db)
        }
    }

    // MARK: - Internals

    private static func write(_ choice: ConflictChoice, for conflict: SyncConflict, layout: TableLayout, _ db: Database) throws {
        let table = SQLText.identifier(layout.table.name)
        let key = SQLText.identifier(layout.primaryKey)
        let exists = try Bool.fetchOne(db, sql: "SELECT 1 FROM \(table) WHERE \(key) = ?", arguments: [conflict.rowID]) ?? false
        switch ConflictResolution.plan(for: conflict, choice: choice) {
        case .delete:
            if exists { try db.execute(sql: "DELETE FROM \(table) WHERE \(key) = ?", arguments: [conflict.rowID]) }
        case .write(let set, let fill):
            for column in set.keys where !layout.columns.contains(column) || column == layout.primaryKey {
                throw FerryError(.invalidConfiguration, "`\(conflict.table)` has no value column `\(column)`")
            }
            // Columns the server knows and this app's table does not are left out.
            let values =
                exists
                ? set
                : fill.filter { layout.columns.contains($0.key) && $0.key != layout.primaryKey }
                    .merging(set) { _, chosen in chosen }
            let columns = values.keys.sorted()
            if exists {
                guard !columns.isEmpty else { return }
                let sets = columns.map { "\(SQLText.identifier($0)) = ?" }.joined(separator: ", ")
                try db.execute(
                    sql: "UPDATE \(table) SET \(sets) WHERE \(key) = ?",
                    arguments: StatementArguments(columns.map { values[$0]!.databaseValue } + [conflict.rowID.databaseValue]))
            } else {
                let names = ([layout.primaryKey] + columns).map(SQLText.identifier).joined(separator: ", ")
                let marks = Array(repeating: "?", count: columns.count + 1).joined(separator: ", ")
                try db.execute(
                    sql: "INSERT INTO \(table) (\(names)) VALUES (\(marks))",
                    arguments: StatementArguments([conflict.rowID.databaseValue] + columns.map { values[$0]!.databaseValue }))
            }
        }
    }

    static func count(_ db: Database) throws -> Int {
        try ConflictRecord.fetchCount(db)
    }

    static func list(_ db: Database) throws -> [SyncConflict] {
        try ConflictRecord.order(ConflictRecord.Columns.id).fetchAll(db).map { try $0.conflict() }
    }
}

extension FerryDatabase {
    /// The conflicts the server reported for this device's edits.
    public var conflicts: Conflicts { Conflicts(database: self) }
}
