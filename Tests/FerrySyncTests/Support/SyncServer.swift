import FerryProtocol
@testable import FerryServer
import Foundation
import GRDB
import Hummingbird
import Logging
import ServiceLifecycle
import FerryTestSupport

/// The real sync server, in this process, on a real loopback socket: a
/// SQLite store in a temporary directory behind the real HTTP stack.
final class SyncServer: Sendable {
    static let secret = "sync-test-secret-0123456789abcdef-0123"

    let directory: TemporaryDirectory
    let store: SQLiteSyncStore
    let port: Int
    private let group: ServiceGroup
    private let running: Task<Void, any Error>
    private let authority: TokenAuthority

    static func start(tables: ServerTables = ServerTables(), in directory: TemporaryDirectory? = nil) async throws -> SyncServer {
        let directory = try directory ?? TemporaryDirectory()
        let store = try SQLiteSyncStore(directory: directory.url.appending(path: "server"))
        var configuration = FerryServerConfiguration(jwtSecret: secret)
        configuration.port = 0
        configuration.tables = tables
        configuration.liveHeartbeat = .seconds(2)
        var logger = Logger(label: "sync-test-server")
        logger.logLevel = .error
        let (ports, portContinuation) = AsyncStream.makeStream(of: Int.self)
        let app = try await FerryApplication.build(configuration: configuration, store: store, logger: logger) { _, port in
            portContinuation.yield(port)
        }
        let group = ServiceGroup(configuration: .init(services: [app], gracefulShutdownSignals: [], logger: logger))
        let running = Task { try await group.run() }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next() else { throw CancellationError() }
        return SyncServer(directory: directory, store: store, port: port, group: group, running: running,
                          authority: await TokenAuthority(secret: secret))
    }

    private init(directory: TemporaryDirectory, store: SQLiteSyncStore, port: Int, group: ServiceGroup,
                 running: Task<Void, any Error>, authority: TokenAuthority) {
        self.directory = directory
        self.store = store
        self.port = port
        self.group = group
        self.running = running
        self.authority = authority
    }

    var baseURL: URL { URL(string: "http://127.0.0.1:\(port)")! }

    func token(_ user: String, lifetime: Duration = .seconds(600)) async throws -> String {
        try await authority.mint(userID: user, lifetime: lifetime)
    }

    func stop() async {
        await group.triggerGracefulShutdown()
        _ = try? await running.value
    }

    /// The store's version counter: one step per mutation that changed a row.
    func storeVersion() async throws -> Int64 {
        try await store.pool.read { db in
            try Int64.fetchOne(db, sql: "SELECT CAST(value AS INTEGER) FROM store_meta WHERE key = 'version'") ?? 0
        }
    }

    /// The live (not deleted) rows of a table in a scope: row id → values.
    func rows(_ table: String, in scope: String) async throws -> [String: [String: ColumnValue]] {
        try await store.pool.read { db in
            var rows: [String: [String: ColumnValue]] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT row_id, cells FROM rows WHERE scope = ? AND tbl = ? AND deleted = 0",
                                        arguments: [scope, table]) {
                let cells = try JSONDecoder().decode([String: Cell].self, from: Data((row["cells"] as String).utf8))
                rows[row["row_id"]] = cells.mapValues(\.value)
            }
            return rows
        }
    }

    private struct Cell: Decodable {
        var value: ColumnValue
    }
}
