@testable import Ferry
import FerryHTTPClient
import FerryTestSupport
import Foundation
import Logging
import Testing

/// Attachment transfer retries wait on the engine's clock and draw their
/// jitter from the engine's random source, so a test (or the simulation)
/// that drives the engine's time drives them too: no real sleep, and the
/// same waits run to run.
@Suite struct AttachmentRetryTests {
    @Test func retriesWaitOnTheInjectedClockWithTheInjectedJitter() async throws {
        let directory = try TemporaryDirectory()
        var configuration = FerryConfiguration()
        configuration.attachmentsDirectory = directory.url.appending(path: "files")
        let database = try FerryDatabase(
            path: directory.path("d.sqlite"), schema: SyncSchema.schema(withPriority: false),
            configuration: configuration)
        try await database.write { db in try db.execute(sql: "INSERT INTO note(id, title) VALUES ('n1', 'scan')") }
        _ = try await database.attachments.add(data: Data(repeating: 7, count: 10_000), to: "note", row: "n1")

        let time = SimTime()
        let retry = RetryPolicy(initialDelay: .seconds(2), maximumDelay: .seconds(60), attemptsPerSync: 3)
        // Nothing listens on port 1: every request fails at once, a transient failure.
        let transfer = AttachmentTransfer(
            database: database, transport: HTTPSyncTransport(baseURL: URL(string: "http://127.0.0.1:1")!, requestTimeout: .seconds(5)),
            userScope: "user:alice", retry: retry, logger: Logger(label: "test"), clock: time.clock, random: { 0.5 }
        )
        let before = time.nowMilliseconds
        let started = ContinuousClock.now
        let report = try await transfer.uploadPending(token: nil)
        #expect(report.failed == 1 && report.uploaded == 0)
        // Two waits between three attempts, each half its backoff cap: 1 s, then 2 s, all of it simulated.
        let waited = retry.delay(attempt: 0, unit: 0.5) + retry.delay(attempt: 1, unit: 0.5)
        #expect(waited == .seconds(3))
        #expect(time.nowMilliseconds - before == 3000)
        // Real waits would take 3 s; the requests themselves, on a loaded machine, well under that.
        #expect(ContinuousClock.now - started < .seconds(3), "no real sleep")
    }
}
