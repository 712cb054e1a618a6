@_spi(Benchmarks) import Ferry
import FerryHTTPClient
import FerryProtocol
@testable import FerryServer
import FerryTestSupport
import Foundation

/// The servers a simulation runs against: one on an SQLite store, or two
/// instances on one PostgreSQL database. Any of them restarts at will (on
/// the same store, at a new port); every push they answer is told to the
/// ledger.
final class SimCluster: @unchecked Sendable {
    // @unchecked: `servers` is only touched under `lock`.
    let kind: StoreKind
    let ledger = Ledger()
    private let tables: ServerTables
    private let directory: TemporaryDirectory
    private let database: PostgresTestDatabase?
    private let lock = NSLock()
    private var servers: [SyncServer] = []

    private init(kind: StoreKind, tables: ServerTables, directory: TemporaryDirectory, database: PostgresTestDatabase?) {
        self.kind = kind
        self.tables = tables
        self.directory = directory
        self.database = database
    }

    static func start(_ kind: StoreKind, tables: ServerTables, directory: TemporaryDirectory) async throws -> SimCluster {
        let database = kind == .postgres ? try await PostgresTestDatabase.create() : nil
        let cluster = SimCluster(kind: kind, tables: tables, directory: directory, database: database)
        do {
            for _ in 0..<(kind == .postgres ? 2 : 1) {
                let server = try await cluster.launch()
                cluster.lock.withLock { cluster.servers.append(server) }
            }
        } catch {
            await cluster.stop()
            throw error
        }
        return cluster
    }

    private func launch() async throws -> SyncServer {
        let ledger = self.ledger
        return try await SyncServer.start(tables: tables, in: directory, store: kind, sharing: database) { store in
            LedgerStore(inner: store, ledger: ledger)
        }
    }

    var instanceCount: Int { lock.withLock { servers.count } }

    /// The base URL of every running instance.
    var urls: [URL] { lock.withLock { servers.map(\.baseURL) } }

    /// A device's transport: each request to a running instance, picked by
    /// a generator seeded with `seed`.
    func router(seed: UInt64) -> RandomInstance {
        RandomInstance(seed: seed) { [self] in
            urls.map { HTTPSyncTransport(baseURL: $0, requestTimeout: .seconds(10)) }
        }
    }

    /// The first instance's store (every instance shares its data).
    var store: any SyncStore { lock.withLock { servers[0].store } }

    /// Stops instance `index` gracefully and starts it again on the same store.
    func restart(_ index: Int) async throws {
        let old = lock.withLock { servers[index] }
        await old.stop()
        let new = try await launch()
        lock.withLock { servers[index] = new }
    }

    func token(_ user: String) async throws -> String {
        try await lock.withLock { servers[0] }.token(user)
    }

    /// The store's version counter.
    func version() async throws -> Int64 {
        try await lock.withLock { servers[0] }.storeVersion()
    }

    /// Collects every tombstone there is: a device whose cursor is older
    /// than the new horizon gets a reset at its next pull.
    func collectGarbage() async throws -> GarbageReport {
        let version = try await self.version()
        let report = try await store.collectGarbage(before: Date().addingTimeInterval(1))
        ledger.collectedThrough = version
        return report
    }

    func stop() async {
        for server in lock.withLock({ servers }) { await server.stop() }
        try? await database?.drop()
    }
}
