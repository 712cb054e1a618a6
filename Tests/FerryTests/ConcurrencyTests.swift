@testable import Ferry
import Foundation
import GRDB
import Testing
import FerryTestSupport

/// 8 writer tasks and 4 reader tasks in this process and a second OS process
/// writing the same file, for more than 5 seconds: no SQLITE_BUSY reaches a
/// caller and every committed row is there.
@Suite(.serialized) struct ConcurrencyTests {
    @Test func writersReadersAndASecondProcessShareOneFile() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("shared.sqlite")
        let database = try FerryDatabase(path: path, schema: ItemSchema.schema)
        let seconds = 5.5
        let child = try WorkerProcess(["timed-writer", path, String(seconds + 0.5)])
        let childLines = child.drainInBackground()

        let clock = ContinuousClock()
        let deadline = clock.now + .milliseconds(Int(seconds * 1000))
        let errors = Locked<[String]>([])
        let committed = Locked<[String]>([])
        let readerWaits = Locked<[Duration]>([])
        let start = clock.now

        await withTaskGroup(of: Void.self) { group in
            for writer in 0..<8 {
                group.addTask {
                    var n = 0
                    while clock.now < deadline {
                        let id = "w\(writer)-\(n)"
                        do {
                            try await database.write { db in
                                try db.execute(sql: "INSERT INTO item(id, writer, revision) VALUES (?, 'parent', 0)", arguments: [id])
                            }
                            committed.withLock { $0.append(id) }
                        } catch {
                            errors.withLock { $0.append("writer \(writer): \(error)") }
                        }
                        n += 1
                    }
                }
            }
            for reader in 0..<4 {
                group.addTask {
                    while clock.now < deadline {
                        let began = clock.now
                        do {
                            _ = try await database.read { db in
                                try Int.fetchOne(db, sql: "SELECT count(*) FROM item WHERE writer = 'child'")
                            }
                            readerWaits.withLock { $0.append(clock.now - began) }
                        } catch {
                            errors.withLock { $0.append("reader \(reader): \(error)") }
                        }
                    }
                }
            }
        }
        let elapsed = clock.now - start
        let lines = childLines()
        child.process.waitUntilExit()

        #expect(errors.withLock { $0 }.isEmpty, "\(errors.withLock { $0.prefix(5) })")
        #expect(elapsed >= .seconds(5))
        #expect(child.process.terminationStatus == 0, "child output: \(lines.suffix(3))")
        let childIDs = lines.filter { $0.hasPrefix("insert ") }.map { String($0.dropFirst("insert ".count)) }
        let parentIDs = committed.withLock { $0 }
        #expect(childIDs.count > 0)
        #expect(parentIDs.count > 0)

        let stored = try await database.read { db in try Set(String.fetchAll(db, sql: "SELECT id FROM item")) }
        #expect(Set(parentIDs).subtracting(stored).isEmpty)
        #expect(Set(childIDs).subtracting(stored).isEmpty)
        let entries = try await database.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM ferry_outbox") }
        #expect(entries == stored.count)

        let waits = DurationSummary(readerWaits.withLock { $0 })
        let telemetry = database.telemetry.snapshot()
        print(
            """
            concurrency: \(parentIDs.count) parent writes, \(childIDs.count) child writes, \(waits.count) reads in \(elapsed); \
            longest reader wait \(waits.max) (p99 \(waits.p99)); parent busy waits \(telemetry.busyWaits), \
            timeouts \(telemetry.busyTimeouts); \(lines.last ?? "")
            """)
        #expect(telemetry.busyTimeouts == 0)
    }
}
