@_spi(Benchmarks) import Ferry
import FerryHTTPClient
import FerryProtocol
@testable import FerryServer
import FerryTestSupport
import Foundation
import GRDB

/// The servers a simulation runs against: one on an SQLite store, or two
/// instances on one PostgreSQL database. Any of them restarts at will (on
/// the same store, at a new port); every push they answer is told to the
/// ledger.
final class SimCluster: @unchecked Sendable {
    // @unchecked: `servers` is only touched under `lock`.
    let kind: StoreKind
    let ledger = Ledger()
    /// The run's time: every server's `now`.
    let time: SimTime
    private let tables: ServerTables
    private let directory: TemporaryDirectory
    private var database: PostgresTestDatabase?
    /// Every database made for the run (a restore loads the snapshot into a fresh one), dropped by ``stop()``.
    private var databases: [PostgresTestDatabase] = []
    private let lock = NSLock()
    private var servers: [SyncServer] = []
    /// The store's snapshot, once taken: its file or dump, its version, and
    /// the collection horizon then.
    private var snapshot: (path: String, version: Int64, collectedThrough: Int64)?

    private init(kind: StoreKind, tables: ServerTables, directory: TemporaryDirectory, database: PostgresTestDatabase?, time: SimTime) {
        self.kind = kind
        self.time = time
        self.tables = tables
        self.directory = directory
        self.database = database
    }

    static func start(_ kind: StoreKind, tables: ServerTables, directory: TemporaryDirectory, time: SimTime) async throws -> SimCluster {
        let database = kind == .postgres ? try await PostgresTestDatabase.create() : nil
        let cluster = SimCluster(kind: kind, tables: tables, directory: directory, database: database, time: time)
        cluster.databases = database.map { [$0] } ?? []
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
        let (ledger, time) = (self.ledger, self.time)
        let database = lock.withLock { self.database }
        return try await SyncServer.start(
            tables: tables, in: directory, store: kind, sharing: database,
            configure: { $0.now = { time.date } },
            wrap: { store in LedgerStore(inner: store, ledger: ledger) }
        )
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
        let report = try await store.collectGarbage(before: time.date.addingTimeInterval(1))
        ledger.collectedThrough = version
        return report
    }

    /// Whether a snapshot is held (and not yet restored).
    var hasSnapshot: Bool { lock.withLock { snapshot != nil } }

    /// Takes a consistent snapshot of the store while it serves: a SQLite
    /// backup of the file, or a `pg_dump`.
    func takeSnapshot() async throws {
        let path = directory.path("store-snapshot")
        let version = try await self.version()
        if let database = lock.withLock({ self.database }) {
            try database.pgDump(to: path)
        } else {
            let server = lock.withLock { servers[0] }
            try await server.sqlite!.pool.backup(to: try DatabaseQueue(path: path))
        }
        let collected = ledger.collectedThrough
        lock.withLock { snapshot = (path, version, collected) }
    }

    /// Stops every instance, puts the store back to the snapshot (the file
    /// copied over the store's, or the dump loaded into a fresh database, as
    /// an operator restores a backup) and starts them again.
    func restoreSnapshot() async throws {
        guard let snapshot = lock.withLock({ self.snapshot }) else { return }
        let old = lock.withLock { servers }
        for server in old {
            await server.stop()
            try? await server.store.close()
        }
        if kind == .postgres {
            let fresh = try await PostgresTestDatabase.create()
            lock.withLock {
                databases.append(fresh); database = fresh
            }
            try fresh.load(dump: snapshot.path)
        } else {
            let file = directory.url.appending(path: "server").appending(path: SQLiteSyncStore.fileName).path
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: file + suffix) }
            try FileManager.default.copyItem(atPath: snapshot.path, toPath: file)
        }
        ledger.storeRestored(snapshotVersion: snapshot.version, collectedThrough: snapshot.collectedThrough)
        lock.withLock { self.snapshot = nil }
        var started: [SyncServer] = []
        for _ in old { started.append(try await launch()) }
        lock.withLock { servers = started }
    }

    func stop() async {
        for server in lock.withLock({ servers }) { await server.stop() }
        for database in lock.withLock({ databases }) { try? await database.drop() }
    }
}
