import FerryProtocol

/// The declaration of a table whose rows Ferry syncs.
///
/// The table must have a single TEXT primary key holding an id made on the
/// device (a UUID string). Ferry installs triggers on it that record every
/// insert, update and delete in the outbox, in the same transaction.
///
/// ```swift
/// let schema = FerrySchema(migrator: migrator, syncedTables: [
///     SyncedTable("note"),
///     SyncedTable("task", scope: .column("listScope"), conflictPolicy: .serverWins),
/// ])
/// ```
public struct SyncedTable: Sendable, Hashable {
    /// The table name, as in the database.
    public var name: String
    /// Which scope each row belongs to.
    public var scope: ScopeRule
    /// How concurrent edits of one column are settled.
    public var conflictPolicy: ConflictPolicy

    public init(_ name: String, scope: ScopeRule = .user, conflictPolicy: ConflictPolicy = .lastWriteWins) {
        self.name = name
        self.scope = scope
        self.conflictPolicy = conflictPolicy
    }
}
