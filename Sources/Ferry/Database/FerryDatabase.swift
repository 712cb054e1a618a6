import FerryProtocol
import Foundation
import GRDB

/// The app's local database: the source of truth, with Ferry's change
/// capture and outbox built in.
///
/// Opening it runs Ferry's own migrations, then the app's, then installs the
/// capture triggers on every synced table. From then on any write — a GRDB
/// record, raw SQL, a bulk import — records its outbox entry in the same
/// transaction.
///
/// ```swift
/// let database = try FerryDatabase(path: "/path/to/app.sqlite", schema: schema)
/// try database.write { db in
///     try db.execute(sql: "INSERT INTO note(id, title) VALUES (?, ?)",
///                    arguments: [UUID().uuidString, "Groceries"])
/// }
/// for try await count in database.outbox.observePendingCount() {
///     print("\(count) changes waiting to sync")
/// }
/// ```
///
/// ## Topics
///
/// ### Opening
/// - ``init(path:schema:configuration:)``
/// - ``init(writer:schema:configuration:)``
///
/// ### Reading and writing
/// `write(_:)` and `read(_:)`, blocking or async, and:
/// - ``observe(_:)``
///
/// ### Sync state
/// - ``outbox``
/// - ``clientID``
public struct FerryDatabase: Sendable {
    /// The underlying GRDB writer: a `DatabasePool` when opened from a path.
    ///
    /// Writes made directly through it are captured too (the triggers see
    /// every write); only their timing is not recorded in ``telemetry``.
    public let writer: any DatabaseWriter
    /// The app schema this database was opened with.
    public let schema: FerrySchema
    /// Transaction timing and lock waits.
    public let telemetry: DatabaseTelemetry

    let capture: ChangeCapture
    let layouts: [String: TableLayout]
    let wallClock: any WallClock
    /// Where attachment files live, if anywhere, and how they are kept.
    let attachmentSettings: AttachmentSettings

    /// Opens (creating if needed) the database file at `path` as a WAL
    /// `DatabasePool`, and migrates it.
    ///
    /// - throws: ``FerryError`` when a synced table is invalid or encryption
    ///   cannot be applied; `DatabaseError` on SQLite failures.
    public init(path: String, schema: FerrySchema, configuration: FerryConfiguration = FerryConfiguration()) throws {
        try configuration.validate()
        let telemetry = DatabaseTelemetry(
            logger: configuration.logger,
            longTransactionThreshold: configuration.longTransactionThreshold)
        var grdb = Configuration()
        grdb.label = configuration.label
        grdb.foreignKeysEnabled = true
        grdb.journalMode = .wal
        grdb.maximumReaderCount = configuration.maximumReaderCount
        let schedule = BusyWaitSchedule(timeoutMilliseconds: configuration.busyTimeoutMilliseconds)
        grdb.busyMode = .callback { [telemetry] attempt in
            guard let delay = schedule.delay(attempt: attempt) else {
                telemetry.recordBusyWait(timedOut: true)
                return false
            }
            if attempt == 0 { telemetry.recordBusyWait(timedOut: false) }
            usleep(useconds_t(delay * 1000))
            return true
        }
        let encryption = configuration.encryption
        let sqlTrace = configuration.sqlTrace
        grdb.prepareDatabase { db in
            // The key goes first: nothing may read the file before it.
            if let encryption { try Encryption.apply(encryption, to: db) }
            try db.execute(sql: "PRAGMA temp_store = MEMORY")
            if let sqlTrace {
                db.trace(options: .statement) { event in sqlTrace(event.expandedDescription) }
            }
        }

        let existed = FileManager.default.fileExists(atPath: path)
        let pool: DatabasePool
        do {
            pool = try DatabasePool(path: path, configuration: grdb)
        } catch {
            if !existed { Self.removeEmptyFiles(at: path) }
            throw error
        }
        try self.init(writer: pool, schema: schema, configuration: configuration, telemetry: telemetry)
    }

    /// Opens an existing GRDB writer — an in-memory `DatabaseQueue` in tests,
    /// or a pool the app configured itself — and migrates it.
    ///
    /// ```swift
    /// let database = try FerryDatabase(writer: DatabaseQueue(), schema: schema)
    /// ```
    ///
    /// The writer's own GRDB configuration governs its connection:
    /// `encryption`, `busyTimeout` and `sqlTrace` of `configuration` apply only
    /// when Ferry opens the file itself, and setting `encryption` here throws.
    public init(writer: any DatabaseWriter, schema: FerrySchema, configuration: FerryConfiguration = FerryConfiguration()) throws {
        try configuration.validate()
        if configuration.encryption != nil {
            throw FerryError(
                .invalidConfiguration,
                """
                encryption cannot be applied to an already open writer; open by path with                 `FerryDatabase(path:schema:configuration:)`, or key the connection in your GRDB configuration
                """)
        }
        try self.init(
            writer: writer, schema: schema, configuration: configuration,
            telemetry: DatabaseTelemetry(
                logger: configuration.logger,
                longTransactionThreshold: configuration.longTransactionThreshold))
    }

    private init(writer: any DatabaseWriter, schema: FerrySchema, configuration: FerryConfiguration, telemetry: DatabaseTelemetry) throws {
        let capture = ChangeCapture(clock: EditClock(wallClock: configuration.wallClock, resumingAfter: .zero))
        // A read-only writer (GRDB's `readonly`): nothing is migrated, installed or optimized, so nothing is written.
        let layouts: [TableLayout]
        if writer.configuration.readonly {
            layouts = try writer.read { db in
                try capture.register(on: db)
                guard try FerryMigrations.isComplete(db), try schema.isMigrated(db) else {
                    throw FerryError(
                        .invalidConfiguration,
                        "the database is open read-only and needs migrating (its schema is older than this build's): open it once with write access")
                }
                return try schema.syncedTables.map { try TableLayout.read($0, in: db) } + [TableLayout.attachments(in: db)]
            }
        } else {
            layouts = try Self.prepare(writer, schema: schema, configuration: configuration, capture: capture)
        }
        self.writer = writer
        self.schema = schema
        self.telemetry = telemetry
        self.capture = capture
        self.layouts = Dictionary(uniqueKeysWithValues: layouts.map { ($0.table.name, $0) })
        self.wallClock = configuration.wallClock
        let path = writer.path
        self.attachmentSettings = AttachmentSettings(
            root: configuration.attachmentsDirectory
                ?? (path.isEmpty || path.hasPrefix(":memory:") || path.hasPrefix("file:")
                    ? nil
                    : URL(filePath: path).deletingLastPathComponent()),
            cipher: configuration.attachmentCipher,
            downloads: configuration.attachmentDownloads,
            cacheLimit: configuration.attachmentCacheLimit,
            steps: configuration.attachmentSteps)
    }

    /// Migrates Ferry's tables and the app's, installs the capture triggers
    /// and optimizes: what opening a writable database does. The layouts of
    /// the synced tables.
    private static func prepare(
        _ writer: any DatabaseWriter, schema: FerrySchema, configuration: FerryConfiguration, capture: ChangeCapture
    ) throws -> [TableLayout] {
        try writer.writeWithoutTransaction { db in
            // GRDB's WAL setup sets synchronous=NORMAL after prepareDatabase runs, so FULL is applied here.
            try db.execute(sql: "PRAGMA synchronous = \(configuration.synchronous.rawValue)")
            try db.execute(sql: "PRAGMA temp_store = MEMORY")
            // Rows deleted by INSERT OR REPLACE fire delete triggers only with recursive triggers on.
            try db.execute(sql: "PRAGMA recursive_triggers = ON")
            try capture.register(on: db)
            try FerryMigrations.migrate(db)
            let saved: Int64 = try FerryMeta.value(.hlc, in: db) ?? 0
            let queued = try Int64.fetchOne(db, sql: "SELECT max(hlc) FROM ferry_outbox") ?? 0
            capture.clock.advance(past: HLCTimestamp(rawValue: max(saved, queued)))
            _ = try Self.clientID(db)
        }
        // Pending app migrations run without Ferry's triggers: a migration that
        // drops or renames a column of a synced table would otherwise fail on
        // the stale trigger text. They are reinstalled for the new shape below.
        if try writer.read({ db in try !schema.isMigrated(db) }) {
            try writer.write { db in try ChangeCapture.installTriggers(for: [], in: db) }
        }
        try capture.withoutCapture { try schema.migrate(writer) }
        let layouts: [TableLayout] = try writer.write { db in
            var seen = Set<String>()
            let layouts =
                try schema.syncedTables.map { table in
                    guard seen.insert(table.name.lowercased()).inserted else {
                        throw FerryError(.invalidSyncedTable, "table `\(table.name)` is declared synced twice; declare each table once")
                    }
                    return try TableLayout.read(table, in: db)
                } + [TableLayout.attachments(in: db)]
            try ChangeCapture.installTriggers(for: layouts, in: db)
            return layouts
        }
        try writer.writeWithoutTransaction { db in
            // Recommended on open for long-lived connections (sqlite.org/pragma.html#pragma_optimize).
            try db.execute(sql: "PRAGMA optimize = 0x10002")
        }
        return layouts
    }

    private static func removeEmptyFiles(at path: String) {
        for file in [path, path + "-wal", path + "-shm"] {
            let size = (try? FileManager.default.attributesOfItem(atPath: file)[.size] as? Int) ?? nil
            if size == 0 { try? FileManager.default.removeItem(atPath: file) }
        }
    }

    /// This installation's identity towards the sync server.
    ///
    /// Made once when Ferry's tables are created. The sync engine gives the
    /// database a new one when it finds the file was restored from an older
    /// copy, so the server never mistakes new edits for ones it has seen.
    public var clientID: String {
        get throws { try read(Self.clientID) }
    }

    static func clientID(_ db: Database) throws -> String {
        guard let clientID: String = try FerryMeta.value(.clientID, in: db) else {
            throw FerryError(.invalidConfiguration, "ferry_meta holds no client id; the database was altered outside Ferry")
        }
        return clientID
    }

    /// The synced table declarations, by table name.
    public var syncedTables: [SyncedTable] { schema.syncedTables }

    /// The outbox of changes waiting to be pushed.
    public var outbox: Outbox { Outbox(database: self) }
}

// MARK: - Closing

extension FerryDatabase {
    /// Closes the database's connections. Later reads and writes throw.
    ///
    /// Stop any ``SyncEngine`` on it first. Closing is optional: the
    /// connections also close when the last reference goes away.
    ///
    /// ```swift
    /// await engine.stop()
    /// try database.close()
    /// ```
    ///
    /// - throws: `DatabaseError` `SQLITE_BUSY` while a statement is still running.
    public func close() throws {
        try writer.close()
    }
}

// MARK: - Reading and writing

extension FerryDatabase {
    /// Runs `updates` in an IMMEDIATE write transaction and commits it.
    ///
    /// ```swift
    /// do {
    ///     try database.write { db in
    ///         try db.execute(sql: "UPDATE note SET title = ? WHERE id = ?", arguments: ["Errands", id])
    ///     }
    /// } catch FerryError.Code.storageFull {
    ///     showAlert("Your phone is full: free some space and save again.")
    /// }
    /// ```
    ///
    /// - throws: ``FerryError`` `storageFull` when the disk has no room for
    ///   the write (it is rolled back whole; nothing committed before it is
    ///   lost); otherwise what `updates` throws, or GRDB's `DatabaseError`.
    @discardableResult
    public func write<T>(_ updates: (Database) throws -> T) throws -> T {
        try Self.namingFullDisk { try writer.writeWithoutTransaction { db in try timedWrite(db, updates) } }
    }

    /// Runs `updates` in an IMMEDIATE write transaction without blocking the
    /// caller. Throws as the synchronous `write(_:)` does.
    @discardableResult
    public func write<T: Sendable>(_ updates: @escaping @Sendable (Database) throws -> T) async throws -> T {
        do {
            return try await writer.writeWithoutTransaction { db in try timedWrite(db, updates) }
        } catch let error as DatabaseError where NoSpace.means(error) {
            throw Self.fullDisk(error)
        }
    }

    /// Reads from a consistent snapshot, concurrently with writes.
    public func read<T>(_ value: (Database) throws -> T) throws -> T {
        try writer.read { db in try timedRead(value, db) }
    }

    /// Reads from a consistent snapshot without blocking the caller.
    public func read<T: Sendable>(_ value: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await writer.read { db in try timedRead(value, db) }
    }

    /// The values of a query, as an async sequence that yields again after
    /// every commit that changes them (GRDB `ValueObservation`).
    ///
    /// ```swift
    /// for try await titles in database.observe({ db in try String.fetchAll(db, sql: "SELECT title FROM note") }) {
    ///     print(titles)
    /// }
    /// ```
    public func observe<T: Sendable>(_ value: @escaping @Sendable (Database) throws -> T) -> AsyncValueObservation<T> {
        ValueObservation.tracking(value).values(in: writer)
    }

    /// Runs `updates` in a write transaction whose changes are not captured:
    /// for applying server changes, which must never echo back.
    func writeWithoutCapture<T>(_ updates: (Database) throws -> T) throws -> T {
        // The guard is switched inside the transaction, once this write holds
        // the writer, so no other write can run while capture is off.
        try write { db in try capture.withoutCapture { try updates(db) } }
    }

    /// ``writeWithoutCapture(_:)`` without blocking the caller: the sync
    /// engine applies pages and replies through this, so no cooperative
    /// thread waits on SQLite.
    func writeWithoutCapture<T: Sendable>(_ updates: @escaping @Sendable (Database) throws -> T) async throws -> T {
        let capture = self.capture
        return try await write { db in try capture.withoutCapture { try updates(db) } }
    }

    private static func namingFullDisk<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as DatabaseError where NoSpace.means(error) {
            throw fullDisk(error)
        }
    }

    private static func fullDisk(_ error: DatabaseError) -> FerryError {
        FerryError(
            .storageFull,
            "the device has no space left (\(error.message ?? "SQLITE_FULL")): the write was rolled back "
                + "and everything committed before it is kept; free some space and write again")
    }

    private func timedWrite<T>(_ db: Database, _ updates: (Database) throws -> T) throws -> T {
        let clock = ContinuousClock()
        let start = clock.now
        defer { telemetry.recordWrite(clock.now - start, connection: db.description) }
        var result: T?
        try db.inTransaction(.immediate) {
            result = try updates(db)
            try AttachmentOwners.sweep(db)
            return .commit
        }
        return result!
    }

    private func timedRead<T>(_ value: (Database) throws -> T, _ db: Database) throws -> T {
        let clock = ContinuousClock()
        let start = clock.now
        defer { telemetry.recordRead(clock.now - start) }
        return try value(db)
    }
}
