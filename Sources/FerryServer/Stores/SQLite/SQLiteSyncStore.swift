import Crypto
import FerryProtocol
import Foundation
import GRDB
import Synchronization

/// The embedded store: one SQLite file, one server process.
///
/// Versions are assigned inside SQLite's single write transaction, so they
/// commit in order and a pull can never skip one.
/// Reads run on a WAL snapshot, so a pull page and the client's last applied
/// id always agree. Pushes are in `SQLiteSyncStore+Push.swift`, pulls in
/// `SQLiteSyncStore+Pull.swift`; both share the pipeline in `Stores/Pipeline`
/// with the PostgreSQL store.
///
/// ```swift
/// let store = try SQLiteSyncStore(directory: URL(filePath: "./ferry-data"))
/// let receipt = try await store.push(push, userID: "alice", rules: PushRules())
/// ```
public final class SQLiteSyncStore: SyncStore {
    /// The database file's name inside the data directory.
    public static let fileName = "ferry-server.sqlite"

    public let changeFeed = ChangeFeed()
    /// The most row bytes one pull returns per scope; a bigger page is cut and `hasMore` set.
    public let maxPageBytes: Int
    let pool: DatabasePool
    let cursors: PullCursorCodec
    /// Where scopes and clients stand, from this store's own commits: a pull
    /// of quiet scopes is answered from it (`SQLiteSyncStore+Pull.swift`).
    let known: LastChanges.Shared
    /// Counts write transactions, so a pull read ahead is handed over only
    /// while the file is as it read it (``ReadAheadPulls``).
    let writes = WriteSequence()
    /// Pulls read before they are asked (`SQLiteSyncStore+Pull.swift`).
    let readAhead = ReadAheadPulls()
    /// Checkpoints the WAL beside the writer, not in a push's commit.
    let checkpointer: WALCheckpointer
    /// `close()` ran: a second call returns at once (the writer it would reach is closed).
    private let closed = Atomic<Bool>(false)

    /// Opens (creating if needed) the store in `directory`.
    ///
    /// - Parameters:
    ///   - directory: the data directory, created if missing.
    ///   - maxPageBytes: the most row bytes one pull returns per scope.
    ///   - serving: `false` for a command that works on the store beside a
    ///     running server (`ferry-server grant`): it begins no store
    ///     generation, so the server's cursors stay in held history.
    public convenience init(directory: URL, maxPageBytes: Int = 8 << 20, serving: Bool = true) throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try self.init(path: directory.appending(path: Self.fileName).path, maxPageBytes: maxPageBytes, serving: serving)
    }

    /// Opens (creating if needed) the store at a database file path.
    ///
    /// - Parameters:
    ///   - path: the database file, created if missing.
    ///   - maxPageBytes: the most row bytes one pull returns per scope.
    ///   - busyTimeout: how long a write waits for another process
    ///     holding the file before its request answers 503.
    ///   - serving: whether this opening serves clients (and so begins a
    ///     store generation); `false` for a command beside a running server.
    public init(path: String, maxPageBytes: Int = 8 << 20, busyTimeout: Duration = .seconds(5), serving: Bool = true) throws {
        self.maxPageBytes = maxPageBytes
        var configuration = Configuration()
        configuration.busyMode = .timeout(Double(busyTimeout.wholeMilliseconds) / 1000)
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = FULL")
        }
        pool = try DatabasePool(path: path, configuration: configuration)
        try Self.migrator.migrate(pool)
        // The writer's statement journals in memory: a multi-row write (a push's rows, in statements of a
        // hundred) keeps one, which past 64 KiB SQLite otherwise spills to a new file in /var/tmp on every
        // push. The writer only, after the migrations: SQLite then keeps temporary tables and sorts in memory
        // too, and a migration's index over a large table, or a reader's large sort, could be held whole.
        let checkpointer = WALCheckpointer(path: path)
        self.checkpointer = checkpointer
        try pool.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA temp_store = MEMORY")
            checkpointer.install(on: db)
        }
        (cursors, known) = try pool.write { db in
            guard let epoch = try String.fetchOne(db, sql: "SELECT value FROM store_meta WHERE key = 'epoch'"),
                let key = try Data.fetchOne(db, sql: "SELECT value FROM store_meta WHERE key = 'cursorKey'")
            else { throw FerryServerError(.internalError, "the store at \(path) has no epoch; it is damaged") }
            let cursors = PullCursorCodec(
                epoch: epoch, key: SymmetricKey(data: key),
                history: serving ? try Self.beginGeneration(db) : try Self.currentHistory(db))
            let known = LastChanges(version: try Self.meta(db, "version"), horizon: try Self.meta(db, "horizon"), lastNotice: try Self.lastNoticeID(db))
            return (cursors, LastChanges.Shared(known))
        }
    }

    /// The history as the serving process sees it, for an opening that
    /// begins no generation: the newest open generation is current.
    private static func currentHistory(_ db: Database) throws -> StoreHistory {
        var ended: [String: ChangePosition] = [:]
        var current = ""
        for row in try Row.fetchAll(db, sql: "SELECT id, ended_at FROM store_generations ORDER BY ended_at IS NULL, started_at") {
            if let end: Int64 = row[1] { ended[row[0]] = ChangePosition(major: end) } else { current = row[0] }
        }
        return StoreHistory(current: current, ended: ended)
    }

    /// Ends the generation the file was last opened in at the version it
    /// holds now, and begins a new one (``StoreHistory``). A file restored
    /// from a backup or copied while a server ran ends the copied generation
    /// where the copy stopped, so cursors issued past it are known to point
    /// into lost history.
    private static func beginGeneration(_ db: Database) throws -> StoreHistory {
        let version = try meta(db, "version")
        try db.execute(sql: "UPDATE store_generations SET ended_at = ? WHERE ended_at IS NULL", arguments: [version])
        let current = String(UUID().uuidString.lowercased().prefix(12))
        try db.execute(sql: "INSERT INTO store_generations (id, started_at) VALUES (?, ?)", arguments: [current, version])
        return try currentHistory(db)
    }

    /// The store's epoch: cursors from any other epoch get a reset.
    public var epoch: String { cursors.epoch }

    /// Files in `blobs/` beside the database file (``FileBlobStore``).
    public func makeBlobStore(maxBlobBytes: Int64) throws -> any BlobStore {
        try FileBlobStore(
            directory: URL(filePath: pool.path).deletingLastPathComponent().appending(path: "blobs"),
            maxBlobBytes: maxBlobBytes)
    }

    public func close() async throws {
        guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        changeFeed.close()
        await readAhead.close()
        uninstallCheckpointer()
        try await checkpointer.close()
        try pool.close()
    }

    /// Takes the checkpointer's hook off the writer. Blocking, as
    /// `pool.close()` is: an async write would throw in a cancelled task (a
    /// server's shutdown cancels its services) and leave the store open.
    private func uninstallCheckpointer() {
        let checkpointer = self.checkpointer
        pool.writeWithoutTransaction { db in checkpointer.uninstall(from: db) }
    }

    // MARK: Transactions

    /// Runs `body` in the store's write transaction; a database another
    /// process holds past the busy timeout answers 503. ``writes`` counts
    /// it from before its `BEGIN` to after its `COMMIT`.
    func write<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        let writes = self.writes
        return try await Self.mappingErrors {
            try await pool.writeWithoutTransaction { db in
                writes.begin()
                defer { writes.end() }
                var result: T?
                try db.inTransaction {
                    result = try body(db)
                    return .commit
                }
                return result!
            }
        }
    }

    /// Runs `body` on a read snapshot; errors as ``write(_:)``.
    func read<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await Self.mappingErrors { try await pool.read(body) }
    }

    /// SQLite's own errors, in the HTTP layer's terms: busy or locked is
    /// `unavailable` (retry shortly), and so is a full disk (the transaction
    /// is rolled back whole, so nothing changed); anything else stays an
    /// internal error the HTTP layer logs.
    private static func mappingErrors<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as DatabaseError where [.SQLITE_BUSY, .SQLITE_LOCKED].contains(error.resultCode) {
            throw FerryServerError(.unavailable, "the store is busy; retry shortly")
        } catch let error as DatabaseError
            where error.resultCode == .SQLITE_FULL || error.extendedResultCode == .SQLITE_IOERR_SHMSIZE
        {
            throw FerryServerError(.unavailable, "the store has no space left on its disk; nothing was changed, retry once space is freed")
        }
    }

    /// Runs `sql` through the connection's statement cache: a push writes
    /// the same few statements once per row, parsed once.
    static func execute(_ db: Database, sql: String, arguments: StatementArguments) throws {
        try db.cachedStatement(sql: sql).execute(arguments: arguments)
    }

    static func lastMutationID(_ db: Database, userID: String, clientID: String) throws -> Int64 {
        try Int64.fetchOne(
            db.cachedStatement(sql: "SELECT last_mutation_id FROM clients WHERE user_id = ? AND client_id = ?"),
            arguments: [userID, clientID]
        ) ?? 0
    }

    /// The newest notice id ever given (AUTOINCREMENT's sequence: collected notices count too).
    static func lastNoticeID(_ db: Database) throws -> Int64 {
        try Int64.fetchOne(db.cachedStatement(sql: "SELECT seq FROM sqlite_sequence WHERE name = 'notices'")) ?? 0
    }

    static func meta(_ db: Database, _ key: String) throws -> Int64 {
        try Int64.fetchOne(db.cachedStatement(sql: "SELECT value FROM store_meta WHERE key = ?"), arguments: [key]) ?? 0
    }

    // MARK: One row

    public func row(scope: String, table: String, rowID: String) async throws -> ServerRow? {
        try await read { db in
            try Self.loadRow(db, RowKey(scope: scope, table: table, rowID: rowID))?.serverRow
        }
    }

    public func lastAppliedMutationID(userID: String, clientID: String) async throws -> Int64 {
        // Known from this store's own commits (or a read of the file) when the client pushed or pulled since it
        // opened: never ahead of the file, and no read transaction on every push.
        if let applied = known.withLock({ $0.lastApplied(by: LastChanges.Client(userID: userID, clientID: clientID)) }) {
            return applied
        }
        return try await read { db in try Self.lastMutationID(db, userID: userID, clientID: clientID) }
    }
}
