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
    private var identityChecked = false
    /// Waits out backoffs, debounces and periods (a test clock in tests).
    let clock: any Clock<Duration>
    /// The jitter of backoffs, in `0 ..< 1`.
    let random: @Sendable () -> Double
    var background: Task<Void, Never>?
    var stopTrigger: AsyncStream<Trigger>.Continuation?

    /// - Parameters:
    ///   - database: the local database to sync.
    ///   - transport: how requests reach the server (``URLSessionSyncTransport``, say).
    ///   - configuration: who the user is, what to follow, how much to move at once.
    ///   - token: the bearer token to send, if one is at hand.
    ///   - tokenRefresher: called when the server refuses the token (401);
    ///     returns a new one, or throws when the user must sign in again.
    ///   - logger: where the engine logs retries, set-aside rows and renewed identities.
    /// - throws: ``FerryError`` `.invalidConfiguration` for a bad configuration.
    public init(database: FerryDatabase, transport: any SyncTransport, configuration: SyncConfiguration,
                token: String? = nil, tokenRefresher: (@Sendable () async throws -> String)? = nil,
                logger: Logger = Logger(label: "ferry.sync")) throws {
        try self.init(database: database, transport: transport, configuration: configuration, token: token,
                      tokenRefresher: tokenRefresher, logger: logger, clock: ContinuousClock(), random: { Double.random(in: 0..<1) })
    }

    /// The engine with its clock and its random source given (tests).
    init(database: FerryDatabase, transport: any SyncTransport, configuration: SyncConfiguration,
         token: String?, tokenRefresher: (@Sendable () async throws -> String)?, logger: Logger,
         clock: any Clock<Duration>, random: @escaping @Sendable () -> Double) throws {
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

    /// Replaces the bearer token (after the user signs in again).
    public func updateToken(_ token: String) async {
        await credentials.update(token)
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

    func runExclusive(attempts: Int?) async throws -> SyncSummary {
        while let current = running {
            _ = try? await current.value
        }
        let task = Task { try await self.cycleWithRetries(attempts: attempts) }
        running = task
        defer { running = nil }
        return try await withTaskCancellationHandler {
            try await task.value
        } onCancel: {
            task.cancel()
        }
    }

    // MARK: - One sync

    /// Runs one sync by performing the actions ``SyncStateMachine`` decides.
    private func cycleWithRetries(attempts: Int?) async throws -> SyncSummary {
        var summary = SyncSummary()
        broadcaster.update { $0.pushed = 0; $0.pulled = 0 }
        var machine = SyncStateMachine(
            settings: .init(scopes: configuration.scopes, pushBatchSize: configuration.pushBatchSize, retry: configuration.retry,
                            attempts: attempts, poisonAttempts: configuration.poisonAttempts),
            identityChecked: identityChecked, random: random
        )
        let recorder = PushRecorder(database: database, userScope: configuration.userScope)
        let applier = PageApplier(database: database, userScope: configuration.userScope)
        var cursors = ScopeCursors()
        /// The last batch pushed: a mutation set aside is its only one.
        var batch: [PendingMutation] = []
        /// The failure the machine is told of last, for the error a stop throws.
        var lastError: (any Error)?
        var action = machine.start()

        /// The event for a failed step, remembering the error.
        func failure(_ error: any Error) -> SyncFailure {
            lastError = error
            return SyncFailure(error)
        }

        while true {
            try Task.checkCancellation()
            switch action {
            case .checkIdentity:
                do {
                    let renewed = try await checkIdentity()
                    identityChecked = true
                    if renewed { summary.identityRenewed = true }
                    action = machine.handle(.identityChecked(renewed: renewed))
                } catch {
                    action = machine.handle(.failed(failure(error)))
                }
            case .refetchGrownTables:
                let layouts = database.layouts
                try await database.write { db in try SchemaWatch.refetchIfGrown(layouts, in: db) }
                // Read after the refetch, which drops the grown tables' cursors.
                cursors = try await ScopeCursors.load(database)
                action = machine.handle(.tablesRefetched)
            case .push(let limit):
                broadcaster.update { $0.phase = .pushing }
                let batchStart = ContinuousClock.now
                let outbox = database.outbox
                batch = try await database.write { db in try outbox.takeBatch(limit: limit, db) }
                summary.inDatabase += ContinuousClock.now - batchStart
                guard !batch.isEmpty else {
                    action = machine.handle(.nothingToPush)
                    continue
                }
                let request = PushRequest(clientID: try await clientID(), mutations: batch.map(wire))
                let reply: PushResponse
                do {
                    reply = try await timed(&summary.waitingForServer) {
                        try await transport.push(request, token: credentials.token)
                    }
                } catch {
                    action = machine.handle(.pushFailed(size: batch.count, failure(error)))
                    continue
                }
                let recordStart = ContinuousClock.now
                let report = try await recorder.record(reply, for: batch)
                summary.inDatabase += ContinuousClock.now - recordStart
                if report.restoredFromBackup {
                    _ = try await renewIfRestored(serverLastApplied: reply.lastAppliedMutationID)
                    summary.identityRenewed = true
                    action = machine.handle(.pushed(size: batch.count, renewed: true))
                    continue
                }
                summary.pushed += report.acknowledged
                summary.conflicts += report.conflicts
                summary.rejected += report.rejected
                let pushed = summary.pushed
                let pending = try await database.read(Outbox.pendingCount)
                broadcaster.update { $0.pushed = pushed; $0.pendingCount = pending }
                action = machine.handle(.pushed(size: batch.count, renewed: false))
            case .renumber(let lastApplied):
                try await database.write { db in try Outbox.renumber(after: lastApplied, in: db) }
                action = machine.handle(.renumbered)
            case .setAside(let reason):
                try await recorder.refuse(batch[0], reason: reason)
                summary.rejected += 1
                logger.warning("a mutation was set aside", metadata: ["mutation": "\(batch[0].mutationID ?? 0)", "reason": "\(reason)"])
                action = machine.handle(.setAside)
            case .probe:
                do {
                    _ = try await transport.push(PushRequest(clientID: try await clientID(), mutations: []), token: credentials.token)
                    action = machine.handle(.probed(nil))
                } catch {
                    let probeFailure = SyncFailure(error)
                    action = machine.handle(.probed(probeFailure))
                }
            case .readBackRows:
                do {
                    try await fetchRows()
                    action = machine.handle(.rowsReadBack)
                } catch {
                    action = machine.handle(.failed(failure(error)))
                }
            case .pull(let asked):
                broadcaster.update { $0.phase = .pulling }
                let request = PullRequest(
                    clientID: try await clientID(),
                    scopes: asked.map { cursors.request(for: $0) },
                    limit: configuration.pullPageSize)
                let reply: PullResponse
                do {
                    reply = try await timed(&summary.waitingForServer) {
                        try await transport.pull(request, token: credentials.token)
                    }
                } catch {
                    let scope = asked[0]
                    let failed = failure(error)
                    let hasCursor = cursors.rows[scope] != nil, hasNoticeCursor = cursors.notices[scope] != nil
                    if case .refused(let status, let message) = failed, asked.count == 1, !(status == 400 && (hasCursor || hasNoticeCursor)) {
                        logger.warning("the server refuses to pull a scope; skipping it", metadata: ["scope": "\(scope)", "error": "\(message)"])
                        broadcaster.update { $0.lastError = "pulling \(scope): HTTP \(status): \(message)" }
                    }
                    action = machine.handle(.pullFailed(asked: asked, failed, hasCursor: hasCursor, hasNoticeCursor: hasNoticeCursor))
                    continue
                }
                let renewed = try await renewIfRestored(serverLastApplied: reply.lastAppliedMutationID)
                if renewed { summary.identityRenewed = true }
                var more: [String] = []
                for page in reply.pages {
                    try Task.checkCancellation()
                    let applyStart = ContinuousClock.now
                    let report = try await applier.apply(page)
                    summary.inDatabase += ContinuousClock.now - applyStart
                    if page.reset { summary.resets += 1 }
                    summary.pulled += page.changes.count
                    summary.setAside += report.setAside
                    summary.swept += report.swept
                    summary.conflicts += report.notices
                    cursors.advance(page)
                    if page.hasMore { more.append(page.scope) }
                    if !report.setAside.isEmpty {
                        logger.warning("pulled rows set aside", metadata: ["rows": "\(report.setAside)"])
                    }
                    let pulled = summary.pulled
                    broadcaster.update { $0.pulled = pulled }
                }
                action = machine.handle(.pulled(asked: asked, more: more, renewed: renewed))
            case .resetCursor(let scope):
                try await cursors.resetRows(of: scope, in: database)
                summary.resets += 1
                action = machine.handle(.cursorReset)
            case .resetNoticeCursor(let scope):
                try await cursors.resetNotices(of: scope, in: database)
                action = machine.handle(.cursorReset)
            case .refreshToken:
                action = machine.handle(.tokenRefreshed(await credentials.refresh()))
            case .wait(let delay):
                summary.retries += 1
                let error = lastError.map { "\($0)" }
                logger.info("sync failed, retrying", metadata: ["error": "\(error ?? "")", "delay": "\(delay)"])
                broadcaster.update { $0.phase = .backingOff; $0.lastError = error }
                try await clock.sleep(for: delay)
                action = machine.handle(.waited)
            case .finish(let refused):
                summary.refusedScopes = refused
                let now = database.wallClock.nowMilliseconds()
                try await database.write { db in try FerryMeta.setValue(now, for: .lastSyncAt, in: db) }
                try await refreshCounts()
                broadcaster.update {
                    $0.phase = .idle
                    $0.lastError = refused.isEmpty ? nil : "the server refused to pull \(refused.joined(separator: ", "))"
                    $0.lastSuccessfulSync = Date(timeIntervalSince1970: Double(now) / 1000)
                }
                return summary
            case .fail(let stop):
                let error = lastError ?? FerryError(.serverRefused, "the sync stopped")
                broadcaster.update { $0.phase = stop == .unauthorized ? .unauthorized : .idle; $0.lastError = "\(error)" }
                switch stop {
                case .gaveUp(let attempts):
                    throw FerryError(.serverUnavailable, "sync gave up after \(attempts) attempts; last failure: \(error)")
                case .unauthorized:
                    throw FerryError(.unauthorized, "the server refused the token and no new one was available: \(error)")
                case .refused:
                    throw FerryError(.serverRefused, "the server refused a request: \(error)")
                case .fatal:
                    throw error
                }
            }
        }
    }

    private func clientID() async throws -> String {
        try await database.read { db in try FerryDatabase.clientID(db) }
    }

    /// Asks the server how far it got with this client id (an empty push)
    /// before numbering new mutations, so a database file restored from an
    /// older copy takes a new identity before it sends.
    private func checkIdentity() async throws -> Bool {
        let reply = try await transport.push(PushRequest(clientID: try await clientID(), mutations: []), token: credentials.token)
        return try await renewIfRestored(serverLastApplied: reply.lastAppliedMutationID)
    }

    private func renewIfRestored(serverLastApplied: Int64) async throws -> Bool {
        let now = database.wallClock.nowMilliseconds()
        let renewed: String? = try await database.write { db in
            guard try ClientIdentity.isRestoredCopy(serverLastApplied: serverLastApplied, in: db) else { return nil }
            return try ClientIdentity.renew(serverLastApplied: serverLastApplied, now: now, in: db)
        }
        if let renewed {
            logger.warning("the database is a restored older copy; it now syncs as a new client", metadata: ["clientID": "\(renewed)"])
        }
        return renewed != nil
    }

    private func wire(_ mutation: PendingMutation) -> Mutation {
        let key = database.layouts[mutation.table]?.primaryKey
        return Mutation(
            mutationID: mutation.mutationID ?? 0,
            table: mutation.table,
            rowID: mutation.rowID,
            scope: mutation.scope ?? configuration.userScope,
            operation: mutation.operation == .delete ? .delete : .upsert,
            columns: mutation.operation == .delete
                ? [:] : mutation.values.filter { $0.key != key }.mapValues(ColumnValue.init),
            baseVersion: mutation.baseVersion,
            hlc: mutation.hlc)
    }

    // MARK: - Rows read back

    /// Reads back the rows whose refused edits were discarded with no
    /// server version at hand, and restores them (`GET /v1/rows`).
    private func fetchRows() async throws {
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
                   try !ServerRowRestore.restoreIfStorable(serverRow, table: row.table, rowID: row.rowID, layout: layout, db) {
                    logger.warning("the server's row cannot be stored here; the local row stays", metadata: [
                        "table": "\(row.table)", "row": "\(row.rowID)",
                    ])
                }
                try row.delete(db)
            }
        }
    }

    private func timed<T>(_ total: inout Duration, _ body: () async throws -> T) async throws -> T {
        let start = ContinuousClock.now
        defer { total += ContinuousClock.now - start }
        return try await body()
    }

    // MARK: - Counts

    func refreshCounts() async throws {
        let (pending, conflicts, rejected) = try await database.read { db in
            (try Outbox.pendingCount(db), try Conflicts.count(db),
             try Outbox.rejectedCount(db))
        }
        broadcaster.update {
            $0.pendingCount = pending
            $0.conflictCount = conflicts
            $0.rejectedCount = rejected
        }
    }
}
