import Ferry
import FerryHTTPClient
import FerryProtocol
import FerryTesting
import Foundation
import GRDB
import Testing
import FerryTestSupport

/// The app schema the end-to-end tests sync: private notes, a list of items
/// in shared scopes, a STRICT table whose types SQLite enforces, and tasks
/// whose columns are all NOT NULL.
enum SyncSchema {
    static func migrator(withPriority: Bool = false) -> DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.execute(
                sql: """
                    CREATE TABLE note (id TEXT PRIMARY KEY NOT NULL, title TEXT, body TEXT, counter INTEGER NOT NULL DEFAULT 0);
                    CREATE TABLE item (id TEXT PRIMARY KEY NOT NULL, listScope TEXT, name TEXT);
                    CREATE TABLE reading (id TEXT PRIMARY KEY NOT NULL, value INTEGER NOT NULL) STRICT;
                    CREATE TABLE task (id TEXT PRIMARY KEY NOT NULL, title TEXT NOT NULL, owner TEXT NOT NULL,
                                       done INTEGER NOT NULL, due TEXT NOT NULL);
                    """)
        }
        if withPriority {
            migrator.registerMigration("v2") { db in
                try db.execute(sql: "ALTER TABLE note ADD COLUMN priority INTEGER")
            }
        }
        return migrator
    }

    static func schema(withPriority: Bool = false) -> FerrySchema {
        FerrySchema(
            migrator: migrator(withPriority: withPriority),
            syncedTables: [
                SyncedTable("note"),
                SyncedTable("item", scope: .column("listScope")),
                SyncedTable("reading"),
                SyncedTable("task"),
            ])
    }
}

/// One app installation: its database file and its sync engine.
struct Device {
    let database: FerryDatabase
    let engine: SyncEngine
    let path: String

    static func make(
        _ name: String, user: String, server: SyncServer, directory: TemporaryDirectory,
        withPriority: Bool = false,
        configure: (inout SyncConfiguration) -> Void = { _ in },
        configureDatabase: (inout FerryConfiguration) -> Void = { _ in },
        transport: ((any SyncTransport) -> any SyncTransport)? = nil,
        token: String? = nil, tokenRefresher: (@Sendable () async throws -> String)? = nil
    ) async throws -> Device {
        let minted = try await server.token(user)
        return try await make(
            name, user: user, baseURL: server.baseURL, directory: directory, withPriority: withPriority,
            configure: configure, configureDatabase: configureDatabase, transport: transport,
            token: token ?? minted, tokenRefresher: tokenRefresher)
    }

    /// A device syncing with `server` through its in-process transport.
    static func make(
        _ name: String, user: String, server: InMemorySyncServer, directory: TemporaryDirectory,
        configure: (inout SyncConfiguration) -> Void = { _ in },
        configureDatabase: (inout FerryConfiguration) -> Void = { _ in }
    ) async throws -> Device {
        let token = try await server.token(for: user)
        return try await make(
            name, user: user, baseURL: URL(string: "http://unused")!, directory: directory, configure: configure,
            configureDatabase: configureDatabase, transport: { _ in server.transport }, token: token)
    }

    static func make(
        _ name: String, user: String, baseURL: URL, directory: TemporaryDirectory,
        withPriority: Bool = false,
        configure: (inout SyncConfiguration) -> Void = { _ in },
        configureDatabase: (inout FerryConfiguration) -> Void = { _ in },
        transport: ((any SyncTransport) -> any SyncTransport)? = nil,
        token: String?, tokenRefresher: (@Sendable () async throws -> String)? = nil
    ) async throws -> Device {
        let path = directory.path("\(name).sqlite")
        // Each device's attachment files apart, as on separate phones.
        var databaseConfiguration = FerryConfiguration()
        databaseConfiguration.attachmentsDirectory = directory.url.appending(path: "\(name)-files")
        configureDatabase(&databaseConfiguration)
        let database = try FerryDatabase(
            path: path, schema: SyncSchema.schema(withPriority: withPriority),
            configuration: databaseConfiguration)
        var configuration = SyncConfiguration(userID: user)
        configuration.retry = RetryPolicy(initialDelay: .milliseconds(20), maximumDelay: .milliseconds(200), attemptsPerSync: 5)
        configuration.periodicInterval = nil
        configure(&configuration)
        let http: any SyncTransport = HTTPSyncTransport(baseURL: baseURL, requestTimeout: .seconds(10))
        let engine = try SyncEngine(
            database: database, transport: transport?(http) ?? http,
            configuration: configuration, token: token, tokenRefresher: tokenRefresher)
        return Device(database: database, engine: engine, path: path)
    }

    /// Starts the background loop and waits until its live stream is open
    /// and the catch-up sync the stream starts with is done.
    func startLive() async throws {
        await engine.start()
        #expect(try await eventually(within: .seconds(10)) { engine.status.liveConnected })
        #expect(try await eventually(within: .seconds(10)) { engine.status.phase == .idle })
        try await Task.sleep(for: .milliseconds(200))
    }

    func execute(_ sql: String, _ arguments: StatementArguments = []) throws {
        try database.write { db in try db.execute(sql: sql, arguments: arguments) }
    }

    /// Every note: id → (title, body, counter).
    func notes() throws -> [String: Note] {
        try database.read { db in
            Dictionary(
                uniqueKeysWithValues: try Row.fetchAll(db, sql: "SELECT id, title, body, counter FROM note").map {
                    ($0["id"], Note(title: $0["title"], body: $0["body"], counter: $0["counter"]))
                })
        }
    }

    func note(_ id: String) throws -> Note? {
        try notes()[id]
    }

    /// `count` notes written here, one at a time, each waited for on
    /// `reader` (at most 10 s): how long each took to show there.
    func latencies(to reader: Device, count: Int, title: String) async throws -> [Duration] {
        var latencies: [Duration] = []
        for index in 0..<count {
            let start = ContinuousClock.now
            try execute("INSERT INTO note(id, title) VALUES (?, ?)", ["n\(index)", title])
            #expect(try await eventually(within: .seconds(10)) { try reader.note("n\(index)") != nil })
            latencies.append(ContinuousClock.now - start)
        }
        return latencies
    }
}

struct Note: Hashable, Sendable {
    var title: String?
    var body: String?
    var counter: Int64
}
