@testable import FerryServer
import FerryProtocol
import Foundation
import Testing
import FerryTestSupport

/// `ferry-server` as a separate process, as an operator runs it, under
/// exhausted resources: a low open-file limit, thousands of live streams
/// opened and closed, a database that goes away before SIGTERM.
@Suite(.postgresTurns) struct ServerResourceTests {
    static let secret = "resource-test-secret-0123456789abcdef-01"

    struct Running {
        let process: ServerProcess
        let port: Int
        let data: String

        var pid: Int32 { process.process.processIdentifier }

        func token(_ user: String) throws -> String {
            try ServerProcess.token(for: user, secret: ServerResourceTests.secret, dataDirectory: data)
        }

        /// CPU seconds (user + system) the server has used so far.
        func cpuSeconds() throws -> Double {
            let stat = try String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)
            // Fields after the command name, which is in parentheses.
            let fields = stat[stat.index(after: stat.lastIndex(of: ")")!)...].split(separator: " ")
            return (Double(fields[11])! + Double(fields[12])!) / Double(sysconf(Int32(_SC_CLK_TCK)))
        }

        /// Resident memory, in bytes.
        func residentBytes() throws -> Int {
            let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
            let line = try #require(status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") })
            return try #require(Int(line.split(separator: " ", omittingEmptySubsequences: true)[1])) * 1024
        }

        func get(_ path: String, token: String? = nil) throws -> String {
            let connection = try RawConnection(port: port)
            let authorization = token.map { "Authorization: Bearer \($0)\r\n" } ?? ""
            connection.send("GET \(path) HTTP/1.1\r\nHost: x\r\n\(authorization)Connection: close\r\n\r\n")
            return connection.read(for: .seconds(5)).text
        }
    }

    static func start(_ arguments: [String] = [], launcher: [String] = [], directory: TemporaryDirectory) async throws -> Running {
        let data = directory.path("data")
        let process = try ServerProcess(["serve", "--port", "0", "--data-dir", data, "--jwt-secret", secret] + arguments, launcher: launcher)
        let line = try await process.waitForLine(startingWith: "Ferry server listening on http://127.0.0.1:")
        let port = try #require(line.split(separator: ":").last.flatMap { Int($0) })
        return Running(process: process, port: port, data: data)
    }

    static func live(_ token: String) -> String {
        "GET /v1/live?scope=user:alice HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(token)\r\n\r\n"
    }

    /// With 256 open files allowed, one user opens 1,100 live streams and
    /// then 300 bare connections: the excess is refused (429, then 503),
    /// the server stays near idle instead of spinning on `accept`, and
    /// another user is served throughout or as soon as the bare ones go.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/prlimit")))
    func underALowDescriptorLimitTheExcessIsRefusedAndOthersAreServed() async throws {
        // This process holds over a thousand sockets itself.
        try #require(DescriptorLimit.raise() >= 1500, "the test process may open too few files")
        let directory = try TemporaryDirectory()
        // 1,100 live openings at once: past the default request rate, which is not under test here.
        let server = try await Self.start(["--request-rate", "off"], launcher: ["/usr/bin/prlimit", "--nofile=256:256"], directory: directory)
        defer { server.process.stop() }
        let alice = try server.token("alice")
        let bob = try server.token("bob")

        var streams: [RawConnection] = []
        var outcomes: [String: Int] = [:]
        for _ in 0..<1100 {
            guard let connection = try? RawConnection(port: server.port) else {
                outcomes["connect failed", default: 0] += 1
                continue
            }
            connection.send(Self.live(alice))
            let head = connection.read(for: .seconds(2), untilContains: "\r\n").text
            outcomes[String(head.prefix(12)), default: 0] += 1
            // Only the accepted streams stay open; a refused one was closed by the server.
            if head.hasPrefix("HTTP/1.1 200") { streams.append(connection) }
        }
        print("1,100 live streams by one user under 256 open files: \(outcomes)")
        #expect(outcomes["HTTP/1.1 200"] == 16)
        #expect(outcomes["HTTP/1.1 429"] == 1084)

        let before = try server.cpuSeconds()
        #expect(try server.get("/healthz").hasPrefix("HTTP/1.1 200"))
        #expect(try server.get("/v1/scopes", token: bob).hasPrefix("HTTP/1.1 200"))
        try await Task.sleep(for: .seconds(2))
        let busy = try server.cpuSeconds() - before
        print("CPU while holding 16 streams and refusing 1,084: \(busy) s in 2 s")
        #expect(busy < 0.2)

        // Bare connections past the cap: refused at once with a 503, no spin.
        var bare: [RawConnection] = []
        var refused = 0
        for _ in 0..<300 {
            guard let connection = try? RawConnection(port: server.port) else { continue }
            if connection.read(for: .milliseconds(20)).text.hasPrefix("HTTP/1.1 503") { refused += 1 }
            bare.append(connection)
        }
        print("300 bare connections: \(refused) refused with 503")
        #expect(refused > 0)
        let idleStart = try server.cpuSeconds()
        try await Task.sleep(for: .seconds(2))
        let idleBusy = try server.cpuSeconds() - idleStart
        print("CPU at the connection cap: \(idleBusy) s in 2 s")
        #expect(idleBusy < 0.2)
        bare.removeAll()
        let served = ContinuousClock.now
        var answer = ""
        while ContinuousClock.now - served < .seconds(5) {
            answer = try server.get("/v1/scopes", token: bob)
            if answer.hasPrefix("HTTP/1.1 200") { break }
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(answer.hasPrefix("HTTP/1.1 200"))
        streams.removeAll()
    }

    /// Seven cycles of 500 live streams opened and closed: the subscriber
    /// gauge is back to 0 within a second of the clients closing, and the
    /// server's memory grows by at most 2 MiB a cycle (the median of six).
    @Test func repeatedCyclesOfLiveStreamsLeaveNothingBehind() async throws {
        let directory = try TemporaryDirectory()
        // One user opens 2,500 streams in seconds: past the default request rate, which is not under test here.
        let server = try await Self.start(["--max-live-streams", "1000", "--request-rate", "off"], directory: directory)
        defer { server.process.stop() }
        let alice = try server.token("alice")
        var resident: [Int] = []
        var drained: [Duration] = []
        // Ten cycles: the median of nine growths stands however the allocator steps in a few of them.
        for _ in 0..<10 {
            var streams: [RawConnection] = []
            for _ in 0..<500 {
                let connection = try RawConnection(port: server.port)
                connection.send(Self.live(alice))
                #expect(connection.read(for: .seconds(5), untilContains: "event: ready").text.contains("event: ready"))
                streams.append(connection)
            }
            #expect(try server.get("/metrics").contains("ferry_live_subscribers 500"))
            let closedAt = ContinuousClock.now
            streams.removeAll()
            while !(try server.get("/metrics").contains("ferry_live_subscribers 0")) {
                guard ContinuousClock.now - closedAt < .seconds(5) else { break }
                try await Task.sleep(for: .milliseconds(10))
            }
            drained.append(ContinuousClock.now - closedAt)
            try await Task.sleep(for: .milliseconds(200))
            resident.append(try server.residentBytes())
        }
        print("gauge back to 0 after closing: \(drained); RSS after each cycle (MB): \(resident.map { $0 >> 20 })")
        #expect(drained.allSatisfy { $0 < .seconds(1) })
        // A leak grows memory every cycle; the allocator grows it in steps now and then (two steps of
        // 3.7 and 8 MiB among four cycles once, then flat). The median growth per cycle of 500 streams
        // stays under 2 MiB (4 KiB a stream). Measured here: about 0.7 MiB a cycle, steady over 14 cycles
        // (about 1.4 KiB a stream, before this bound was set too).
        let growth = zip(resident.dropFirst(), resident).map { $0 - $1 }.sorted()
        #expect(growth[growth.count / 2] <= 2 << 20, "RSS growth per cycle: \(growth.map { $0 >> 10 }) KiB")
    }

    /// SIGTERM stops the server within its grace period (2 s here) even
    /// when its PostgreSQL has gone away.
    @Test(.enabled(if: PostgresTestDatabase.canControlCluster || PostgresTestDatabase.isRequired))
    func sigtermStopsTheServerEvenWhenPostgresIsGone() async throws {
        let database = try await PostgresTestDatabase.create()
        let directory = try TemporaryDirectory()
        let server = try await Self.start(["--postgres", database.url, "--shutdown-grace", "2"], directory: directory)
        defer { server.process.stop() }
        let alice = try server.token("alice")
        // A live stream and a pull in flight when the database goes.
        let stream = try RawConnection(port: server.port)
        stream.send(Self.live(alice))
        #expect(stream.read(for: .seconds(5), untilContains: "event: ready").text.contains("event: ready"))
        try PostgresTestDatabase.controlCluster("stop", "-m", "immediate")
        defer { try? PostgresTestDatabase.controlCluster("start") }
        let pull = try RawConnection(port: server.port)
        let body = #"{"clientID":"c1","scopes":[{"scope":"user:alice"}]}"#
        pull.send("POST /v1/pull HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(alice)\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)")
        try await Task.sleep(for: .milliseconds(200))

        let signalled = ContinuousClock.now
        server.process.process.terminate()
        while server.process.process.isRunning, ContinuousClock.now - signalled < .seconds(20) {
            try await Task.sleep(for: .milliseconds(20))
        }
        let took = ContinuousClock.now - signalled
        print("ferry-server stopped \(took) after SIGTERM with its database gone")
        #expect(!server.process.process.isRunning)
        #expect(took < .seconds(3))
        try PostgresTestDatabase.controlCluster("start")
        try? await database.drop()
    }
}
