import Ferry
import GRDB

/// An in-memory database whose one migration runs `createSQL`, syncing `table`.
func singleTableDatabase(_ createSQL: String, syncing table: SyncedTable) throws -> FerryDatabase {
    var migrator = DatabaseMigrator()
    migrator.registerMigration("v1") { db in try db.execute(sql: createSQL) }
    return try FerryDatabase(writer: DatabaseQueue(), schema: FerrySchema(migrator: migrator, syncedTables: [table]))
}
