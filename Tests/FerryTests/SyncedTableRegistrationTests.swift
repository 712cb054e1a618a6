import Ferry
import GRDB
import Testing

@Suite struct SyncedTableRegistrationTests {
    func message(_ createSQL: String, _ table: SyncedTable) -> String? {
        do {
            _ = try singleTableDatabase(createSQL, syncing: table)
            return nil
        } catch let error as FerryError {
            #expect(error.code == .invalidSyncedTable)
            return error.message
        } catch {
            Issue.record("unexpected error \(error)")
            return nil
        }
    }

    @Test func integerPrimaryKeyIsRefusedNamingTableAndColumn() {
        let text = message("CREATE TABLE note (id INTEGER PRIMARY KEY, title TEXT)", SyncedTable("note"))
        #expect(text == "table `note` has INTEGER primary key `id`; synced tables need a TEXT primary key holding a UUID")
    }

    @Test(arguments: [
        ("CREATE TABLE t (a TEXT, b TEXT, PRIMARY KEY (a, b))", "composite primary key (`a`, `b`)"),
        ("CREATE TABLE t (a TEXT)", "has no primary key"),
        ("CREATE TABLE t (id PRIMARY KEY)", "has untyped primary key `id`"),
        ("CREATE TABLE t (id BLOB PRIMARY KEY)", "has BLOB primary key `id`"),
        ("CREATE TABLE t (id REAL PRIMARY KEY)", "has REAL primary key `id`"),
    ])
    func otherKeysAreRefused(sql: String, expected: String) {
        let text = message(sql, SyncedTable("t"))
        #expect(text?.contains(expected) == true, "\(text ?? "no error")")
    }

    @Test(arguments: [
        "CREATE TABLE t (id TEXT PRIMARY KEY NOT NULL)",
        "CREATE TABLE t (id VARCHAR(36) PRIMARY KEY NOT NULL, v INTEGER)",
        "CREATE TABLE t (id TEXT NOT NULL, v INTEGER, PRIMARY KEY (id)) WITHOUT ROWID",
        "CREATE TABLE t (id TEXT PRIMARY KEY NOT NULL, v INTEGER) STRICT",
    ])
    func textKeysAreAccepted(sql: String) throws {
        _ = try singleTableDatabase(sql, syncing: SyncedTable("t"))
    }

    @Test func aNullableTextKeyIsRefused() {
        let text = message("CREATE TABLE t (id TEXT PRIMARY KEY, v INTEGER)", SyncedTable("t"))
        #expect(text == "table `t` has a nullable primary key `id`; declare it `TEXT PRIMARY KEY NOT NULL` (a row needs an id to sync)")
    }

    @Test func missingTableSaysToCreateItInAMigration() {
        let text = message("CREATE TABLE other (id TEXT PRIMARY KEY)", SyncedTable("note"))
        #expect(text == "synced table `note` does not exist; create it in a migration before declaring it synced")
    }

    @Test func missingScopeColumnIsRefused() {
        let text = message("CREATE TABLE t (id TEXT PRIMARY KEY NOT NULL)", SyncedTable("t", scope: .column("list")))
        #expect(text?.contains("takes its scope from column `list`, which it does not have") == true)
    }

    @Test func reservedNamesAndDuplicatesAreRefused() throws {
        #expect(message("CREATE TABLE ferry_x (id TEXT PRIMARY KEY NOT NULL)", SyncedTable("ferry_x"))?.contains("reserved") == true)
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in try db.execute(sql: "CREATE TABLE t (id TEXT PRIMARY KEY NOT NULL)") }
        #expect(throws: FerryError.self) {
            try FerryDatabase(
                writer: DatabaseQueue(),
                schema: FerrySchema(migrator: migrator, syncedTables: [SyncedTable("t"), SyncedTable("T")]))
        }
    }

    @Test func scopesAreKept() throws {
        let database = try NotesAndTasks.inMemory()
        #expect(database.syncedTables.map(\.scope) == [.user, .column("listScope")])
    }
}
