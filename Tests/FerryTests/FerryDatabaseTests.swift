@testable import Ferry
import Foundation
import GRDB
import Logging
import Testing
import FerryTestSupport

@Suite struct FerryDatabaseTests {
    @Test func opensWithTheDocumentedDefaults() throws {
        let directory = try TemporaryDirectory()
        let database = try FerryDatabase(path: directory.path("app.sqlite"), schema: NotesAndTasks.schema)
        let pragmas = try database.writer.writeWithoutTransaction { db in
            try ["journal_mode", "synchronous", "foreign_keys", "temp_store"].map { name in
                try String.fetchOne(db, sql: "PRAGMA \(name)")
            }
        }
        #expect(pragmas == ["wal", "1", "1", "2"])  // WAL, NORMAL, ON, MEMORY
        #expect(database.writer.configuration.maximumReaderCount == 5)
        #expect(database.writer is DatabasePool)
        let readerTempStore = try database.read { db in try Int.fetchOne(db, sql: "PRAGMA temp_store") }
        #expect(readerTempStore == 2)
        #expect(try database.read { db in try Bool.fetchOne(db, sql: "SELECT 1 FROM ferry_migrations") } == true)
        #expect(UUID(uuidString: try database.clientID) != nil)
    }

    @Test func closeReleasesTheFileAndLaterUseThrows() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("app.sqlite")
        let database = try FerryDatabase(path: path, schema: NotesAndTasks.schema)
        try database.write { db in try db.execute(sql: "INSERT INTO note(id, title) VALUES ('1', 'kept')") }
        try database.close()
        #expect(throws: (any Error).self) { try database.read { db in try Int.fetchOne(db, sql: "SELECT 1") } }
        #expect(throws: (any Error).self) { try database.write { db in try db.execute(sql: "DELETE FROM note") } }

        let reopened = try FerryDatabase(path: path, schema: NotesAndTasks.schema)
        #expect(try reopened.read { db in try String.fetchOne(db, sql: "SELECT title FROM note") } == "kept")
    }

    @Test func settingsAreConfigurable() throws {
        let directory = try TemporaryDirectory()
        var configuration = FerryConfiguration()
        configuration.synchronous = .full
        configuration.maximumReaderCount = 2
        let database = try FerryDatabase(path: directory.path("app.sqlite"), schema: NotesAndTasks.schema, configuration: configuration)
        let synchronous = try database.writer.writeWithoutTransaction { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") }
        #expect(synchronous == 2)
        #expect(database.writer.configuration.maximumReaderCount == 2)

        configuration.maximumReaderCount = 0
        #expect(throws: FerryError.self) {
            try FerryDatabase(path: directory.path("other.sqlite"), schema: NotesAndTasks.schema, configuration: configuration)
        }
    }

    @Test func theClientIDSurvivesReopening() throws {
        let directory = try TemporaryDirectory()
        let first = try FerryDatabase(path: directory.path("app.sqlite"), schema: NotesAndTasks.schema).clientID
        let second = try FerryDatabase(path: directory.path("app.sqlite"), schema: NotesAndTasks.schema).clientID
        #expect(first == second)
        let other = try NotesAndTasks.inMemory().clientID
        #expect(other != first)
    }

    @Test func aWriteBlockedByAnotherConnectionWaitsThenFailsAtTheBusyTimeout() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("app.sqlite")
        var configuration = FerryConfiguration()
        configuration.busyTimeout = .milliseconds(200)
        let database = try FerryDatabase(path: path, schema: NotesAndTasks.schema, configuration: configuration)
        // Another connection (as another process would) holds the write lock throughout.
        let other = try DatabaseQueue(path: path)
        try other.writeWithoutTransaction { db in
            try db.execute(sql: "BEGIN IMMEDIATE")
            let start = ContinuousClock.now
            let error = #expect(throws: DatabaseError.self) {
                try database.write { db in try db.execute(sql: "INSERT INTO local_draft(text) VALUES ('x')") }
            }
            #expect(error?.resultCode == .SQLITE_BUSY)
            #expect(ContinuousClock.now - start >= .milliseconds(200))
            try db.execute(sql: "ROLLBACK")
        }
        let telemetry = database.telemetry.snapshot()
        #expect(telemetry.busyWaits == 1)
        #expect(telemetry.busyTimeouts == 1)
        // Once the lock is free the same write goes through.
        try database.write { db in try db.execute(sql: "INSERT INTO local_draft(text) VALUES ('x')") }
    }

    @Test func busyWaitScheduleMatchesSQLites() {
        let schedule = BusyWaitSchedule(timeoutMilliseconds: 5_000)
        #expect((0..<5).map { schedule.delay(attempt: $0) } == [1, 2, 5, 10, 15])
        var total = 0, attempt = 0
        while let delay = schedule.delay(attempt: attempt) {
            total += delay
            attempt += 1
        }
        #expect(total == 5_000)
        #expect(BusyWaitSchedule(timeoutMilliseconds: 0).delay(attempt: 0) == nil)
    }

    @Test func transactionsAreTimedAndLongWritesAreLoggedWithTheirConnection() throws {
        let entries = Locked<[RecordingLogHandler.Entry]>([])
        var configuration = FerryConfiguration()
        configuration.logger = Logger(label: "test") { _ in RecordingLogHandler(entries: entries) }
        configuration.longTransactionThreshold = .milliseconds(30)
        let directory = try TemporaryDirectory()
        let database = try FerryDatabase(path: directory.path("app.sqlite"), schema: NotesAndTasks.schema, configuration: configuration)
        for n in 0..<20 {
            try database.write { db in try db.execute(sql: "INSERT INTO note(id, title) VALUES (?, 'x')", arguments: ["n\(n)"]) }
        }
        _ = try database.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM note") }
        // A transaction held open past the threshold (the wait is the subject, not a timing crutch).
        try database.write { _ in Thread.sleep(forTimeInterval: 0.05) }
        let snapshot = database.telemetry.snapshot()
        #expect(snapshot.writes.count == 21)
        #expect(snapshot.reads.count == 1)
        #expect(snapshot.writes.p50 <= snapshot.writes.p95)
        #expect(snapshot.writes.p95 <= snapshot.writes.p99)
        #expect(snapshot.writes.max >= .milliseconds(50))
        #expect(snapshot.longWriteTransactions == 1)
        let warnings = entries.withLock { $0 }.filter { $0.level == .warning }
        #expect(warnings.count == 1)
        #expect(warnings.first?.metadata["connection"]?.contains("ferry") == true)
    }

    @Test func percentilesUseNearestRank() {
        let summary = DurationSummary((1...100).map { Duration.milliseconds($0) })
        #expect(summary.p50 == .milliseconds(50))
        #expect(summary.p95 == .milliseconds(95))
        #expect(summary.p99 == .milliseconds(99))
        #expect(summary.max == .milliseconds(100))
        #expect(DurationSummary([]).count == 0)
    }

    @Test func maintenanceCheckpointsOptimizesAndVacuums() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("app.sqlite")
        let database = try FerryDatabase(path: path, schema: NotesAndTasks.schema)
        try database.write { db in
            for n in 0..<500 {
                try db.execute(
                    sql: "INSERT INTO note(id, title, body) VALUES (?, 'x', ?)",
                    arguments: ["n\(n)", String(repeating: "b", count: 1000)])
            }
        }
        let walSize = { (try? FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int) ?? -1 }
        #expect(walSize() > 0)
        try database.checkpoint()
        #expect(walSize() == 0)
        try database.write { db in try db.execute(sql: "DELETE FROM note") }
        try database.optimize()
        try database.checkpoint()
        let before = try database.read { db in try Int.fetchOne(db, sql: "PRAGMA page_count") }
        try database.vacuum()
        let after = try database.read { db in try Int.fetchOne(db, sql: "PRAGMA page_count") }
        #expect(after! < before!)
    }
}
