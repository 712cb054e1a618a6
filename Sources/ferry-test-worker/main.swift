// A second OS process for Ferry's tests: it writes to the same database file
// as the test process, and the tests kill it at will. It prints one line per
// committed change, after the commit, so every id it printed must be on disk.
//
//   ferry-test-worker crash-writer <path>          insert and update rows until killed
//   ferry-test-worker timed-writer <path> <secs>   insert rows one per transaction for <secs>
//   ferry-test-worker migrate-and-hang <path>      stop forever inside migration "v2"
//   ferry-test-worker attach <path> <files> <step>  add a 2 MiB attachment to row `r1`,
//                                                   killing itself (SIGKILL) at <step>:
//                                                   staged, placed, recorded, committed
//   ferry-test-worker transfer <path> <files> <server> <token> <user> upload|download <bytes>
//                                                   sync (and open every attachment); once a
//                                                   transfer has moved <bytes>, a download kills
//                                                   itself and an upload prints `paused` and hangs
//   ferry-test-worker sync-kill <path> <server> <token> <user> pull|push <k> [writes]
//                                                   make <writes> local changes (printed once
//                                                   committed), then sync, killing itself (SIGKILL)
//                                                   at the k-th statement that applies a pulled row
//                                                   (pull) or settles an outbox entry from a push
//                                                   reply (push), inside that transaction; k = 0
//                                                   never kills, and prints `synced` at the end
//   ferry-test-worker urlsession-sync <path> <server> <token> <user>
//                                                   write one item and sync it over URLSessionSyncTransport
@_spi(Testing) import Ferry
import FerryHTTPClient
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
        try db.execute(
            sql: """
                CREATE TABLE item (id TEXT PRIMARY KEY NOT NULL, writer TEXT NOT NULL, revision INTEGER NOT NULL, payload TEXT)
                """)
    }
    return migrator
}

/// Counts the traced statements a `sync-kill` run watches, once armed.
final class StatementCounter: @unchecked Sendable {
    // @unchecked: both fields are only touched under `lock`.
    private let lock = NSLock()
    private var count = 0
    private var isArmed = false

    var armed: Bool {
        get { lock.withLock { isArmed } }
        set { lock.withLock { isArmed = newValue } }
    }

    func next() -> Int {
        lock.withLock {
            count += 1; return count
        }
    }
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
                    try db.execute(
                        sql: "UPDATE item SET revision = ?, payload = ? WHERE id = ?",
                        arguments: [revision, String(repeating: "u", count: step % 200), id])
                }
                revisions[id] = revision
                emit("update \(id) \(revision)")
            } else {
                let id = UUID().uuidString
                try database.write { db in
                    try db.execute(
                        sql: "INSERT INTO item(id, writer, revision, payload) VALUES (?, 'crash', 0, ?)",
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
    case "attach":
        guard arguments.count >= 4 else { fail("attach needs <path> <files> <step>") }
        let files = URL(filePath: arguments[arguments.startIndex + 2])
        let killAt = arguments[arguments.startIndex + 3]
        var configuration = FerryConfiguration()
        configuration.attachmentsDirectory = files
        configuration.attachmentSteps = { step in
            if "\(step)" == killAt { raise(SIGKILL) }
        }
        let database = try FerryDatabase(path: path, schema: schema, configuration: configuration)
        try database.write { db in
            try db.execute(sql: "INSERT OR IGNORE INTO item(id, writer, revision) VALUES ('r1', 'attach', 0)")
        }
        let bytes = Data((0..<(2 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        let attachment = try await database.attachments.add(data: bytes, to: "item", row: "r1", name: "scan.pdf")
        emit("added \(attachment.id)")
    case "transfer":
        guard arguments.count >= 8, let killAt = Int64(arguments[arguments.startIndex + 7]),
            let server = URL(string: arguments[arguments.startIndex + 3])
        else {
            fail("transfer needs <path> <files> <server> <token> <user> upload|download <bytes>")
        }
        let direction = arguments[arguments.startIndex + 6]
        var configuration = FerryConfiguration()
        configuration.attachmentsDirectory = URL(filePath: arguments[arguments.startIndex + 2])
        configuration.attachmentSteps = { step in
            switch step {
            // An upload pauses instead: the test waits until the server holds
            // some of it (bytes read from the file may not have left yet), then kills.
            case .uploaded(let sent) where direction == "upload" && sent >= killAt:
                emit("paused \(sent)")
                while true { sleep(60) }
            case .downloaded(let held) where direction == "download" && held >= killAt: raise(SIGKILL)
            default: break
            }
        }
        let database = try FerryDatabase(path: path, schema: schema, configuration: configuration)
        var syncConfiguration = SyncConfiguration(userID: arguments[arguments.startIndex + 5])
        syncConfiguration.periodicInterval = nil
        let engine = try SyncEngine(
            database: database, transport: HTTPSyncTransport(baseURL: server),
            configuration: syncConfiguration, token: arguments[arguments.startIndex + 4])
        let summary = try await engine.sync()
        for attachment in try database.attachments.list(table: "item", row: "r1") {
            _ = try await engine.open(attachment)
        }
        emit("synced uploaded=\(summary.attachmentsUploaded)")
    case "urlsession-sync":
        // Writes an item and syncs it through URLSessionSyncTransport (libcurl
        // on Linux), which trusts only the system's CA bundle: the TLS test
        // runs this in a mount namespace where that bundle is its own CA.
        guard arguments.count >= 5, let server = URL(string: arguments[arguments.startIndex + 2]) else {
            fail("urlsession-sync needs <path> <server> <token> <user>")
        }
        let database = try FerryDatabase(path: path, schema: schema)
        try database.write { db in
            try db.execute(sql: "INSERT INTO item(id, writer, revision) VALUES ('over-urlsession', 'worker', 1)")
        }
        var syncConfiguration = SyncConfiguration(userID: arguments[arguments.startIndex + 4])
        syncConfiguration.periodicInterval = nil
        syncConfiguration.retry = RetryPolicy(initialDelay: .milliseconds(20), maximumDelay: .milliseconds(100), attemptsPerSync: 1)
        let engine = try SyncEngine(
            database: database, transport: URLSessionSyncTransport(baseURL: server, requestTimeout: .seconds(10)),
            configuration: syncConfiguration, token: arguments[arguments.startIndex + 3])
        let summary = try await engine.sync()
        emit("synced pushed=\(summary.pushed) pending=\(try database.outbox.pendingCount())")
    case "sync-kill":
        guard arguments.count >= 7, let server = URL(string: arguments[arguments.startIndex + 2]),
            let killAt = Int(arguments[arguments.startIndex + 6])
        else {
            fail("sync-kill needs <path> <server> <token> <user> pull|push <k> [writes]")
        }
        let phase = arguments[arguments.startIndex + 5]
        let writes = arguments.count >= 8 ? Int(arguments[arguments.startIndex + 7]) ?? 0 : 0
        let marker = phase == "pull" ? ["INSERT INTO \"item\"", "DELETE FROM \"item\""] : ["UPDATE \"ferry_outbox\" SET \"state\""]
        let counter = StatementCounter()
        var configuration = FerryConfiguration()
        configuration.sqlTrace = { sql in
            guard killAt > 0, counter.armed, marker.contains(where: { sql.hasPrefix($0) }) else { return }
            if counter.next() == killAt { raise(SIGKILL) }
        }
        let database = try FerryDatabase(path: path, schema: schema, configuration: configuration)
        for _ in 0..<writes {
            let existing = try database.read { db in try String.fetchOne(db, sql: "SELECT id FROM item ORDER BY random() LIMIT 1") }
            if let existing, Bool.random() {
                let revision = try database.write { db in
                    try db.execute(sql: "UPDATE item SET revision = revision + 1, writer = 'worker' WHERE id = ?", arguments: [existing])
                    return try Int.fetchOne(db, sql: "SELECT revision FROM item WHERE id = ?", arguments: [existing]) ?? 0
                }
                emit("update \(existing) \(revision)")
            } else {
                let id = UUID().uuidString
                try database.write { db in
                    try db.execute(sql: "INSERT INTO item(id, writer, revision) VALUES (?, 'worker', 0)", arguments: [id])
                }
                emit("insert \(id)")
            }
        }
        var syncConfiguration = SyncConfiguration(userID: arguments[arguments.startIndex + 4])
        syncConfiguration.periodicInterval = nil
        syncConfiguration.live = false
        syncConfiguration.pullPageSize = 5
        syncConfiguration.pushBatchSize = 4
        let engine = try SyncEngine(
            database: database, transport: HTTPSyncTransport(baseURL: server),
            configuration: syncConfiguration, token: arguments[arguments.startIndex + 3])
        counter.armed = true
        let summary = try await engine.sync()
        emit("synced pushed=\(summary.pushed) pulled=\(summary.pulled)")
    default:
        fail("unknown mode \(mode)")
    }
} catch {
    fail("\(error)")
}
