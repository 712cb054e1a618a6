import GRDB

/// The app's schema as Ferry needs to know it: the app's own migrations and
/// which of its tables sync.
///
/// The app owns its tables and migrations (a GRDB `DatabaseMigrator`). Ferry
/// runs them when it opens the database — each in its own transaction, with
/// change capture switched off, since every device runs the same migrations —
/// and then (re)installs the capture triggers for the tables' current shape.
///
/// ```swift
/// var migrator = DatabaseMigrator()
/// migrator.registerMigration("v1") { db in
///     try db.create(table: "note") { t in
///         t.primaryKey("id", .text)
///         t.column("title", .text).notNull()
///     }
/// }
/// let schema = FerrySchema(migrator: migrator, syncedTables: [SyncedTable("note")])
/// ```
public struct FerrySchema: Sendable {
    /// The app's migrations.
    public var migrator: DatabaseMigrator
    /// The tables Ferry syncs; each needs a TEXT primary key.
    public var syncedTables: [SyncedTable]
    /// Migrate only up to this migration identifier (for tests of older
    /// versions); `nil` runs every migration.
    public var targetVersion: String?

    public init(migrator: DatabaseMigrator = DatabaseMigrator(), syncedTables: [SyncedTable], upTo targetVersion: String? = nil) {
        self.migrator = migrator
        self.syncedTables = syncedTables
        self.targetVersion = targetVersion
    }

    /// The identifier of the migration this schema ends at.
    public var version: String? {
        targetVersion ?? migrator.migrations.last
    }

    /// Whether every migration up to ``version`` is applied.
    func isMigrated(_ db: Database) throws -> Bool {
        guard let version else { return true }
        guard try db.tableExists("grdb_migrations") else { return false }
        return try migrator.appliedIdentifiers(db).contains(version)
    }

    /// Runs the app's migrations, each in its own transaction.
    func migrate(_ writer: any DatabaseWriter) throws {
        guard let version else { return }
        let known = migrator.migrations
        guard let targetIndex = known.firstIndex(of: version) else {
            throw FerryError(
                .unknownSchemaVersion,
                "schema version `\(version)` is not a migration of the migrator (known: \(known.joined(separator: ", ")))")
        }
        let applied = try writer.read { db in try migrator.appliedMigrations(db) }
        if let last = applied.last, let lastIndex = known.firstIndex(of: last), lastIndex > targetIndex {
            throw FerryError(
                .unknownSchemaVersion,
                "the database is already migrated to `\(last)`, beyond the requested schema version `\(version)`")
        }
        try migrator.migrate(writer, upTo: version)
    }
}
