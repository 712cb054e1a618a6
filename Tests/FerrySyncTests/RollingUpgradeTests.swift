@_spi(Benchmarks) @testable import Ferry
import FerryHTTPClient
@testable import FerryPostgres
import FerryTestSupport
import Foundation
import GRDB

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
import Testing

/// An upgrade with no downtime on PostgreSQL, as the deployment guide
/// describes it, with two real builds: an instance of the version before
/// (`scripts/build-previous-server`, one schema migration ago) is serving
/// when an instance of this version migrates the database under it; both
/// then serve devices side by side, and the old one, restarted, refuses to
/// start.
@Suite(.postgresTurns, .enabled(if: PostgresTestDatabase.shouldRun), .serialized)
struct RollingUpgradeTests {
    static let secret = "rolling-upgrade-secret-0123456789abcdef"

    /// The version before, as `scripts/build-previous-server` printed it (`scripts/test` sets it).
    static var previous: URL? { ProcessInfo.processInfo.environment["FERRY_PREVIOUS_SERVER"].map { URL(filePath: $0) } }

    @Test func theVersionBeforeServesOnWhileThisOneMigratesAndRefusesToStartAfterIt() async throws {
        let previous = try #require(
            Self.previous, "FERRY_PREVIOUS_SERVER is not set: run scripts/test, or set it to the path scripts/build-previous-server prints")
        let database = try await PostgresTestDatabase.create()
        let directory = try TemporaryDirectory()
        var processes: [ServerProcess] = []
        defer {
            for process in processes { process.stop() }
            database.dropAtEnd()
        }
        func arguments(_ name: String) -> [String] {
            ["serve", "--port", "0", "--postgres", database.url, "--pool-size", "5", "--jwt-secret", Self.secret, "--data-dir", directory.path(name)]
        }
        func serve(_ name: String, executable: URL?) async throws -> URL {
            let process = try ServerProcess(arguments(name), executable: executable)
            processes.append(process)
            let line = try await process.waitForLine(startingWith: "Ferry server listening on ")
            let url = try URL(string: String(line.dropFirst("Ferry server listening on ".count))).orThrow()
            // Ready once its migrations are done (both versions have /readyz).
            let ready = try await eventually(within: .seconds(30), every: .milliseconds(50)) {
                let answer = try? await URLSession.shared.data(from: url.appending(path: "readyz"))
                return (answer?.1 as? HTTPURLResponse)?.statusCode == 200
            }
            #expect(ready, "\(name) never became ready")
            return url
        }
        func schemaVersion() async throws -> Int {
            Int(try await database.rows("SELECT max(version)::text FROM ferry_schema_migrations").first ?? "") ?? 0
        }

        // The version before creates the database and serves a device.
        let oldURL = try await serve("old", executable: previous)
        let before = try await schemaVersion()
        #expect(before == PostgresSchema.latestVersion - 1, "the version before is one migration behind: \(before)")
        let token = try ServerProcess.token(for: "alice", secret: Self.secret, dataDirectory: directory.path("tokens"))
        func device(_ name: String, _ transport: @escaping (any SyncTransport) -> any SyncTransport) async throws -> Device {
            try await Device.make(name, user: "alice", baseURL: oldURL, directory: directory, transport: transport, token: token)
        }
        let old = HTTPSyncTransport(baseURL: oldURL, requestTimeout: .seconds(30))
        let onOld = try await device("on-old") { _ in old }
        try await onOld.database.write { db in
            for index in 0..<5 { try db.execute(sql: "INSERT INTO note (id, title, counter) VALUES (?, 'before', 0)", arguments: ["n\(index)"]) }
        }
        try await onOld.engine.sync()

        // This version starts on the same database and migrates it while the old one serves.
        let newURL = try await serve("new", executable: nil)
        #expect(try await schemaVersion() == PostgresSchema.latestVersion)
        let new = HTTPSyncTransport(baseURL: newURL, requestTimeout: .seconds(30))
        let onNew = try await device("on-new") { _ in new }
        let either = try await device("either") { _ in RandomInstance(transports: [old, new], seed: 7) }
        let devices = [onOld, onNew, either]
        for round in 0..<4 {
            for (index, device) in devices.enumerated() {
                try await device.database.write { db in
                    try db.execute(sql: "INSERT INTO note (id, title, counter) VALUES (?, 'new', ?)", arguments: ["d\(index)-r\(round)", round])
                    try db.execute(sql: "UPDATE note SET title = ?, counter = counter + 1 WHERE id = ?", arguments: ["d\(index).\(round)", "n\(round)"])
                }
            }
            for device in devices { try await device.engine.sync() }
        }
        for _ in 0..<2 {
            for device in devices { try await device.engine.sync() }
        }
        let reference = try onOld.notes()
        #expect(reference.count == 5 + 4 * devices.count, "every note written on either version is kept: \(reference.keys.sorted())")
        for device in devices {
            #expect(try device.notes() == reference)
            #expect(try await device.engine.status.pendingCount == 0)
        }

        // Restarted after the migration, the version before refuses to run on a schema it does not know.
        processes[0].stop()
        let restarted = try ServerProcess.run(arguments("old-again"), timeout: .seconds(60), executable: previous)
        #expect(restarted.status != 0, "\(restarted.output)")
        #expect(restarted.output.contains("newer than this ferry-server knows"), "\(restarted.output)")
        // This version serves on.
        try await onNew.engine.sync()
        #expect(try onNew.notes() == reference)
    }
}
