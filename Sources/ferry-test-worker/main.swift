// A second OS process for Ferry's tests: it writes to the same database file
// as the test process, and the tests kill it at will. It prints one line per
// committed change, after the commit, so every id it printed must be on disk.
//
//   ferry-test-worker crash-writer <path>          insert and update rows until killed
//   ferry-test-worker timed-writer <path> <secs>   insert rows one per transaction for <secs>
//   ferry-test-worker migrate-and-hang <path>      stop forever inside migration "v2"
import Ferry
import Foundation
import GRDB

func emit(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data(("ferry-test-worker: " + message + "\n").utf8))
    exit(2)
}

/// The schema both this worker and the tests open: one synced table `item`.
func itemMigrator() -> DatabaseMigrator {
    var migrator = DatabaseMigrator()
    migrator.registerMigration("v1") { db in
        try db.execute(sql: """
            CREATE TABLE item (id TEXT PRIMARY KEY NOT NULL, writer TEXT NOT NULL, revision INTEGER NOT NULL, payload TEXT)
            """)
    }
    return migrator
}

let arguments = CommandLine.arguments.dropFirst()
guard let mode = arguments.first, arguments.count >= 2 else {
    fail("usage: ferry-test-worker crash-writer|timed-writer|migrate-and-hang <path> [seconds]")
}
let path = arguments[arguments.startIndex + 1]
let schema = FerrySchema(migrator: itemMigrator(), syncedTables: [SyncedTable("item")])

do {
    switch mode {
    case "crash-writer":
        let database = try FerryDatabase(path: path, schema: schema)
        var inserted: [String] = []
        var revisions: [String: Int] = [:]
        var step = 0
        while true {
            step += 1
            if step % 3 == 0, let id = inserted.randomElement() {
                let revision = revisions[id, default: 0] + 1
                try database.write { db in
                    try db.execute(sql: "UPDATE item SET revision = ?, payload = ? WHERE id = ?",
                                   arguments: [revision, String(repeating: "u", count: step % 200), id])
                }
                revisions[id] = revision
                emit("update \(id) \(revision)")
            } else {
                let id = UUID().uuidString
                try database.write { db in
                    try db.execute(sql: "INSERT INTO item(id, writer, revision, payload) VALUES (?, 'crash', 0, ?)",
                                   arguments: [id, String(repeating: "p", count: step % 500)])
                }
                inserted.append(id)
                emit("insert \(id)")
            }
        }
    case "timed-writer":
        guard arguments.count >= 3, let seconds = Double(arguments[arguments.startIndex + 2]) else {
            fail("timed-writer needs a duration in seconds")
        }
        let database = try FerryDatabase(path: path, schema: schema)
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            let id = UUID().uuidString
            try database.write { db in
                try db.execute(sql: "INSERT INTO item(id, writer, revision) VALUES (?, 'child', 0)", arguments: [id])
            }
            emit("insert \(id)")
        }
        let telemetry = database.telemetry.snapshot()
        emit("done busyWaits=\(telemetry.busyWaits) busyTimeouts=\(telemetry.busyTimeouts)")
    case "migrate-and-hang":
        var migrator = itemMigrator()
        migrator.registerMigration("v2") { db in
            try db.execute(sql: "CREATE TABLE extra (id INTEGER PRIMARY KEY, label TEXT)")
            for n in 0..<1000 {
                try db.execute(sql: "INSERT INTO extra(label) VALUES (?)", arguments: ["row \(n)"])
            }
            try db.execute(sql: "UPDATE item SET revision = revision + 1000")
            emit("in-migration")
            while true { sleep(60) }
        }
        _ = try FerryDatabase(path: path, schema: FerrySchema(migrator: migrator, syncedTables: [SyncedTable("item")]))
        fail("migration v2 returned; it should hang until killed")
    default:
        fail("unknown mode \(mode)")
    }
} catch {
    fail("\(error)")
}
