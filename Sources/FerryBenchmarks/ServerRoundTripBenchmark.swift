import AsyncHTTPClient
import Ferry
import FerryHTTPClient
import Foundation
import GRDB
import NIOCore

/// Scenarios 5 and 6, against a release `ferry-server` process on loopback
/// (embedded SQLite store), from this process:
///
/// - live: a write on device A seen by a `ValueObservation` on device B,
///   which listens on `/v1/live`, against the floor of one loopback HTTP
///   round trip plus one SQLite commit, measured in the same run;
/// - empty pulls per second against `GET /healthz` on the same server, both
///   sent by the same HTTP client with the same concurrency; each pull is
///   a caught-up device's (the cursors its first pull returned).
public struct ServerRoundTripBenchmark: Sendable {
    public var liveEdits: Int
    public var loadSeconds = 4
    public var concurrency = 16

    public init(liveEdits: Int = 1000) {
        self.liveEdits = liveEdits
    }

    struct Server {
        let process: Process
        let url: URL
        let token: String
        let data: String
    }

    static func startServer(in directory: URL, name: String, arguments: [String] = []) throws -> Server {
        let binary = try InitialSyncBenchmark.sibling("ferry-server")
        let data = directory.appendingPathComponent(name).path
        let process = Process()
        process.executableURL = binary
        // Rate limits off: one bench user sends what a thousand devices would, to find the machine's limit.
        let unlimited = ["--push-rate", "off", "--request-rate", "off", "--blob-byte-rate", "off"]
        process.arguments = ["serve", "--port", "0", "--data-dir", data, "--jwt-secret", InitialSyncBenchmark.secret] + unlimited + arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let url = try InitialSyncBenchmark.listeningURL(output.fileHandleForReading)
        let token = try InitialSyncBenchmark.capture(binary, ["token", "--user", "bench", "--data-dir", data, "--jwt-secret", InitialSyncBenchmark.secret])
        return Server(process: process, url: url, token: token, data: data)
    }

    // MARK: Scenario 5

    public func runLive(in directory: URL) async throws -> [BenchmarkResult] {
        let server = try Self.startServer(in: directory, name: "live-server")
        defer { server.process.terminate(); server.process.waitUntilExit() }
        func device(_ name: String, live: Bool) throws -> (FerryDatabase, SyncEngine) {
            let database = try FerryDatabase(path: directory.appendingPathComponent("\(name).sqlite").path, schema: InitialSyncBenchmark.schema())
            var configuration = SyncConfiguration(userID: "bench")
            configuration.live = live
            configuration.periodicInterval = nil
            let engine = try SyncEngine(
                database: database, transport: HTTPSyncTransport(baseURL: server.url),
                configuration: configuration, token: server.token)
            return (database, engine)
        }
        let (a, engineA) = try device("live-a", live: false)
        let (b, engineB) = try device("live-b", live: true)
        try await a.write { db in try db.execute(sql: "INSERT INTO item (id, name, qty) VALUES ('live', 'v-1', 0)") }
        try await engineA.sync()
        await engineB.start()
        defer { Task { await engineB.stop() } }
        let deadline = ContinuousClock.now + .seconds(10)
        while await !engineB.status.liveConnected {
            guard ContinuousClock.now < deadline else { throw BenchmarkError("device B never connected to /v1/live") }
            try await Task.sleep(for: .milliseconds(10))
        }

        // B's observation reports each name it sees, and when: the moment B's app would show it, even while
        // A's sync (its pull after the push) is still running.
        let (seen, seenContinuation) = AsyncStream.makeStream(of: (name: String, at: ContinuousClock.Instant).self)
        let observer = Task {
            for try await name in b.observe({ db in try String.fetchOne(db, sql: "SELECT name FROM item WHERE id = 'live'") }) {
                if let name { seenContinuation.yield((name, ContinuousClock.now)) }
            }
        }
        defer { observer.cancel() }
        var iterator = seen.makeAsyncIterator()
        let clock = ContinuousClock()
        var latencies: [Duration] = []
        for edit in 0..<liveEdits {
            let expected = "v\(edit)"
            let start = clock.now
            try await a.write { db in try db.execute(sql: "UPDATE item SET name = ? WHERE id = 'live'", arguments: [expected]) }
            // The writer pushes alone (`push()`, what the background loop does while its stream is open):
            // its own change is not pulled back while B waits for it.
            try await engineA.push()
            while let seen = await iterator.next() {
                guard seen.name == expected else { continue }
                latencies.append(seen.at - start)
                break
            }
        }

        // The floor: one loopback round trip and one SQLite commit.
        let floorDatabase = try DatabaseQueue(path: directory.appendingPathComponent("floor.sqlite").path)
        try await floorDatabase.write { db in try db.execute(sql: "CREATE TABLE item (id TEXT PRIMARY KEY, name TEXT)") }
        let floors = try await withHTTPClient { client in
            var floors: [Duration] = []
            for edit in 0..<liveEdits {
                let start = clock.now
                _ = try await Self.send(client, HTTPClientRequest(url: server.url.absoluteString + "/healthz"))
                try await floorDatabase.write { db in
                    try db.execute(sql: "INSERT OR REPLACE INTO item (id, name) VALUES ('live', ?)", arguments: ["v\(edit)"])
                }
                floors.append(clock.now - start)
            }
            return floors
        }
        let p50 = percentile(latencies, 0.5), p99 = percentile(latencies, 0.99)
        let floor = percentile(floors, 0.5), floorP99 = percentile(floors, 0.99)
        return [
            BenchmarkResult(
                scenario: "live: write on A seen on B, p50 (n=\(liveEdits)) vs round trip + commit", ferry: format(p50),
                baseline: format(floor) + " floor p50", ratio: seconds(p50) / seconds(floor), goal: 3, direction: .atMost),
            BenchmarkResult(
                scenario: "live: write on A seen on B, p99 (n=\(liveEdits))", ferry: format(p99),
                baseline: format(floorP99) + " floor p99",
                ratio: seconds(p99) / seconds(floorP99), goal: .nan, direction: .atMost),
        ]
    }

    // MARK: Scenario 6

    public func runEmptyPulls(in directory: URL) async throws -> [BenchmarkResult] {
        let server = try Self.startServer(in: directory, name: "pull-server")
        defer { server.process.terminate(); server.process.waitUntilExit() }
        return try await withHTTPClient { client in
            let url = server.url.absoluteString
            let token = server.token
            let hello: @Sendable () -> HTTPClientRequest = { HTTPClientRequest(url: url + "/healthz") }
            func pull(_ body: String) -> @Sendable () -> HTTPClientRequest {
                {
                    var request = HTTPClientRequest(url: url + "/v1/pull")
                    request.method = .POST
                    request.headers.add(name: "Authorization", value: "Bearer \(token)")
                    request.headers.add(name: "Content-Type", value: "application/json")
                    request.body = .bytes(ByteBuffer(string: body))
                    return request
                }
            }
            // A device that is caught up: it sends back the cursors its first pull gave it, as every pull after
            // the first does.
            let first = try await Self.send(client, pull(#"{"clientID":"bench","scopes":[{"scope":"user:bench"}]}"#)())
            let page = try JSONDecoder().decode(PullResponse.self, from: Data(first.readableBytesView)).pages[0]
            let caughtUp = PullRequest(
                clientID: "bench", scopes: [PullRequest.ScopeCursor(scope: "user:bench", cursor: page.cursor, notices: page.noticeCursor)])
            let pull = pull(String(decoding: try JSONEncoder().encode(caughtUp), as: UTF8.self))
            var hellos: [Double] = [], pulls: [Double] = []
            for _ in 0..<2 {
                hellos.append(try await rate(client, hello))
                pulls.append(try await rate(client, pull))
            }
            let h = hellos.max() ?? 1, p = pulls.max() ?? 0
            return [
                BenchmarkResult(
                    scenario: "empty pulls vs GET /healthz, \(concurrency) concurrent, \(loadSeconds) s each (best of 2)",
                    ferry: String(format: "%.0f pulls/s", p), baseline: String(format: "%.0f req/s", h),
                    ratio: p / h, goal: 0.5, direction: .atLeast
                )
            ]
        }
    }

    /// Requests per second that `concurrency` workers complete in `loadSeconds`.
    private func rate(_ client: HTTPClient, _ request: @escaping @Sendable () -> HTTPClientRequest) async throws -> Double {
        let end = ContinuousClock.now + .seconds(loadSeconds)
        let start = ContinuousClock.now
        let done = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<concurrency {
                group.addTask {
                    var count = 0
                    while ContinuousClock.now < end {
                        _ = try await Self.send(client, request())
                        count += 1
                    }
                    return count
                }
            }
            return try await group.reduce(0, +)
        }
        return Double(done) / seconds(ContinuousClock.now - start)
    }

    static func send(_ client: HTTPClient, _ request: HTTPClientRequest) async throws -> ByteBuffer {
        let response = try await client.execute(request, timeout: .seconds(30))
        let body = try await response.body.collect(upTo: 1 << 20)
        guard response.status == .ok else { throw BenchmarkError("\(request.url) answered \(response.status)") }
        return body
    }
}
