import FerryProtocol

/// The declaration of a table whose rows Ferry syncs.
///
/// The table must have a single TEXT primary key holding an id made on the
/// device (a UUID string). Ferry installs triggers on it that record every
/// insert, update and delete in the outbox, in the same transaction.
///
/// How concurrent edits of a column are settled is the server's decision,
/// set per table there (`FerryServerConfiguration`'s table rules, or
/// `ferry-server --policy task=serverWins`): every device of every user
/// then follows the same rule.
///
/// ```swift
/// let schema = FerrySchema(migrator: migrator, syncedTables: [
///     SyncedTable("note"),
///     SyncedTable("task", scope: .column("listScope")),
/// ])
/// ```
public struct SyncedTable: Sendable, Hashable {
    /// The table name, as in the database.
    public var name: String
    /// Which scope each row belongs to.
    public var scope: ScopeRule

    public init(_ name: String, scope: ScopeRule = .user) {
        self.name = name
        self.scope = scope
    }
}
