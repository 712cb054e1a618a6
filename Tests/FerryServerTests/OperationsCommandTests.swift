import FerryProtocol
import Foundation
import Testing
import FerryTestSupport

/// What an operator relies on, against the real `ferry-server` process: one
/// server per data directory, a token only from a directory a server ran
/// in, and probes that tell a load balancer when to send traffic.
@Suite(.postgresTurns, .serialized) struct OperationsCommandTests {
    static func start(_ arguments: [String], environment: [String: String] = ["FERRY_JWT_SECRET": ""]) async throws -> (ServerProcess, Int) {
        let server = try ServerProcess(["serve", "--port", "0"] + arguments, environment: environment)
        let line = try await server.waitForLine(startingWith: "Ferry server listening on http://127.0.0.1:")
        return (server, try FerryServerCommandTests.port(from: line))
    }

    static func get(_ port: Int, _ path: String) async throws -> (status: String, body: String) {
        try await EventStreamClient.request(port: port, method: "GET", path: path)
    }

    /// Polls `path` until its status line contains `status`, for at most `timeout`.
    static func waitFor(_ status: String, at path: String, port: Int, timeout: Duration = .seconds(10)) async throws -> String {
        let deadline = ContinuousClock.now + timeout
        var last = ""
        while ContinuousClock.now < deadline {
            if let answer = try? await get(port, path) {
                last = answer.status + " " + answer.body
                if answer.status.contains(status) { return last }
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        Issue.record("\(path) never answered \(status); last: \(last)")
        return last
    }

    @Test func aDataDirectoryServesOneServerAndATokenNeedsADirectoryAServerRanIn() async throws {
        let directory = try TemporaryDirectory()
        let data = directory.url.appending(path: "data").path

        let early = try ServerProcess.run(["token", "--user", "alice", "--data-dir", data], environment: ["FERRY_JWT_SECRET": ""])
        #expect(early.status != 0)
        #expect(early.output.contains("--data-dir \(data) holds no jwt-secret"), "\(early.output)")
        #expect(!FileManager.default.fileExists(atPath: data + "/jwt-secret"), "no secret made up for a server that does not exist")

        let (first, _) = try await Self.start(["--data-dir", data])
        defer { first.stop() }
        let second = try ServerProcess.run(["serve", "--port", "0", "--data-dir", data], environment: ["FERRY_JWT_SECRET": ""])
        #expect(second.status != 0)
        #expect(
            second.output.contains("another ferry-server (pid \(first.process.processIdentifier)) is serving --data-dir \(data)"),
            "\(second.output)")
        let token = try ServerProcess.run(["token", "--user", "alice", "--data-dir", data], environment: ["FERRY_JWT_SECRET": ""])
        #expect(token.status == 0, "\(token.output)")

        // Once the first has stopped (or died: the kernel drops its lock), the directory serves again.
        first.kill()
        let (again, port) = try await Self.start(["--data-dir", data])
        defer { again.stop() }
        #expect(try await Self.get(port, "/readyz").status.contains(" 200 "))
    }

    /// `/livez` answers while the process runs; `/readyz` only while the
    /// server should get traffic: from SIGTERM on it answers 503 for the
    /// drain period (6 s) while requests are still served, then the process exits.
    @Test func readinessGoesDownForTheDrainWhileLivenessStaysUp() async throws {
        let directory = try TemporaryDirectory()
        let secret = "probe-secret-0123456789abcdef-0123456789"
        let (server, port) = try await Self.start(["--data-dir", directory.url.path, "--jwt-secret", secret, "--drain-seconds", "6"])
        defer { server.stop() }
        #expect(try await Self.get(port, "/livez").status.contains(" 200 "))
        let ready = try await Self.get(port, "/readyz")
        #expect(ready.status.contains(" 200 ") && ready.body.contains(#""status":"ready""#), "\(ready)")

        let token = try ServerProcess.token(for: "alice", secret: secret, dataDirectory: directory.url.path)
        server.process.terminate()
        let draining = try await Self.waitFor(" 503 ", at: "/readyz", port: port, timeout: .seconds(4))
        #expect(draining.contains("draining"), "\(draining)")
        #expect(try await Self.get(port, "/livez").status.contains(" 200 "))
        let pulled = try await EventStreamClient.request(
            port: port, method: "POST", path: "/v1/pull", token: token,
            body: #"{"clientID":"c1","scopes":[{"scope":"user:alice"}]}"#)
        #expect(pulled.status.contains(" 200 "), "requests are still served while draining: \(pulled)")
        server.process.waitUntilExit()
        #expect(server.process.terminationReason == .exit && server.process.terminationStatus == 0)
    }

    /// On PostgreSQL, `/readyz` answers 503 while the database refuses
    /// connections, and 200 again once it is back; `/livez` stays 200.
    @Test(.enabled(if: PostgresTestDatabase.shouldRun))
    func readinessFollowsAStoreOutage() async throws {
        let database = try await PostgresTestDatabase.create()
        let directory = try TemporaryDirectory()
        let (server, port) = try await Self.start([
            "--data-dir", directory.url.path, "--postgres", database.url, "--pool-size", "2",
            "--statement-timeout", "1",
        ])
        do {
            _ = try await Self.waitFor(" 200 ", at: "/readyz", port: port)
            try await database.administer("ALTER DATABASE \(database.name) ALLOW_CONNECTIONS false")
            try await database.administer("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '\(database.name)'")
            let down = try await Self.waitFor(" 503 ", at: "/readyz", port: port, timeout: .seconds(20))
            #expect(down.contains("the store does not answer"), "\(down)")
            #expect(try await Self.get(port, "/livez").status.contains(" 200 "))
            try await database.administer("ALTER DATABASE \(database.name) ALLOW_CONNECTIONS true")
            _ = try await Self.waitFor(" 200 ", at: "/readyz", port: port, timeout: .seconds(30))
            server.stop()
            try await database.drop()
        } catch {
            server.stop()
            try? await database.administer("ALTER DATABASE \(database.name) ALLOW_CONNECTIONS true")
            try? await database.drop()
            throw error
        }
    }
}
