import FerryProtocol
import Foundation
import NIOConcurrencyHelpers
import Testing
import FerryTestSupport

/// `ferry-server` as a user runs it: a real process, a real port, real signals.
@Suite(.postgresTurns, .serialized) struct FerryServerCommandTests {
    static func port(from line: String) throws -> Int {
        try #require(line.split(separator: ":").last.flatMap { Int($0) })
    }

    @Test func servesMintsTokensKeepsItsSecretAndStopsGracefullyOnSIGTERM() async throws {
        let directory = try TemporaryDirectory()
        let dataDir = directory.url.appending(path: "data").path
        let server = try ServerProcess(["--port", "0", "--data-dir", dataDir], environment: ["FERRY_JWT_SECRET": ""])
        defer { server.stop() }
        let port = try Self.port(from: try await server.waitForLine(startingWith: "Ferry server listening on http://127.0.0.1:"))
        #expect(try await server.waitForLine(startingWith: "Get a token:").contains("ferry-server token --user"))

        // The generated secret is owner-only.
        let secretPath = dataDir + "/jwt-secret"
        let permissions = try FileManager.default.attributesOfItem(atPath: secretPath)[.posixPermissions] as? Int
        #expect(permissions == 0o600)

        let minted = try ServerProcess.run(["token", "--user", "alice", "--ttl", "10m", "--data-dir", dataDir], environment: ["FERRY_JWT_SECRET": ""])
        #expect(minted.status == 0)
        let token = minted.output.trimmingCharacters(in: .whitespacesAndNewlines)

        let push = #"{"clientID":"c1","mutations":[{"mutationID":1,"table":"note","rowID":"n1","scope":"user:alice","operation":"upsert","columns":{"title":"Milk"},"hlc":1}]}"#
        let pushed = try await EventStreamClient.request(port: port, method: "POST", path: "/v1/push", token: token, body: push)
        #expect(pushed.status.contains(" 200 "), "\(pushed)")

        // A live stream is open when SIGTERM arrives: it ends, the process exits cleanly.
        let streamEnded = NIOLockedValueBox(false)
        let (ready, readyContinuation) = AsyncStream.makeStream(of: Void.self)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                defer { readyContinuation.finish() }
                try await EventStreamClient.stream(port: port, path: "/v1/live?scope=user:alice", token: token) { event in
                    if event.name == "ready" { readyContinuation.yield() }
                    return true
                }
                streamEnded.withLockedValue { $0 = true }
            }
            var iterator = ready.makeAsyncIterator()
            await iterator.next()
            server.process.terminate()
            try await group.waitForAll()
        }
        server.process.waitUntilExit()
        #expect(streamEnded.withLockedValue { $0 })
        #expect(server.process.terminationReason == .exit)
        #expect(server.process.terminationStatus == 0)
        #expect(try await server.waitForLine(startingWith: "Ferry server stopped; store closed.").isEmpty == false)

        // Restarted on the same directory: the same secret, the same data.
        let again = try ServerProcess(["--port", "0", "--data-dir", dataDir], environment: ["FERRY_JWT_SECRET": ""])
        defer { again.stop() }
        let secondPort = try Self.port(from: try await again.waitForLine(startingWith: "Ferry server listening on http://127.0.0.1:"))
        let pulled = try await EventStreamClient.request(
            port: secondPort, method: "POST", path: "/v1/pull", token: token,
            body: #"{"clientID":"c1","scopes":[{"scope":"user:alice"}]}"#
        )
        #expect(pulled.status.contains(" 200 "))
        #expect(pulled.body.contains(#""title":"Milk""#))
        #expect(pulled.body.contains(#""lastAppliedMutationID":1"#))
        again.process.terminate()
        again.process.waitUntilExit()
    }

    @Test func grantGivesSharedScopeRolesAndBadFlagsAreRefused() throws {
        let directory = try TemporaryDirectory()
        let dataDir = directory.url.path
        let granted = try ServerProcess.run(["grant", "--scope", "team:survey", "--user", "bob", "--role", "read", "--data-dir", dataDir])
        #expect(granted.status == 0)
        #expect(granted.output.contains("bob has read access to team:survey"))
        let promoted = try ServerProcess.run(["grant", "--scope", "team:survey", "--user", "bob", "--role", "write", "--data-dir", dataDir])
        #expect(promoted.status == 0)

        for arguments in [
            ["grant", "--scope", "user:bob", "--user", "bob", "--role", "read"],
            ["grant", "--scope", "team:x", "--user", "bob", "--role", "admin"],
            ["token", "--user", "alice", "--ttl", "-5m"],
            ["token", "--user", "has space"],
            ["--port", "70000"],
            ["--jwt-secret", "short"],
        ] {
            let result = try ServerProcess.run(arguments + ["--data-dir", dataDir])
            #expect(result.status != 0, "\(arguments) should fail")
        }
    }

    /// `grant` and `serve` share `--postgres`: a grant on PostgreSQL lands in
    /// the database every instance reads, and a bad URL is refused up front.
    @Test(.enabled(if: PostgresTestDatabase.shouldRun))
    func grantAndServeTakeAPostgreSQLURL() async throws {
        let database = try await PostgresTestDatabase.create()
        do {
            let dataDir = try TemporaryDirectory().url.path
            let granted = try ServerProcess.run([
                "grant", "--scope", "team:survey", "--user", "bob", "--role", "read",
                "--postgres", database.url, "--data-dir", dataDir,
            ])
            #expect(granted.status == 0, "\(granted.output)")
            #expect(try await database.rows("SELECT scope || ' ' || user_id || ' ' || role FROM ferry_members") == ["team:survey bob read"])
            let bad = try ServerProcess.run(["serve", "--postgres", "mysql://nobody@nowhere/db", "--data-dir", dataDir])
            #expect(bad.status != 0)
            #expect(bad.output.contains("is not a PostgreSQL URL"))
        } catch {
            try? await database.drop()
            throw error
        }
        try await database.drop()
    }
}
