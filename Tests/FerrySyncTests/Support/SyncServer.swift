import FerryProtocol
@testable import FerryPostgres
@testable import FerryServer
import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
import GRDB
import Hummingbird
import Logging
import PostgresNIO
import ServiceLifecycle
import FerryTestSupport

/// The real sync server, in this process, on a real loopback socket: a
/// SQLite store in a temporary directory (or a PostgreSQL store on a fresh
/// database) behind the real HTTP stack.
final class SyncServer: Sendable {
    static let secret = "sync-test-secret-0123456789abcdef-0123"

    let directory: TemporaryDirectory
    let store: any SyncStore
    /// Where the server keeps attachment bytes.
    let blobs: any BlobStore
    /// The store when it is the SQLite one, for tests that read its tables.
    let sqlite: SQLiteSyncStore?
    /// The PostgreSQL database.
    let postgres: PostgresTestDatabase?
    /// The PostgreSQL database this server created, dropped by ``stop()``.
    private let owned: PostgresTestDatabase?
    let port: Int
    /// The admin API's port, when the configuration serves it.
    let adminPort: Int?
    private let group: ServiceGroup
    private let running: Task<Void, any Error>
    private let authority: TokenAuthority

    /// Runs `body` against a server on a store of `kind`, and stops it
    /// (dropping a PostgreSQL database) whatever `body` does.
    static func with<T>(
        _ kind: StoreKind, tables: ServerTables = ServerTables(), configure: (inout FerryServerConfiguration) -> Void = { _ in },
        _ body: (SyncServer) async throws -> T
    ) async throws -> T {
        let server = try await start(tables: tables, store: kind, configure: configure)
        do {
            let value = try await body(server)
            await server.stop()
            return value
        } catch {
            await server.stop()
            throw error
        }
    }

    /// Starts a server on a store of `kind`: SQLite in `directory` (an
    /// earlier server's store when it was there before), or PostgreSQL on a
    /// fresh database, or on `shared` (another instance's, which this one
    /// leaves in place when it stops). `wrap` sees every call the HTTP
    /// layer makes to the store; `configure` changes the server's
    /// configuration last.
    static func start(
        tables: ServerTables = ServerTables(), in directory: TemporaryDirectory? = nil, store kind: StoreKind = .sqlite,
        sharing shared: PostgresTestDatabase? = nil, configure: (inout FerryServerConfiguration) -> Void = { _ in },
        wrap: (any SyncStore) -> any SyncStore = { $0 }
    ) async throws -> SyncServer {
        let directory = try directory ?? TemporaryDirectory()
        let unwrapped: any SyncStore
        var postgres: PostgresTestDatabase?
        var owned: PostgresTestDatabase?
        switch kind {
        case .sqlite:
            unwrapped = try SQLiteSyncStore(directory: directory.url.appending(path: "server"))
        case .postgres:
            let database: PostgresTestDatabase
            if let shared {
                database = shared
            } else {
                database = try await PostgresTestDatabase.create()
                owned = database
            }
            postgres = database
            var storeConfiguration = try PostgresStoreConfiguration(url: database.url)
            storeConfiguration.poolSize = 8
            var storeLogger = Logger(label: "sync-test-postgres")
            storeLogger.logLevel = .error
            unwrapped = PostgresSyncStore(configuration: storeConfiguration, logger: storeLogger)
        }
        let store = wrap(unwrapped)
        var configuration = FerryServerConfiguration(jwtSecret: secret)
        configuration.port = 0
        configuration.tables = tables
        configuration.liveHeartbeat = .seconds(2)
        configure(&configuration)
        var logger = Logger(label: "sync-test-server")
        logger.logLevel = .error
        let (ports, portContinuation) = AsyncStream.makeStream(of: Int.self)
        let (adminPorts, adminContinuation) = AsyncStream.makeStream(of: Int.self)
        let blobs = try store.makeBlobStore(maxBlobBytes: configuration.limits.maxBlobBytes)
        let app = try await FerryApplication.build(
            configuration: configuration, store: store, blobs: blobs, logger: logger,
            onServerRunning: { _, port in portContinuation.yield(port) },
            onAdminServerRunning: { _, port in adminContinuation.yield(port) })
        let group = ServiceGroup(configuration: .init(services: [app], gracefulShutdownSignals: [], logger: logger))
        let running = Task { try await group.run() }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next() else { throw CancellationError() }
        var adminIterator = adminPorts.makeAsyncIterator()
        let adminPort = configuration.admin == nil ? nil : await adminIterator.next()
        if let store = unwrapped as? PostgresSyncStore { try await store.waitUntilReady() }
        return SyncServer(
            directory: directory, store: store, sqlite: unwrapped as? SQLiteSyncStore, blobs: blobs,
            postgres: postgres, owned: owned, port: port, adminPort: adminPort, group: group, running: running,
            authority: await TokenAuthority(secret: secret))
    }

    private init(
        directory: TemporaryDirectory, store: any SyncStore, sqlite: SQLiteSyncStore?, blobs: any BlobStore,
        postgres: PostgresTestDatabase?, owned: PostgresTestDatabase?, port: Int, adminPort: Int?, group: ServiceGroup,
        running: Task<Void, any Error>, authority: TokenAuthority
    ) {
        self.directory = directory
        self.store = store
        self.blobs = blobs
        self.sqlite = sqlite
        self.postgres = postgres
        self.owned = owned
        self.port = port
        self.adminPort = adminPort
        self.group = group
        self.running = running
        self.authority = authority
    }

    var baseURL: URL { URL(string: "http://127.0.0.1:\(port)")! }

    /// A value of the server's `/metrics`: the line that starts with
    /// `series` (a name with its labels), 0 when there is none yet.
    func metric(_ series: String) async throws -> Int {
        let (data, _) = try await URLSession.shared.data(from: baseURL.appending(path: "metrics"))
        let text = String(decoding: data, as: UTF8.self)
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix(series + " ") }),
            let number = line.split(separator: " ").last, let value = Double(number)
        else { return 0 }
        return Int(value)
    }

    /// The app's backend on this server's admin port (a configuration with ``withAdmin(_:)``).
    var admin: AdminClient { AdminClient(port: adminPort!) }

    /// Serves the admin API on a free port with ``AdminClient/token``.
    static func withAdmin(_ configuration: inout FerryServerConfiguration) {
        configuration.admin = try! AdminConfiguration(port: 0, token: AdminClient.token)
    }

    /// `GET /metrics`, as Prometheus scrapes it.
    func metricsText() async throws -> String {
        let (data, _) = try await URLSession.shared.data(from: baseURL.appending(path: "metrics"))
        return String(decoding: data, as: UTF8.self)
    }

    func token(_ user: String, lifetime: Duration = .seconds(600)) async throws -> String {
        try await authority.mint(userID: user, lifetime: lifetime)
    }

    func stop() async {
        await group.triggerGracefulShutdown()
        _ = try? await running.value
        try? await owned?.drop()
    }

    /// Runs `body`, then stops the server and waits for it to stop, whether
    /// `body` threw or not.
    func stopping<T>(after body: () async throws -> T) async throws -> T {
        let value: T
        do {
            value = try await body()
        } catch {
            await stop()
            throw error
        }
        await stop()
        return value
    }

    /// The store's version counter: one step per mutation that changed a row.
    func storeVersion() async throws -> Int64 {
        if let postgres {
            let line = try await postgres.rows("SELECT (CASE WHEN is_called THEN last_value ELSE 0 END)::text FROM ferry_versions")
            return try Int64(line.first ?? "").orThrow()
        }
        return try await sqlite!.pool.read { db in
            try Int64.fetchOne(db, sql: "SELECT CAST(value AS INTEGER) FROM store_meta WHERE key = 'version'") ?? 0
        }
    }

    /// The live (not deleted) rows of a table in a scope: row id → values.
    func rows(_ table: String, in scope: String) async throws -> [String: [String: ColumnValue]] {
        var cellsByRow: [String: String] = [:]
        if let postgres {
            let query: PostgresQuery = "SELECT row_id, cells FROM ferry_rows WHERE scope = \(scope) AND tbl = \(table) AND NOT deleted"
            cellsByRow = try await postgres.withConnection { connection in
                var found: [String: String] = [:]
                for try await (rowID, cells) in try await connection.query(query, logger: Logger(label: "sync-test-rows"))
                    .decode((String, String).self)
                {
                    found[rowID] = cells
                }
                return found
            }
        } else {
            cellsByRow = try await sqlite!.pool.read { db in
                try Dictionary(
                    uniqueKeysWithValues: Row.fetchAll(
                        db, sql: "SELECT row_id, cells FROM rows WHERE scope = ? AND tbl = ? AND deleted = 0", arguments: [scope, table]
                    ).map { row in (row["row_id"] as String, row["cells"] as String) })
            }
        }
        return try cellsByRow.mapValues { cells in
            try JSONDecoder().decode([String: Cell].self, from: Data(cells.utf8)).mapValues(\.value)
        }
    }

    private struct Cell: Decodable {
        var value: ColumnValue
    }
}
