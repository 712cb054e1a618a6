@testable import Ferry
import Foundation
import GRDB
import Testing
import FerryTestSupport

@Suite(.serialized) struct MigrationSafetyTests {
    func seed(_ path: String) throws {
        let database = try FerryDatabase(path: path, schema: ItemSchema.schema)
        try database.write { db in
            for n in 0..<10 {
                try db.execute(sql: "INSERT INTO item(id, writer, revision, payload) VALUES (?, 'seed', 0, NULL)", arguments: ["i\(n)"])
            }
        }
    }

    func expectIntactAtV1(_ path: String) throws {
        let database = try FerryDatabase(path: path, schema: ItemSchema.schema)
        try database.read { (db: Database) throws -> Void in
            #expect(try ItemSchema.migrator().appliedMigrations(db) == ["v1"])
            #expect(try !db.tableExists("extra"))
            #expect(try Int.fetchAll(db, sql: "SELECT revision FROM item") == Array(repeating: 0, count: 10))
            #expect(try String.fetchAll(db, sql: "PRAGMA integrity_check") == ["ok"])
            #expect(try Int.fetchOne(db, sql: "SELECT count(*) FROM ferry_outbox") == 10)
        }
    }

    @Test func aMigrationThatThrowsLeavesThePreviousVersion() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("app.sqlite")
        try seed(path)
        var migrator = ItemSchema.migrator()
        struct Broken: Error {}
        migrator.registerMigration("v2") { db in
            try db.execute(sql: "CREATE TABLE extra (id INTEGER PRIMARY KEY)")
            try db.execute(sql: "UPDATE item SET revision = revision + 1000")
            throw Broken()
        }
        #expect(throws: Broken.self) {
            try FerryDatabase(path: path, schema: FerrySchema(migrator: migrator, syncedTables: [SyncedTable("item")]))
        }
        try expectIntactAtV1(path)
    }

    @Test func aProcessKilledInsideAMigrationLeavesThePreviousVersionAndTheNextLaunchCompletesIt() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("app.sqlite")
        try seed(path)
        let worker = try WorkerProcess(["migrate-and-hang", path])
        #expect(worker.readLine() == "in-migration")
        worker.kill()
        #expect(worker.process.terminationReason == .uncaughtSignal)
        try expectIntactAtV1(path)
        // The next launch runs the migration to its end.
        var migrator = ItemSchema.migrator()
        migrator.registerMigration("v2") { db in
            try db.execute(sql: "CREATE TABLE extra (id INTEGER PRIMARY KEY, label TEXT)")
            try db.execute(sql: "UPDATE item SET revision = revision + 1000")
        }
        let database = try FerryDatabase(path: path, schema: FerrySchema(migrator: migrator, syncedTables: [SyncedTable("item")]))
        try database.read { (db: Database) throws -> Void in
            #expect(try migrator.appliedMigrations(db) == ["v1", "v2"])
            #expect(try Int.fetchAll(db, sql: "SELECT DISTINCT revision FROM item") == [1000])
            #expect(try String.fetchAll(db, sql: "PRAGMA integrity_check") == ["ok"])
        }
    }

    @Test func openingAtAnOlderVersionThanTheFileIsAnError() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("app.sqlite")
        var migrator = ItemSchema.migrator()
        migrator.registerMigration("v2") { db in try db.execute(sql: "ALTER TABLE item ADD COLUMN extra TEXT") }
        _ = try FerryDatabase(path: path, schema: FerrySchema(migrator: migrator, syncedTables: [SyncedTable("item")]))
        let error = #expect(throws: FerryError.self) {
            try FerryDatabase(path: path, schema: FerrySchema(migrator: migrator, syncedTables: [SyncedTable("item")], upTo: "v1"))
        }
        #expect(error?.code == .unknownSchemaVersion)
    }
}
