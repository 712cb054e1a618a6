@testable import FerryPostgres
@testable import FerryServer
import FerryProtocol
import Foundation
import GRDB
import Logging
import Testing
import FerryTestSupport

/// A real store of either kind on throwaway data, and what the tests read
/// from its tables.
struct StoreUnderTest: Sendable {
    let kind: StoreKind
    let store: any SyncStore
    private let directory: TemporaryDirectory?
    let database: PostgresTestDatabase?
    private let running: Task<Void, any Error>?

    /// Opens a store of `kind` on fresh data, runs `body`, and closes it
    /// (dropping a PostgreSQL database) whatever `body` does. With
    /// `running: false` a PostgreSQL store is not run here: a server that
    /// runs it as one of its services does (and `body` waits until it is ready).
    static func with<T: Sendable>(
        _ kind: StoreKind,
        maxPageBytes: Int = 8 << 20,
        running: Bool = true,
        _ body: (StoreUnderTest) async throws -> T
    ) async throws -> T {
        let directory = kind == .sqlite ? try TemporaryDirectory() : nil
        let database = kind == .postgres ? try await PostgresTestDatabase.create() : nil
        do {
            let opened = try await open(kind, directory: directory, database: database, maxPageBytes: maxPageBytes, running: running)
            let value: T
            do {
                value = try await body(opened)
            } catch {
                try? await opened.close()
                throw error
            }
            try await opened.close()
            try await database?.drop()
            return value
        } catch {
            try? await database?.drop()
            throw error
        }
    }

    private static func open(
        _ kind: StoreKind, directory: TemporaryDirectory?, database: PostgresTestDatabase?, maxPageBytes: Int, running: Bool = true
    ) async throws -> StoreUnderTest {
        switch kind {
        case .sqlite:
            let store = try SQLiteSyncStore(directory: directory!.url, maxPageBytes: maxPageBytes)
            return StoreUnderTest(kind: kind, store: store, directory: directory, database: nil, running: nil)
        case .postgres:
            var configuration = try PostgresStoreConfiguration(url: database!.url)
            configuration.maxPageBytes = maxPageBytes
            configuration.poolSize = 8
            var logger = Logger(label: "store-under-test")
            logger.logLevel = .warning
            let store = PostgresSyncStore(configuration: configuration, logger: logger)
            guard running else { return StoreUnderTest(kind: kind, store: store, directory: nil, database: database, running: nil) }
            let running = Task { try await store.run() }
            try await store.waitUntilReady()
            return StoreUnderTest(kind: kind, store: store, directory: nil, database: database, running: running)
        }
    }

    /// Closes this store and opens another on the same data.
    func reopened() async throws -> StoreUnderTest {
        try await close()
        return try await Self.open(kind, directory: directory, database: database, maxPageBytes: 8 << 20)
    }

    func close() async throws {
        try await store.close()
        try await running?.value
    }

    var sqlite: SQLiteSyncStore? { store as? SQLiteSyncStore }

    /// Every stored row of every store table, in order: equal digests mean
    /// nothing changed. Blobs count by their complete keys (an upload in
    /// progress is not stored data yet).
    func digest() async throws -> String {
        let blobTables: Set<String> = ["ferry_blobs", "ferry_blob_chunks"]
        var lines: [String] = []
        if let sqlite {
            lines = try SQLiteDump.lines(sqlite.pool)
        } else {
            lines = try await database!.dump(excluding: blobTables)
        }
        let blobs = try store.makeBlobStore(maxBlobBytes: 1 << 30)
        lines += try await blobs.list().filter(\.complete).map { "blob: \($0.key)" }.sorted()
        return lines.joined(separator: "\n")
    }

    /// A row as the store holds it, with the history a push whose oldest
    /// base for it is `oldestBase` loads (``HistoryNeeds``): by default all
    /// of it.
    func row(_ key: RowKey, oldestBase: Int64 = 0) async throws -> StoredRow? {
        if let sqlite {
            return try await sqlite.pool.read { db in try SQLiteSyncStore.loadRow(db, key, oldestBase: oldestBase) }
        }
        let postgres = store as! PostgresSyncStore
        return try await postgres.client.withConnection { connection in
            try await PostgresSyncStore.loadRows(
                connection, [key], needs: HistoryNeeds(oldestBases: [key: oldestBase]), logger: postgres.logger)[key]
        }
    }

    /// Rows as the store loads them for one push whose oldest bases are
    /// `oldestBases`: in one call on PostgreSQL (the push's), one by one on
    /// SQLite (as its push does).
    func rows(_ keys: Set<RowKey>, oldestBases: [RowKey: Int64]) async throws -> [RowKey: StoredRow] {
        let needs = HistoryNeeds(oldestBases: oldestBases)
        if let sqlite {
            return try await sqlite.pool.read { db in
                var rows: [RowKey: StoredRow] = [:]
                for key in keys {
                    rows[key] = try SQLiteSyncStore.loadRow(db, key, oldestBase: needs.oldestBase(of: key))
                }
                return rows
            }
        }
        let postgres = store as! PostgresSyncStore
        return try await postgres.client.withConnection { connection in
            try await PostgresSyncStore.loadRows(connection, keys, needs: needs, logger: postgres.logger)
        }
    }

    /// What garbage collection leaves, in the same words for both stores:
    /// the rows, each history entry, each recorded result, the notices and
    /// the horizon version.
    func collectedState() async throws -> [String] {
        if let sqlite {
            return try await sqlite.pool.read { db in
                try String.fetchAll(
                    db,
                    sql: """
                        SELECT 'row ' || row_id || (CASE WHEN collected THEN ' deletion record' WHEN deleted THEN ' deleted' ELSE '' END) FROM rows
                        UNION ALL SELECT 'history ' || row_id || '.' || col || ' v' || version FROM history
                        UNION ALL SELECT 'result ' || client_id || '#' || mutation_id FROM recorded_results
                        UNION ALL SELECT 'notices ' || count(*) FROM notices
                        UNION ALL SELECT 'horizon ' || value FROM store_meta WHERE key = 'horizon'
                        ORDER BY 1
                        """)
            }
        }
        return try await database!.rows(
            """
            SELECT line FROM (
                SELECT 'row ' || row_id || (CASE WHEN collected THEN ' deletion record' WHEN deleted THEN ' deleted' ELSE '' END) AS line FROM ferry_rows
                UNION ALL SELECT 'history ' || row_id || '.' || col || ' v' || version FROM ferry_history
                UNION ALL SELECT 'result ' || client_id || '#' || mutation_id FROM ferry_recorded_results
                UNION ALL SELECT 'notices ' || count(*) FROM ferry_notices
                UNION ALL SELECT 'horizon ' || horizon_version FROM ferry_meta) lines
            ORDER BY line COLLATE "C"
            """)
    }

    /// The recorded conflict of a client's mutation, as stored JSON.
    func recordedConflict(client: String, mutation: Int64) async throws -> String? {
        try await value(
            sqlite: "SELECT conflict FROM conflicts WHERE client_id = '\(client)' AND mutation_id = \(mutation)",
            postgres: "SELECT conflict FROM ferry_conflicts WHERE client_id = '\(client)' AND mutation_id = \(mutation)"
        )
    }

    /// The recorded reason a client's mutation was rejected.
    func recordedRejection(client: String, mutation: Int64) async throws -> String? {
        try await value(
            sqlite: "SELECT reason FROM rejections WHERE client_id = '\(client)' AND mutation_id = \(mutation)",
            postgres: "SELECT reason FROM ferry_rejections WHERE client_id = '\(client)' AND mutation_id = \(mutation)"
        )
    }

    /// Every recorded result of a client, in mutation order, through the
    /// store's view that expands runs (JSON as the push answered it).
    func recordedResults(client: String) async throws -> [String] {
        if let sqlite {
            return try await sqlite.pool.read { db in
                try String.fetchAll(db, sql: "SELECT result FROM recorded_results WHERE client_id = ? ORDER BY mutation_id", arguments: [client])
            }
        }
        return try await database!.rows("SELECT result FROM ferry_recorded_results WHERE client_id = '\(client)' ORDER BY mutation_id")
    }

    private func value(sqlite sql: String, postgres: String) async throws -> String? {
        if let sqlite {
            return try await sqlite.pool.read { db in try String.fetchOne(db, sql: sql) }
        }
        return try await database!.rows(postgres).first
    }
}
