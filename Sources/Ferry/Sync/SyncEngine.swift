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
///     transport: HTTPSyncTransport(baseURL: URL(string: "https://sync.example.com")!),
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
    var background: Task<Void, Never>?
    var stopTrigger: AsyncStream<Trigger>.Continuation?

    /// - Parameters:
    ///   - token: the bearer token to send, if one is at hand.
    ///   - tokenRefresher: called when the server refuses the token (401);
    ///     returns a new one, or throws when the user must sign in again.
    /// - throws: ``FerryError`` `.invalidConfiguration` for a bad configuration.
    public init(database: FerryDatabase, transport: any SyncTransport, configuration: SyncConfiguration,
                token: String? = nil, tokenRefresher: (@Sendable () async throws -> String)? = nil,
                logger: Logger = Logger(label: "ferry.sync")) throws {
        try configuration.validate()
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

    private func cycleWithRetries(attempts: Int?) async throws -> SyncSummary {
        var summary = SyncSummary()
        var failures = 0
        var refreshed = false
        broadcaster.update { $0.pushed = 0; $0.pulled = 0 }
        while true {
            try Task.checkCancellation()
            do {
                try await cycle(&summary)
                let now = Date()
                try await database.write { db in
                    try FerryMeta.setValue(Int64(now.timeIntervalSince1970 * 1000), for: .lastSyncAt, in: db)
                }
                try await refreshCounts()
                let refused = summary.refusedScopes
                broadcaster.update {
                    $0.phase = .idle
                    $0.lastError = refused.isEmpty ? nil : "the server refused to pull \(refused.joined(separator: ", "))"
                    $0.lastSuccessfulSync = now
                }
                return summary
            } catch {
                let failure = SyncFailure(error)
                switch failure {
                case .transient(let retryAfter):
                    failures += 1
                    summary.retries += 1
                    if let attempts, failures >= attempts {
                        broadcaster.update { $0.phase = .idle; $0.lastError = "\(error)" }
                        throw FerryError(.serverUnavailable, "sync gave up after \(failures) attempts; last failure: \(error)")
                    }
                    let delay = configuration.retry.delay(attempt: failures - 1, retryAfter: retryAfter,
                                                          unit: Double.random(in: 0..<1))
                    logger.info("sync failed, retrying", metadata: ["error": "\(error)", "delay": "\(delay)"])
                    broadcaster.update { $0.phase = .backingOff; $0.lastError = "\(error)" }
                    try await Task.sleep(for: delay)
                case .unauthorized:
                    if !refreshed, await credentials.refresh() {
                        refreshed = true
                        continue
                    }
                    broadcaster.update { $0.phase = .unauthorized; $0.lastError = "\(error)" }
                    throw FerryError(.unauthorized, "the server refused the token and no new one was available: \(error)")
                case .gap, .refused(_, _):
                    broadcaster.update { $0.phase = .idle; $0.lastError = "\(error)" }
                    throw FerryError(.serverRefused, "the server refused a request: \(error)")
                case .fatal:
                    broadcaster.update { $0.phase = .idle; $0.lastError = "\(error)" }
                    throw error
                }
            }
        }
    }

    private func cycle(_ summary: inout SyncSummary) async throws {
        try await checkIdentity(&summary)
        let layouts = database.layouts
        try await database.write { db in try SchemaWatch.refetchIfGrown(layouts, in: db) }
        try await pushAll(&summary)
        try await fetchRows()
        try await pullAll(&summary)
        if summary.identityRenewed {
            // A pull revealed a restored copy: its edits go out under the new identity now.
            try await pushAll(&summary)
        }
    }

    /// Once per engine: asks the server how far it got with this client id
    /// (an empty push) before numbering new mutations, so a database file
    /// restored from an older copy takes a new identity before it sends.
    private func checkIdentity(_ summary: inout SyncSummary) async throws {
        guard !identityChecked else { return }
        let clientID = try await database.read { db in try FerryDatabase.clientID(db) }
        let reply = try await transport.push(PushRequest(clientID: clientID, mutations: []), token: credentials.token)
        if try await renewIfRestored(serverLastApplied: reply.lastAppliedMutationID) {
            summary.identityRenewed = true
        }
        identityChecked = true
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

    // MARK: - Push

    private func pushAll(_ summary: inout SyncSummary) async throws {
        broadcaster.update { $0.phase = .pushing }
        let recorder = PushRecorder(database: database, userScope: configuration.userScope)
        var limit = configuration.pushBatchSize
        var gaps = 0
        while true {
            try Task.checkCancellation()
            let batchStart = ContinuousClock.now
            let batch = try database.outbox.nextBatch(limit: limit)
            summary.inDatabase += ContinuousClock.now - batchStart
            if batch.isEmpty { return }
            let clientID = try await database.read { db in try FerryDatabase.clientID(db) }
            let request = PushRequest(clientID: clientID, mutations: batch.map(wire))
            let reply: PushResponse
            do {
                reply = try await timed(&summary.waitingForServer) {
                    try await transport.push(request, token: credentials.token)
                }
            } catch {
                switch SyncFailure(error) {
                case .gap(let lastApplied):
                    // The server has applied nothing past `lastApplied`: number the rest after it.
                    gaps += 1
                    guard gaps <= 3 else { throw error }
                    try await database.write { db in try Outbox.renumber(after: lastApplied, in: db) }
                    continue
                case .refused(let status, let message) where [400, 403, 413].contains(status):
                    // A malformed mutation (400), a scope the user may not
                    // write (403) or one too large (413) fails the whole push:
                    // narrow down to it and set it aside.
                    if batch.count > 1 {
                        limit = max(1, batch.count / 2)
                        continue
                    }
                    try recorder.refuse(batch[0], reason: "HTTP \(status): \(message)")
                    summary.rejected += 1
                    continue
                default:
                    throw error
                }
            }
            let recordStart = ContinuousClock.now
            let report = try recorder.record(reply, for: batch)
            summary.inDatabase += ContinuousClock.now - recordStart
            if report.restoredFromBackup {
                _ = try await renewIfRestored(serverLastApplied: reply.lastAppliedMutationID)
                summary.identityRenewed = true
                continue
            }
            gaps = 0
            limit = min(configuration.pushBatchSize, limit * 2)
            summary.pushed += report.acknowledged
            summary.conflicts += report.conflicts
            summary.rejected += report.rejected
            let pushed = summary.pushed
            let pending = try await database.read(Self.pendingRows)
            broadcaster.update { $0.pushed = pushed; $0.pendingCount = pending }
        }
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

    // MARK: - Pull

    private func pullAll(_ summary: inout SyncSummary) async throws {
        broadcaster.update { $0.phase = .pulling }
        let applier = PageApplier(database: database, userScope: configuration.userScope)
        var (cursors, noticeCursors) = try await database.read { db in
            let rows = try Row.fetchAll(db, sql: "SELECT scope, cursor, notice_cursor FROM ferry_cursors")
            var cursors: [String: String] = [:]
            var notices: [String: String] = [:]
            for row in rows {
                cursors[row["scope"]] = row["cursor"]
                notices[row["scope"]] = row["notice_cursor"]
            }
            return (cursors, notices)
        }
        var active = configuration.scopes
        // A scope the server refuses fails the whole pull: then scopes are
        // pulled one at a time, and a refused one is skipped and reported.
        var oneAtATime = false
        while !active.isEmpty {
            try Task.checkCancellation()
            let clientID = try await database.read { db in try FerryDatabase.clientID(db) }
            let asked = oneAtATime ? [active[0]] : active
            let request = PullRequest(
                clientID: clientID,
                scopes: asked.map { PullRequest.ScopeCursor(scope: $0, cursor: cursors[$0], notices: noticeCursors[$0]) },
                limit: configuration.pullPageSize)
            let reply: PullResponse
            do {
                reply = try await timed(&summary.waitingForServer) {
                    try await transport.pull(request, token: credentials.token)
                }
            } catch {
                guard case .refused(let status, let message) = SyncFailure(error) else { throw error }
                if asked.count > 1 {
                    oneAtATime = true
                    continue
                }
                let scope = asked[0]
                if status == 400, cursors[scope] != nil {
                    // A cursor the server no longer accepts: start the scope over, as after a reset.
                    // The notice cursor stays, so no notice is delivered twice.
                    try await database.write { db in
                        try db.execute(sql: "UPDATE ferry_cursors SET cursor = NULL, refetching = 1 WHERE scope = ?", arguments: [scope])
                        try db.execute(sql: "DELETE FROM ferry_refetch_seen WHERE scope = ?", arguments: [scope])
                    }
                    cursors[scope] = nil
                    summary.resets += 1
                    continue
                }
                if status == 400, noticeCursors[scope] != nil {
                    // Only the notice cursor is refused: notices start over (stored ones are not stored twice).
                    try await database.write { db in
                        try db.execute(sql: "UPDATE ferry_cursors SET notice_cursor = NULL WHERE scope = ?", arguments: [scope])
                    }
                    noticeCursors[scope] = nil
                    continue
                }
                logger.warning("the server refuses to pull a scope; skipping it", metadata: ["scope": "\(scope)", "error": "\(message)"])
                summary.refusedScopes.append(scope)
                broadcaster.update { $0.lastError = "pulling \(scope): HTTP \(status): \(message)" }
                active.removeFirst()
                continue
            }
            if try await renewIfRestored(serverLastApplied: reply.lastAppliedMutationID) {
                summary.identityRenewed = true
            }
            var next: [String] = []
            for page in reply.pages {
                try Task.checkCancellation()
                let applyStart = ContinuousClock.now
                let report = try applier.apply(page)
                summary.inDatabase += ContinuousClock.now - applyStart
                if page.reset { summary.resets += 1 }
                summary.pulled += page.changes.count
                summary.setAside += report.setAside
                summary.swept += report.swept
                summary.conflicts += report.notices
                cursors[page.scope] = page.cursor
                if let noticeCursor = page.noticeCursor { noticeCursors[page.scope] = noticeCursor }
                if page.hasMore { next.append(page.scope) }
                if !report.setAside.isEmpty {
                    logger.warning("pulled rows set aside", metadata: ["rows": "\(report.setAside)"])
                }
                let pulled = summary.pulled
                broadcaster.update { $0.pulled = pulled }
            }
            active = next + active.filter { !asked.contains($0) }
        }
    }

    // MARK: - Rows read back

    /// Reads back the rows whose refused edits were discarded with no
    /// server version at hand, and restores them (`GET /v1/rows`).
    private func fetchRows() async throws {
        let wanted = try await database.read { db in
            try Row.fetchAll(db, sql: "SELECT tbl, row_id, scope FROM ferry_row_fetches")
                .map { (table: $0["tbl"] as String, rowID: $0["row_id"] as String, scope: $0["scope"] as String?) }
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
            try database.writeWithoutCapture { db in
                if readable, let layout,
                   try !ServerRowRestore.restoreIfStorable(fetched, table: row.table, rowID: row.rowID, layout: layout, db) {
                    logger.warning("the server's row cannot be stored here; the local row stays", metadata: [
                        "table": "\(row.table)", "row": "\(row.rowID)",
                    ])
                }
                try db.execute(sql: "DELETE FROM ferry_row_fetches WHERE tbl = ? AND row_id = ?", arguments: [row.table, row.rowID])
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
            (try Self.pendingRows(db), try Conflicts.count(db),
             try Int.fetchOne(db, sql: "SELECT count(DISTINCT coalesce(mutation_id, -seq)) FROM ferry_outbox WHERE state = 'rejected'") ?? 0)
        }
        broadcaster.update {
            $0.pendingCount = pending
            $0.conflictCount = conflicts
            $0.rejectedCount = rejected
        }
    }

    /// Rows with changes waiting to be pushed (cheap enough to run after every write).
    static func pendingRows(_ db: Database) throws -> Int {
        try Int.fetchOne(db, sql: "SELECT count(*) FROM (SELECT 1 FROM ferry_outbox WHERE state = 'pending' GROUP BY tbl, row_id)") ?? 0
    }
}
