@_spi(Benchmarks) @testable import Ferry
import FerryTesting
import FerryHTTPClient
import FerryProtocol
import Foundation
import FerryTestSupport

/// Several `ferry-server` processes, as an operator starts them, sharing one
/// fresh PostgreSQL database.
struct ServerInstances {
    static let secret = "scale-out-secret-0123456789abcdef-012345"

    let database: PostgresTestDatabase
    let directory: TemporaryDirectory
    let processes: [ServerProcess]
    let urls: [URL]

    /// `arguments` go to every instance's `serve`.
    static func start(_ count: Int = 2, poolSize: Int = 10, arguments: [String] = []) async throws -> ServerInstances {
        let database = try await PostgresTestDatabase.create()
        let directory = try TemporaryDirectory()
        var processes: [ServerProcess] = []
        var urls: [URL] = []
        do {
            for index in 0..<count {
                let process = try ServerProcess(
                    [
                        "serve", "--port", "0", "--postgres", database.url, "--pool-size", "\(poolSize)",
                        "--jwt-secret", secret, "--data-dir", directory.path("instance-\(index)"),
                    ] + arguments)
                processes.append(process)
                let line = try await process.waitForLine(startingWith: "Ferry server listening on ")
                urls.append(try URL(string: String(line.dropFirst("Ferry server listening on ".count))).orThrow())
            }
        } catch {
            for process in processes { process.stop() }
            try? await database.drop()
            throw error
        }
        return ServerInstances(database: database, directory: directory, processes: processes, urls: urls)
    }

    func token(_ user: String) throws -> String {
        try ServerProcess.token(for: user, secret: Self.secret, dataDirectory: directory.path("tokens"))
    }

    /// One transport per instance.
    var transports: [HTTPSyncTransport] {
        urls.map { HTTPSyncTransport(baseURL: $0, requestTimeout: .seconds(30)) }
    }

    /// A device whose every request goes to an instance picked at random.
    func device(_ name: String, user: String, seed: UInt64, configure: (inout SyncConfiguration) -> Void = { _ in }) async throws -> Device {
        let transports = self.transports
        return try await Device.make(
            name, user: user, baseURL: urls[0], directory: directory, configure: configure,
            transport: { _ in RandomInstance(transports: transports, seed: seed) }, token: try token(user)
        )
    }

    /// Stops every process and waits for each (so none outlives the test,
    /// even one that fails); the database is dropped as the test case ends.
    func stop() {
        for process in processes {
            process.stop()
        }
        database.dropAtEnd()
    }
}

/// Sends each request to one of several instances, picked by a seeded
/// generator; live streams go to the first. The instances may change
/// between requests (a simulation restarts them at new ports).
final class RandomInstance: SyncTransport, @unchecked Sendable {
    // @unchecked: `generator` is only touched under `lock`.
    private let transports: @Sendable () -> [any SyncTransport]
    private let lock = NSLock()
    private var generator: SplitMix64

    convenience init(transports: [any SyncTransport], seed: UInt64) {
        self.init(seed: seed) { transports }
    }

    init(seed: UInt64, transports: @escaping @Sendable () -> [any SyncTransport]) {
        self.transports = transports
        generator = SplitMix64(seed: seed)
    }

    private func pick() -> any SyncTransport {
        let transports = self.transports()
        return lock.withLock { transports[Int.random(in: 0..<transports.count, using: &generator)] }
    }

    func push(_ request: PushRequest, token: String?) async throws -> PushResponse {
        try await pick().push(request, token: token)
    }

    func pull(_ request: PullRequest, token: String?) async throws -> PullResponse {
        try await pick().pull(request, token: token)
    }

    func row(scope: String, table: String, rowID: String, token: String?) async throws -> ServerRow? {
        try await pick().row(scope: scope, table: table, rowID: rowID, token: token)
    }

    func live(scopes: [String], token: String?) -> AsyncThrowingStream<LiveMessage, any Error> {
        transports()[0].live(scopes: scopes, token: token)
    }
}

struct Missing: Error {}

extension Optional {
    func orThrow() throws -> Wrapped {
        guard let self else { throw Missing() }
        return self
    }
}
