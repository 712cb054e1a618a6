import AsyncHTTPClient
@testable import Ferry
import FerryProtocol
import FerryServer
import Foundation
import NIOCore
import NIOHTTP1
import Testing
import FerryTestSupport

/// Per-user rate limits, against the real server: a user over their bucket
/// gets 429 with `Retry-After` and costs the others nothing, and the engine
/// waits a limit out and loses nothing.
@Suite(.serialized) struct RateLimitTests {
    static let secret = "rate-limit-secret-0123456789abcdef-0123"

    struct Answer: Sendable {
        var status: Int
        var retryAfter: String?
        var body: String
    }

    static func pull(_ port: Int, token: String, user: String) async throws -> Answer {
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)/v1/pull")
        request.method = .POST
        request.headers.add(name: "Authorization", value: "Bearer \(token)")
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(ByteBuffer(string: #"{"clientID":"c1","scopes":[{"scope":"user:\#(user)"}]}"#))
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
        let body = try await response.body.collect(upTo: 1 << 20)
        return Answer(status: Int(response.status.code), retryAfter: response.headers.first(name: "Retry-After"), body: String(buffer: body))
    }

    /// `count` pulls by `user`, one every `pace`: each one's latency.
    static func latencies(_ port: Int, token: String, user: String, count: Int, pace: Duration) async throws -> [Duration] {
        var latencies: [Duration] = []
        for _ in 0..<count {
            let started = ContinuousClock.now
            let answer = try await pull(port, token: token, user: user)
            latencies.append(started.duration(to: .now))
            #expect(answer.status == 200, "\(answer)")
            try await Task.sleep(until: started + pace)
        }
        return latencies
    }

    static func p99(_ values: [Duration]) -> Duration {
        let sorted = values.sorted()
        return sorted[max(0, Int((Double(sorted.count) * 0.99).rounded(.up)) - 1)]
    }

    /// Mallory's flood: four threads of keep-alive pulls as fast as they
    /// go, for `seconds`; prints the count of each status, and the last refusal.
    static let flooder = #"""
        import http.client, json, sys, threading, time
        port, token, seconds = int(sys.argv[1]), sys.argv[2], float(sys.argv[3])
        counts, last, lock = {}, {}, threading.Lock()
        body = json.dumps({"clientID": "m1", "scopes": [{"scope": "user:mallory"}]})
        headers = {"Authorization": "Bearer " + token, "Content-Type": "application/json"}
        def flood():
            connection = http.client.HTTPConnection("127.0.0.1", port)
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                connection.request("POST", "/v1/pull", body, headers)
                response = connection.getresponse()
                text = response.read().decode()
                with lock:
                    counts[response.status] = counts.get(response.status, 0) + 1
                    if response.status == 429:
                        last.update(retryAfter=response.getheader("Retry-After"), body=text)
        threads = [threading.Thread(target=flood) for _ in range(4)]
        for thread in threads: thread.start()
        for thread in threads: thread.join()
        print(json.dumps({"counts": counts, "last": last}))
        """#

    struct FloodReport: Decodable {
        var counts: [String: Int]
        var last: [String: String?]
    }

    /// Mallory floods from another process while Alice pulls at her usual
    /// pace. The server refuses it, then holds each request that ignored the
    /// `Retry-After` it was given; Alice sees the latency she sees with nobody flooding. Rounds
    /// alternate quiet and flooded, so the machine's own noise falls on
    /// both. The flooder runs at the lowest CPU priority (`nice 19`): on a
    /// two-core machine it would otherwise take Alice's test client's CPU,
    /// which says nothing about the server; the server still gets more than
    /// a thousand of its requests a second.
    @Test func aFloodingUserGets429WhileAnotherUsersLatencyHolds() async throws {
        let directory = try TemporaryDirectory()
        let data = directory.path("data")
        let server = try ServerProcess(["serve", "--port", "0", "--data-dir", data, "--jwt-secret", Self.secret, "--request-rate", "100/100"])
        defer { server.stop() }
        let line = try await server.waitForLine(startingWith: "Ferry server listening on http://127.0.0.1:")
        let port = try #require(Int(line.split(separator: ":").last ?? ""))
        let alice = try ServerProcess.token(for: "alice", secret: Self.secret, dataDirectory: data)
        let mallory = try ServerProcess.token(for: "mallory", secret: Self.secret, dataDirectory: data)
        _ = try await Self.latencies(port, token: alice, user: "alice", count: 20, pace: .milliseconds(15))

        var quiet: [Duration] = []
        var flooded: [Duration] = []
        var counts: [String: Int] = [:]
        var refusal: [String: String?] = [:]
        for _ in 0..<4 {
            quiet += try await Self.latencies(port, token: alice, user: "alice", count: 80, pace: .milliseconds(15))
            let flood = Process()
            flood.executableURL = URL(filePath: "/usr/bin/nice")
            flood.arguments = ["-n", "19", "python3", "-c", Self.flooder, String(port), mallory, "1.8"]
            let output = Pipe()
            flood.standardOutput = output
            try flood.run()
            defer { if flood.isRunning { kill(flood.processIdentifier, SIGKILL) } }
            try await Task.sleep(for: .milliseconds(300))
            flooded += try await Self.latencies(port, token: alice, user: "alice", count: 80, pace: .milliseconds(15))
            let printed = output.fileHandleForReading.readDataToEndOfFile()
            flood.waitUntilExit()
            let report = try JSONDecoder().decode(FloodReport.self, from: printed)
            counts.merge(report.counts, uniquingKeysWith: +)
            refusal = report.last.isEmpty ? refusal : report.last
        }
        let (quietP99, floodedP99) = (Self.p99(quiet), Self.p99(flooded))
        print("rate limit: mallory \(counts); alice p99 quiet \(quietP99), flooded \(floodedP99)")
        // Refused, then held each time it came back too soon: at most its rate (with a second's
        // slack per round), and a few hundred requests in all where it would have sent thousands.
        #expect(counts["429", default: 0] >= 4, "\(counts)")
        #expect(counts["200", default: 0] <= 100 + 4 * 100 * 3, "\(counts)")
        #expect(Set(counts.keys).isSubset(of: ["200", "429"]), "\(counts)")
        #expect(refusal["retryAfter"] == "1", "\(refusal)")
        let body = (refusal["body"] ?? nil) ?? ""
        #expect(body.contains(#""code":"tooManyRequests""#) && body.contains("100/100 a second/burst"), "\(body)")
        // 1.5× the quiet figure, with 5 ms for a scheduling blip on a shared two-core machine.
        #expect(floodedP99 <= quietP99 * 1.5 + .milliseconds(5), "alice's p99: \(quietP99) quiet, \(floodedP99) while mallory floods")

        var metrics = HTTPClientRequest(url: "http://127.0.0.1:\(port)/metrics")
        metrics.method = .GET
        let text = String(buffer: try await HTTPClient.shared.execute(metrics, timeout: .seconds(10)).body.collect(upTo: 1 << 22))
        #expect(
            text.contains(#"ferry_rate_limited_total{kind="request"} \#(counts["429", default: 0])"#),
            "\(text.split(separator: "\n").filter { $0.contains("rate_limited") })")
    }

    /// A device back with 12 edits pushes one a batch against a server that
    /// allows four pushes a second: the sync waits out every 429 and ends
    /// with everything on the server, none refused or set aside.
    @Test func theEngineWaitsOutARateLimitAndPushesEverything() async throws {
        let paced: (inout FerryServerConfiguration) -> Void = { $0.rateLimits.pushes = RateLimit(perSecond: 4, burst: 4) }
        try await SyncServer.with(.sqlite, configure: paced) { server in
            let directory = try TemporaryDirectory()
            // Two attempts a sync: without the free wait after progress, the second 429 would end it.
            let device = try await Device.make("a", user: "alice", server: server, directory: directory) {
                $0.pushBatchSize = 1
                $0.retry = RetryPolicy(initialDelay: .milliseconds(20), maximumDelay: .milliseconds(200), attemptsPerSync: 2)
            }
            for index in 0..<12 { try device.execute("INSERT INTO note(id, title) VALUES (?, ?)", ["n\(index)", "paced"]) }
            let started = ContinuousClock.now
            let summary = try await device.engine.sync()
            let took = started.duration(to: .now)
            #expect(summary.pushed == 12 && summary.rejected == 0, "\(summary)")
            #expect(try await server.rows("note", in: "user:alice").count == 12)
            // Four at once, then four a second: at least two seconds of waiting.
            #expect(took >= .seconds(1.5), "\(took)")
        }
    }
}
