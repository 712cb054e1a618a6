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

        // A push this version keeps as a run of results, retried through the
        // version before (which reads no runs), is acknowledged as applied and
        // applies nothing twice; this version still answers it in full.
        let stamp = HLCTimestamp(wallMilliseconds: Int64(Date().timeIntervalSince1970 * 1000), counter: 0)
        let probe = PushRequest(
            clientID: "probe",
            mutations: (1...3).map { index in
                Mutation(
                    mutationID: Int64(index), table: "note", rowID: "probe-\(index)", scope: "user:alice", operation: .upsert,
                    columns: ["title": .text("probe \(index)"), "counter": .integer(0)], baseVersion: nil, hlc: stamp)
            })
        func push(to url: URL) async throws -> PushResponse {
            var request = URLRequest(url: url.appending(path: "v1/push"))
            request.httpMethod = "POST"
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
            request.httpBody = Data(probe.jsonText().utf8)
            let (body, response) = try await URLSession.shared.data(for: request)
            #expect((response as? HTTPURLResponse)?.statusCode == 200, "\(String(decoding: body, as: UTF8.self))")
            return try JSONDecoder().decode(PushResponse.self, from: body)
        }
        let applied = try await push(to: newURL)
        #expect(applied.results.map(\.status) == [.applied, .applied, .applied])
        #expect(try await database.rows("SELECT count(*)::text FROM ferry_applied_runs WHERE client_id = 'probe'") == ["1"])
        let retriedOnOld = try await push(to: oldURL)
        #expect(retriedOnOld.lastAppliedMutationID == 3)
        #expect(retriedOnOld.results.map(\.mutationID) == [1, 2, 3])
        #expect(retriedOnOld.results.allSatisfy { $0.replayed && $0.status == .applied })
        let retriedOnNew = try await push(to: newURL)
        #expect(retriedOnNew.results.map(\.version) == applied.results.map(\.version))
        #expect(try await database.rows("SELECT count(*)::text FROM ferry_recorded_results WHERE client_id = 'probe'") == ["3"])

        for _ in 0..<2 {
            for device in devices { try await device.engine.sync() }
        }
        let reference = try onOld.notes()
        #expect(
            reference.count == 5 + 4 * devices.count + probe.mutations.count,
            "every note written on either version is kept: \(reference.keys.sorted())")
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
