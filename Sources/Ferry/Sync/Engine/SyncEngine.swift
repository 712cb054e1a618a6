import FerryProtocol
import Foundation
import GRDB
import Logging

/// Carries local changes to the server and server changes to the local
/// database: push, then pull.
///
/// It never loses, duplicates or silently overwrites an edit: mutations are
/// numbered and frozen before they are sent (a resend after a lost reply is
/// applied once), transient failures retry with backoff without touching
/// the queue's order, rejected mutations are set aside and reported, and
/// conflicts land in ``FerryDatabase/conflicts`` for the app to settle.
///
/// ```swift
/// let engine = try SyncEngine(
///     database: database,
///     transport: URLSessionSyncTransport(baseURL: URL(string: "https://sync.example.com")!),
///     configuration: SyncConfiguration(userID: "alice"),
///     token: token,
///     tokenRefresher: { try await auth.freshToken() })
///
/// let summary = try await engine.sync()   // once, now
/// await engine.start()                    // or by itself: after writes, periodically, and live
/// for await status in engine.statusUpdates() { print(status.phase, status.pendingCount) }
/// ```
///
/// ## Topics
///
/// ### Syncing
/// - ``sync()``
/// - ``start()``
/// - ``stop()``
///
/// ### Watching
/// - ``status``
/// - ``statusUpdates()``
public actor SyncEngine {
    /// The local database this engine syncs.
    public nonisolated let database: FerryDatabase
    /// What it follows and how.
    public nonisolated let configuration: SyncConfiguration

    let transport: any SyncTransport
    let credentials: Credentials
    let broadcaster = StatusBroadcaster()
    let logger: Logger
    private var running: Task<SyncSummary, any Error>?
    var identityChecked = false
    /// The synced columns were compared with the last sync's once: they
    /// cannot change while the database is open.
    var tablesChecked = false
    /// Waits out backoffs, debounces and periods (a test clock in tests).
    let clock: any Clock<Duration>
    /// The jitter of backoffs, in `0 ..< 1`.
    let random: @Sendable () -> Double
    var background: Task<Void, Never>?
    var stopTrigger: AsyncStream<Trigger>.Continuation?
    /// Scopes the live stream leaves out, with when the server said the
    /// user can no longer read them (`revoked`). A sync that started after
    /// that and was not refused them brings them back.
    var liveRevoked: [String: ContinuousClock.Instant] = [:]
    /// The scopes the open live stream follows (none while it is closed).
    var liveFollowing: Set<String> = []
    /// A trigger asked for a pull (news, a tick, a catch-up) that no sync
    /// has begun since: the next sync pulls, even if a local write set it off.
    var pullOwed = true
    /// The background loop's decisions (``BackgroundDecisions``).
    var decisions = BackgroundDecisions(debounce: .zero, retry: RetryPolicy())

    /// - Parameters:
    ///   - database: the local database to sync.
    ///   - transport: how requests reach the server (``URLSessionSyncTransport``, say).
    ///   - configuration: who the user is, what to follow, how much to move at once.
    ///   - token: the bearer token to send, if one is at hand.
    ///   - tokenRefresher: called when the server refuses the token (401);
    ///     returns a new one, or throws when the user must sign in again.
    ///   - logger: where the engine logs retries, set-aside rows and renewed identities.
    /// - throws: ``FerryError`` `.invalidConfiguration` for a bad configuration.
    public init(
        database: FerryDatabase, transport: any SyncTransport, configuration: SyncConfiguration,
        token: String? = nil, tokenRefresher: (@Sendable () async throws -> String)? = nil,
        logger: Logger = Logger(label: "ferry.sync")
    ) throws {
        try self.init(
            database: database, transport: transport, configuration: configuration, token: token,
            tokenRefresher: tokenRefresher, logger: logger, clock: ContinuousClock(), random: { Double.random(in: 0..<1) })
    }

    /// The engine with its clock and its random source given (tests).
    init(
        database: FerryDatabase, transport: any SyncTransport, configuration: SyncConfiguration,
        token: String?, tokenRefresher: (@Sendable () async throws -> String)?, logger: Logger,
        clock: any Clock<Duration>, random: @escaping @Sendable () -> Double
    ) throws {
        try configuration.validate()
        self.clock = clock
        self.random = random
        self.database = database
        self.transport = transport
        self.configuration = configuration
        self.credentials = Credentials(token: token, refresher: tokenRefresher)
        self.logger = logger
    }

    /// The latest status.
    public nonisolated var status: SyncStatus { broadcaster.current }

    /// The status now, then after every change, until the engine is gone.
    public nonisolated func statusUpdates() -> AsyncStream<SyncStatus> {
        broadcaster.stream()
    }

    /// Replaces the bearer token (after the user signs in again). A
    /// background loop that was signed out (``SyncStatus/Phase/unauthorized``)
    /// syncs at once with it.
    public func updateToken(_ token: String) async {
        await credentials.update(token)
        pullOwed = true
        stopTrigger?.yield(.now)
    }

    /// Syncs now: pushes every pending change, then pulls every followed
    /// scope to its end, and returns what happened.
    ///
    /// Transient failures are retried with backoff up to
    /// ``RetryPolicy/attemptsPerSync`` times. A sync already running is
    /// waited for first. Cancelling stops between pages: every page is
    /// applied whole or not at all.
    ///
    /// - throws: ``FerryError`` `.serverUnavailable` when the attempts run
    ///   out, `.unauthorized` when no valid token can be had, `.serverRefused`
    ///   when the server refuses a pull (a scope the user may not read).
    @discardableResult
    public func sync() async throws -> SyncSummary {
        try await runExclusive(attempts: configuration.retry.attemptsPerSync)
    }

    /// Pushes every pending change and pulls nothing, unless the server did
    /// not take each change as written: for a device that follows its scopes
    /// live, whose stream brings what others write (the background loop
    /// pushes so after local writes while the stream is open). The writer's
    /// own change is not downloaded back before others see it.
    ///
    /// When the push meets a conflict, a rejection, a mutation set aside or a
    /// server that lost history, it goes on as ``sync()`` does, so the device
    /// ends with the server's merge of its rows.
    ///
    /// ```swift
    /// try await database.write { db in try db.execute(sql: "UPDATE note SET title = 'Ferry' WHERE id = 'n1'") }
    /// try await engine.push()    // seen on every live device of the scope; nothing pulled here
    /// ```
    ///
    /// - throws: as ``sync()``.
    @discardableResult
    public func push() async throws -> SyncSummary {
        let pushed = try await runExclusive(attempts: configuration.retry.attemptsPerSync, pushOnly: true)
        guard pushed.needsPull else { return pushed }
        return pushed.followed(by: try await sync())
    }

    /// The file holding an attachment's bytes: this device's copy, or
    /// downloaded now (continuing an interrupted download, verified against
    /// its SHA-256 before it is returned).
    ///
    /// ```swift
    /// let url = try await engine.open(photo)
    /// imageView.image = UIImage(contentsOfFile: url.path)
    /// ```
    ///
    /// - throws: ``FerryError`` `.attachmentNotFound` for an attachment
    ///   removed meanwhile; `.attachmentCorrupted` when the downloaded bytes
    ///   hash wrong; ``SyncTransportError`` when the server cannot be reached;
    ///   `.invalidConfiguration` when attachment files are sealed at rest
    ///   (their files hold nothing readable: use ``fetch(_:)``, then
    ///   ``Attachments/data(for:)`` or ``Attachments/export(_:to:)``).
    public func open(_ attachment: Attachment) async throws -> URL {
        if let url = try database.attachments.localURL(for: attachment) { return url }
        return try await transfer(attachment)
    }

    /// Makes sure the attachment's bytes are on this device, downloading
    /// and verifying them if not: the way to fetch an attachment whose
    /// files are sealed at rest (``FerryConfiguration/attachmentCipher``)
    /// before reading it.
    ///
    /// ```swift
    /// try await engine.fetch(photo)
    /// let image = UIImage(data: try database.attachments.data(for: photo))
    /// ```
    ///
    /// - throws: as ``open(_:)``.
    public func fetch(_ attachment: Attachment) async throws {
        let files = try database.attachments.files()
        if try database.attachments.wholeFile(of: attachment, in: files) != nil { return }
        _ = try await transfer(attachment)
    }

    private func transfer(_ attachment: Attachment) async throws -> URL {
        guard let record = try await database.read({ db in try AttachmentRecord.fetchOne(db, key: attachment.id) }) else {
            throw FerryError(.attachmentNotFound, "attachment \(attachment.id) was removed")
        }
        let transfer = AttachmentTransfer(
            database: database, transport: transport, userScope: configuration.userScope,
            retry: configuration.retry, logger: logger, clock: clock, random: random)
        return try await transfer.download(record, token: await credentials.token)
    }

    func runExclusive(attempts: Int?, pushOnly: Bool = false) async throws -> SyncSummary {
        while let current = running {
            _ = try? await current.value
        }
        let task = Task {
            let lock = try await self.acquireFileLock()
            defer { lock.release() }
            return try await self.cycleWithRetries(attempts: attempts, pushOnly: pushOnly)
        }
        running = task
        defer { running = nil }
        return try await withTaskCancellationHandler {
            try await task.value
        } onCancel: {
            task.cancel()
        }
    }

    /// Waits for any other sync of the database file to end (another
    /// engine, another process), up to ``SyncConfiguration/syncLockWait``.
    private func acquireFileLock() async throws -> SyncFileLock {
        let path = database.writer.path
        let deadline = ContinuousClock.now + configuration.syncLockWait
        var told = false
        while true {
            if let lock = try SyncFileLock.tryAcquire(for: path) { return lock }
            if !told {
                told = true
                logger.info("another sync of this database is running; waiting for it", metadata: ["database": "\(path)"])
            }
            guard ContinuousClock.now < deadline else {
                throw FerryError(.syncAlreadyRunning, "a sync is already running on this database (another process or engine); sync again when it ends")
            }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    func clientID() async throws -> String {
        try await database.read { db in try FerryDatabase.clientID(db) }
    }

    /// Asks the server how far it got with this client id (an empty push)
    /// before numbering new mutations, so a database file restored from an
    /// older copy takes a new identity before it sends.
    ///
    /// A copy holding mutations it handed out before it was made does not
    /// renew yet: it sends those first (`verifying` of them), under the old
    /// id, and the server compares each with what it applied under that id.
    /// Settling them unseen would drop an edit the copy numbered after the
    /// original moved on.
    func checkIdentity() async throws -> (renewed: Bool, serverLastApplied: Int64, verifying: Int) {
        let reply = try await transport.push(PushRequest(clientID: try await clientID(), mutations: []), token: credentials.token)
        let serverLastApplied = reply.lastAppliedMutationID
        let verifying = try await database.read { db in
            try ClientIdentity.isRestoredCopy(serverLastApplied: serverLastApplied, in: db) ? try ClientIdentity.handedOut(db) : 0
        }
        guard verifying == 0 else { return (false, serverLastApplied, verifying) }
        return (try await renewIfRestored(serverLastApplied: serverLastApplied, appliedThrough: nil), serverLastApplied, 0)
    }

    /// Takes a new identity if the server has applied more than this file
    /// ever handed out, settling the handed-out mutations up to
    /// `appliedThrough` (those the server answered as replays). With `nil`
    /// (no push answered), a file holding handed-out mutations does not
    /// renew: its next push sends them for the server to compare.
    func renewIfRestored(serverLastApplied: Int64, appliedThrough: Int64?) async throws -> Bool {
        let now = database.wallClock.nowMilliseconds()
        let renewed: String? = try await database.write { db in
            guard try ClientIdentity.isRestoredCopy(serverLastApplied: serverLastApplied, in: db) else { return nil }
            if appliedThrough == nil, try ClientIdentity.handedOut(db) > 0 { return nil }
            return try ClientIdentity.renew(appliedThrough: min(appliedThrough ?? 0, serverLastApplied), now: now, in: db)
        }
        if let renewed {
            logger.warning("the database is a restored older copy; it now syncs as a new client", metadata: ["clientID": "\(renewed)"])
        }
        return renewed != nil
    }

    func wire(_ mutation: PendingMutation) -> Mutation {
        let key = database.layouts[mutation.table]?.primaryKey
        var columns = [String: ColumnValue](minimumCapacity: mutation.operation == .delete ? 0 : mutation.values.count)
        if mutation.operation != .delete {
            // One pass, into one dictionary: a filtered copy, then a mapped one, made two.
            for (column, value) in mutation.values where column != key { columns[column] = ColumnValue(value) }
        }
        return Mutation(
            mutationID: mutation.mutationID ?? 0,
            table: mutation.table,
            rowID: mutation.rowID,
            scope: mutation.scope ?? configuration.userScope,
            operation: mutation.operation == .delete ? .delete : .upsert,
            columns: columns,
            baseVersion: mutation.baseVersion,
            hlc: mutation.hlc)
    }

    // MARK: - Rows read back

    /// Reads back the rows whose refused edits were discarded with no
    /// server version at hand, and restores them (`GET /v1/rows`).
    func fetchRows() async throws {
        let wanted = try await database.read { db in
            try RowFetchRecord.fetchAll(db)
        }
        for row in wanted {
            try Task.checkCancellation()
            var fetched: ServerRow?
            var readable = true
            do {
                fetched = try await transport.row(scope: row.scope ?? configuration.userScope, table: row.table, rowID: row.rowID, token: credentials.token)
            } catch {
                guard case .refused(let status, _) = SyncFailure(error) else { throw error }
                // A row this user may not read is, as far as they can see, no row: the
                // discarded edit goes. A row refused as malformed is left as it is.
                readable = status == 403
                logger.warning("a row to restore could not be read", metadata: ["table": "\(row.table)", "row": "\(row.rowID)", "error": "\(error)"])
            }
            let layout = database.layouts[row.table]
            let logger = self.logger
            let (serverRow, mayRead) = (fetched, readable)
            try await database.writeWithoutCapture { db in
                if mayRead, let layout,
                    try !ServerRowRestore.restoreIfStorable(serverRow, table: row.table, rowID: row.rowID, layout: layout, db)
                {
                    logger.warning(
                        "the server's row cannot be stored here; the local row stays",
                        metadata: [
                            "table": "\(row.table)", "row": "\(row.rowID)",
                        ])
                }
                try row.delete(db)
            }
        }
    }

    func timed<T>(_ total: inout Duration, _ body: () async throws -> T) async throws -> T {
        let start = ContinuousClock.now
        defer { total += ContinuousClock.now - start }
        return try await body()
    }

    // MARK: - Counts

    func refreshCounts() async throws {
        showCounts(try await database.read { db in try Self.counts(db) })
    }

    /// The pending, conflict and rejected counts the status shows.
    static func counts(_ db: Database) throws -> (pending: Int, conflicts: Int, rejected: Int) {
        (try Outbox.pendingCount(db), try Conflicts.count(db), try Outbox.rejectedCount(db))
    }

    func showCounts(_ counts: (pending: Int, conflicts: Int, rejected: Int)) {
        let (pending, conflicts, rejected) = counts
        broadcaster.update {
            $0.pendingCount = pending
            $0.conflictCount = conflicts
            $0.rejectedCount = rejected
        }
    }
}
