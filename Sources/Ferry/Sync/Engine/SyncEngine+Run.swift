import FerryProtocol
import Foundation
import GRDB

/// What one sync holds while it runs: the state machine that decides each
/// step, what the steps did so far, and where each followed scope stands.
struct SyncRun {
    /// When the run began: what a refusal (or its absence) is as of.
    let started = ContinuousClock.now
    var machine: SyncStateMachine
    var summary = SyncSummary()
    var cursors = ScopeCursors()
    /// Rows the pull expects in all, as the server estimated them.
    var estimate = PullEstimate()
    /// The last batch pushed: a mutation set aside is its only one.
    var batch: [PendingMutation] = []
    /// The failure the machine was told of last, for the error a stop throws.
    var lastError: (any Error)?
    let recorder: PushRecorder
    let applier: PageApplier
    /// The next page, asked for while this one applies (``PullPrefetch``).
    var prefetch: PullPrefetch?
    /// The push just recorded left nothing to push: the push the machine
    /// asks for next checks that with a read before it takes a batch in a
    /// write transaction. Good for that one action only.
    var drained = false
    /// The cursors are still to be read: by the push that follows the
    /// schema check, with its batch (one transaction fewer before the
    /// first byte goes out), or before any other step.
    var cursorsDue = false
    /// When the pending rows may be counted again for the status, while pushing.
    var pendingCountDue: ContinuousClock.Instant?
    /// The pending rows being counted for the status, beside the pushes.
    var counting: PendingCountRead?
    /// The next push's batch, taken while the last one was on the wire
    /// (``PushAhead``). Any step but a push drops it.
    var ahead: PushAhead?

    /// The event for a failed step, remembering the error.
    mutating func failure(_ error: any Error) -> SyncFailure {
        lastError = error
        return SyncFailure(error)
    }

    /// The prefetched answer to `request`, if one was asked for exactly
    /// that; any other prefetch is cancelled and dropped.
    mutating func takePrefetch(for request: PullRequest) -> Task<PullResponse, any Error>? {
        defer { prefetch = nil }
        guard let prefetch else { return nil }
        if prefetch.request == request { return prefetch.task }
        prefetch.task.cancel()
        return nil
    }

    /// The pending count read beside the pushes (``PendingCountRead``),
    /// once it is done. The next is due no sooner than a second later, and
    /// no sooner than twenty times this one's time: counting reads every
    /// pending row, and counted after every batch, a long drain was
    /// quadratic. The sync's end counts again.
    mutating func takeCount() -> Int? {
        guard let answer = counting?.answer else { return nil }
        counting = nil
        pendingCountDue = .now + max(.seconds(1), answer.took * 20)
        return answer.count
    }

    /// Cancels and drops a pending count no push will show.
    mutating func dropCount() {
        counting?.cancel()
        counting = nil
    }

    /// Cancels and drops a prefetch no pull will take.
    mutating func dropPrefetch() {
        prefetch?.task.cancel()
        prefetch = nil
    }

    /// Drops the batch taken ahead. One already sent is cancelled, and its
    /// push is returned, for the caller to wait for: no push of its ids is
    /// then still on the wire when they are sent again.
    mutating func dropAhead() -> Task<PushResponse, any Error>? {
        defer { ahead = nil }
        ahead?.sent?.answer.cancel()
        return ahead?.sent?.answer
    }
}

extension SyncEngine {
    /// Runs one sync: performs each action ``SyncStateMachine`` decides and
    /// tells it what came of it, until it finishes or stops.
    /// With `pushOnly`, no scope is pulled but to recover (a server that
    /// lost history, a new identity), and no eager attachment fetched.
    func cycleWithRetries(attempts: Int?, pushOnly: Bool = false) async throws -> SyncSummary {
        broadcaster.update {
            $0.pushed = 0; $0.pulled = 0; $0.pullEstimate = nil
        }
        var run = SyncRun(
            machine: SyncStateMachine(
                settings: .init(
                    scopes: configuration.scopes, pushBatchSize: configuration.pushBatchSize,
                    retry: configuration.retry, attempts: attempts, poisonAttempts: configuration.poisonAttempts,
                    pushOnly: pushOnly),
                identityChecked: identityChecked, random: random),
            recorder: PushRecorder(database: database, userScope: configuration.userScope),
            applier: PageApplier(
                database: database, userScope: configuration.userScope,
                lostServerHistory: configuration.lostServerHistory))
        // Bytes first, so a device that pulls the metadata finds the blob.
        try await transferAttachments(uploading: true, &run)
        var action = run.machine.start()
        // A sync that stops or throws leaves no estimate: it was of a pull that did not finish.
        var finished = false
        defer {
            run.dropPrefetch()
            // A push sent ahead that no step took (the sync stopped or threw): its ids stay handed out.
            run.ahead?.sent?.answer.cancel()
            run.dropCount()
            if !finished { broadcaster.update { $0.pullEstimate = nil } }
        }
        while true {
            try Task.checkCancellation()
            if case .pull = action {} else { run.dropPrefetch() }
            if case .push = action {
            } else {
                _ = await run.dropAhead()?.result
                // Shown by a push: one after another step would show a count from before it.
                run.dropCount()
                run.drained = false
                if run.cursorsDue {
                    run.cursors = try await ScopeCursors.load(database)
                    run.cursorsDue = false
                }
            }
            let event: SyncStateMachine.Event
            switch action {
            case .checkIdentity: event = await checkIdentity(&run)
            case .refetchGrownTables: event = try await refetchGrownTables(&run)
            case .push(let limit): event = try await push(limit: limit, &run)
            case .renumber(let lastApplied): event = try await renumber(after: lastApplied, &run)
            case .renewIdentity(let applied): event = try await renewIdentity(appliedThrough: applied, &run)
            case .setAside(let reason): event = try await setAside(reason: reason, &run)
            case .probe: event = await probe()
            case .readBackRows: event = await readBackRows(&run)
            case .pull(let scopes): event = try await pull(scopes, &run)
            case .resetCursor(let scope):
                try await run.cursors.resetRows(of: scope, in: database)
                run.summary.resets += 1
                event = .cursorReset
            case .resetNoticeCursor(let scope):
                try await run.cursors.resetNotices(of: scope, in: database)
                event = .cursorReset
            case .refreshToken: event = .tokenRefreshed(await credentials.refresh())
            case .wait(let delay): event = try await wait(delay, &run)
            case .finish(let refused):
                if !pushOnly { try await transferAttachments(uploading: false, &run) }
                let summary = try await finish(refusedScopes: refused, pulled: !pushOnly, &run)
                finished = true
                return summary
            case .fail(let stop): throw fail(stop, run)
            }
            action = run.machine.handle(event)
        }
    }

    // MARK: - Steps

    /// Uploads attachments added here (before the push), or downloads those
    /// of eager tables and then tidies the files (after the pull: the files
    /// of attachments removed elsewhere go, the cache keeps its limit). A
    /// failed transfer is recorded on its attachment and tried again at the
    /// next sync; it does not fail the sync.
    private func transferAttachments(uploading: Bool, _ run: inout SyncRun) async throws {
        guard database.attachmentSettings.root != nil else { return }
        let transfer = AttachmentTransfer(
            database: database, transport: transport, userScope: configuration.userScope,
            retry: configuration.retry, logger: logger, clock: clock, random: random)
        let token = await credentials.token
        let report = uploading ? try await transfer.uploadPending(token: token) : try await transfer.downloadEager(token: token)
        run.summary.attachmentsUploaded += report.uploaded
        run.summary.attachmentsDownloaded += report.downloaded
        run.summary.attachmentTransfersFailed += report.failed
        guard !uploading else { return }
        do {
            try await database.attachments.maintain()
        } catch {
            logger.warning("attachment maintenance failed", metadata: ["error": "\(error)"])
        }
    }

    private func checkIdentity(_ run: inout SyncRun) async -> SyncStateMachine.Event {
        do {
            let (renewed, serverLastApplied, verifying) = try await checkIdentity()
            let lost =
                renewed || verifying > 0 ? false : try await recoverIfHistoryLost(serverLastApplied: serverLastApplied, &run)
            // The recovery started every scope over, and pulls next: from the cursors it left.
            if lost { run.cursorsDue = true }
            identityChecked = true
            if renewed { run.summary.identityRenewed = true }
            return .identityChecked(renewed: renewed, historyLost: lost, verifying: verifying)
        } catch {
            return .failed(run.failure(error))
        }
    }

    private func refetchGrownTables(_ run: inout SyncRun) async throws -> SyncStateMachine.Event {
        if !tablesChecked {
            let layouts = database.layouts
            try await database.write { db in try SchemaWatch.refetchIfGrown(layouts, in: db) }
            tablesChecked = true
        }
        // Read after the refetch, which drops the grown tables' cursors: by the push that comes next.
        run.cursorsDue = true
        return .tablesRefetched
    }

    private func push(limit: Int, _ run: inout SyncRun) async throws -> SyncStateMachine.Event {
        if run.drained, !run.cursorsDue {
            run.drained = false
            // A read, not a batch's write: an edit committed since the reply shows here and goes in a batch.
            if try await database.read(Outbox.nothingToPush) {
                run.batch = []
                return .nothingToPush
            }
        }
        broadcaster.update { $0.phase = .pushing }
        let batchStart = ContinuousClock.now
        let taken: TakenBatch
        var sentAhead: SentPush?
        if let ahead = run.ahead, ahead.limit == limit, !run.cursorsDue {
            taken = ahead.taken
            sentAhead = ahead.sent
        } else {
            _ = await run.dropAhead()?.result
            let outbox = database.outbox
            let readCursors = run.cursorsDue
            let (batch, cursors) = try await database.write { db in
                let batch = TakenBatch(
                    mutations: try outbox.takeBatch(limit: limit, db), settled: try SettledNotices.pending(db),
                    assignedUpTo: try FerryMeta.value(.lastMutationID, in: db) ?? 0)
                return (batch, readCursors ? try ScopeCursors.read(db) : nil)
            }
            taken = batch
            if let cursors {
                run.cursors = cursors
                run.cursorsDue = false
            }
        }
        run.ahead = nil
        let batch = taken.mutations
        run.batch = batch
        run.summary.inDatabase += ContinuousClock.now - batchStart
        // In a push of their own: a server that cannot take them refuses that push, never the edits.
        if !taken.settled.isEmpty { try await sendSettled(taken.settled, &run) }
        guard !batch.isEmpty else { return .nothingToPush }
        let sent: SentPush
        if let sentAhead {
            sent = sentAhead
        } else {
            sent = try await send(batch, naming: run.cursors)
        }
        // While the batch is on the wire: the pending count when it is due, as of this batch still pending,
        // beside the pushes, and the next batch (in a drain, the device's share of a batch overlaps the
        // server's).
        if run.counting == nil, run.pendingCountDue.map({ ContinuousClock.now >= $0 }) ?? true {
            run.counting = PendingCountRead(database)
        }
        let aheadStart = ContinuousClock.now
        // A batch short of its limit took every pending edit: nothing is left to take ahead (a live edit's
        // push pays no second write transaction).
        let full = limit == configuration.pushBatchSize && batch.count == limit
        var ahead = full ? await takeAhead(after: batch, limit: limit) : nil
        run.summary.inDatabase += ContinuousClock.now - aheadStart
        if let next = ahead, next.taken.settled.isEmpty {
            // Encoded now too, so that it goes out the moment this batch's reply lets it (unprepared, it is
            // encoded then, as any push).
            ahead?.prepared = try? await prepare(next.taken.mutations, naming: run.cursors)
        }
        let reply: PushResponse
        do {
            reply = try await sent.reply()
            run.summary.waitingForServer += ContinuousClock.now - sent.at
        } catch {
            run.summary.waitingForServer += ContinuousClock.now - sent.at
            return .pushFailed(size: batch.count, run.failure(error))
        }
        if let next = ahead, next.taken.settled.isEmpty,
            PushRecorder.keepsBatchAhead(reply, assignedUpTo: taken.assignedUpTo)
        {
            // The reply changes nothing the next batch froze: it goes out now, and the server applies it
            // while this reply is recorded.
            if let prepared = next.prepared {
                ahead?.sent = await send(prepared)
            } else {
                ahead?.sent = try await send(next.taken.mutations, naming: run.cursors)
            }
        }
        let recordStart = ContinuousClock.now
        let report: PushRecorder.Report
        do {
            report = try await run.recorder.record(reply, for: batch, assignedUpTo: taken.assignedUpTo)
        } catch {
            ahead?.sent?.answer.cancel()
            throw error
        }
        run.summary.inDatabase += ContinuousClock.now - recordStart
        // The recorder forgets a batch taken ahead only for a reply that kept it from going out early.
        assert(!(report.forgotLaterIDs && ahead?.sent != nil), "a batch sent ahead had its ids forgotten")
        for (scope, cursor) in report.movedCursors { run.cursors.rows[scope] = cursor }
        if report.restoredFromBackup {
            // Settled only what this batch carried: a mutation handed out but not in it (a narrowed
            // push) was never compared, and goes out again under the new id.
            let sent = batch.compactMap(\.mutationID).max() ?? 0
            _ = try await renewIfRestored(serverLastApplied: reply.lastAppliedMutationID, appliedThrough: sent)
            run.summary.identityRenewed = true
            return .pushed(size: batch.count, renewed: true)
        }
        run.ahead = report.forgotLaterIDs ? nil : ahead
        run.summary.pushed += report.acknowledged
        run.summary.conflicts += report.conflicts
        run.summary.rejected += report.rejected
        let pushed = run.summary.pushed
        run.drained = report.drained
        var pending = run.takeCount()
        if report.drained {
            // Nothing is left: zero without a count, and one still running is of an earlier batch.
            pending = 0
            run.dropCount()
        }
        broadcaster.update {
            $0.pushed = pushed
            if let pending { $0.pendingCount = pending }
        }
        return .pushed(size: batch.count, renewed: false)
    }

    /// Sends a batch's push; the answer comes as the returned push's reply.
    /// The push names a cursor of `cursors` as the history its edits were made on.
    private func send(_ batch: [PendingMutation], naming cursors: ScopeCursors) async throws -> SentPush {
        let request = try await pushRequest(batch, naming: cursors)
        let (transport, token) = (self.transport, await credentials.token)
        return SentPush(answer: Task { try await transport.push(request, token: token) }, at: .now)
    }

    /// Sends a push prepared ahead (``prepare(_:naming:)``).
    private func send(_ prepared: PreparedPush) async -> SentPush {
        let (transport, token) = (self.transport, await credentials.token)
        return SentPush(answer: Task { try await transport.push(prepared, token: token) }, at: .now)
    }

    /// A batch's push, readied by the transport to go out later: its body
    /// encoded while the batch before it is on the wire.
    private func prepare(_ batch: [PendingMutation], naming cursors: ScopeCursors) async throws -> PreparedPush {
        transport.preparePush(try await pushRequest(batch, naming: cursors))
    }

    private func pushRequest(_ batch: [PendingMutation], naming cursors: ScopeCursors) async throws -> PushRequest {
        PushRequest(clientID: try await clientID(), mutations: batch.map(wire), seen: cursors.seen(among: configuration.scopes))
    }

    /// The batch after `batch`, taken while `batch` is on the wire
    /// (``Outbox/takeBatch(limit:after:_:)``). A failure here fails nothing:
    /// the next push takes its batch as usual.
    private func takeAhead(after batch: [PendingMutation], limit: Int) async -> PushAhead? {
        let outbox = database.outbox
        do {
            return try await database.write { db in
                let next = try outbox.takeBatch(limit: limit, after: batch, db)
                guard !next.isEmpty else { return nil }
                return PushAhead(
                    limit: limit,
                    taken: TakenBatch(
                        mutations: next, settled: try SettledNotices.pending(db),
                        assignedUpTo: try FerryMeta.value(.lastMutationID, in: db) ?? 0))
            }
        } catch {
            logger.debug("the next push batch was not taken ahead", metadata: ["error": "\(error)"])
            return nil
        }
    }

    /// Tells the server of conflicts settled here, in a push of their own
    /// (no mutations). A failure keeps them for the next sync; it does not
    /// fail this one.
    private func sendSettled(_ settled: [PushRequest.SettledNotice], _ run: inout SyncRun) async throws {
        do {
            let request = PushRequest(clientID: try await clientID(), mutations: [], settled: settled)
            _ = try await timed(&run.summary.waitingForServer) { try await transport.push(request, token: credentials.token) }
            try await database.write { db in try SettledNotices.sent(settled, db) }
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            logger.warning("settled conflicts were not sent; they go with the next sync", metadata: ["error": "\(error)"])
        }
    }

    private func renumber(after lastApplied: Int64, _ run: inout SyncRun) async throws -> SyncStateMachine.Event {
        let lost = try await recoverIfHistoryLost(serverLastApplied: lastApplied, &run)
        try await database.write { db in try Outbox.renumber(after: lastApplied, in: db) }
        // Pull (the recovery) before pushing again, as after `historyLost`.
        return lost ? .pushFailed(size: 0, .historyLost) : .renumbered
    }

    /// Takes a new client id after the server found another copy of this
    /// database pushing under it (`clientIDReused`): the handed-out
    /// mutations up to `appliedThrough` were applied, the rest go out again
    /// under the new id.
    private func renewIdentity(appliedThrough: Int64, _ run: inout SyncRun) async throws -> SyncStateMachine.Event {
        let now = database.wallClock.nowMilliseconds()
        let renewed = try await database.write { db in
            try ClientIdentity.renew(appliedThrough: appliedThrough, now: now, in: db)
        }
        logger.warning(
            "another copy of this database syncs under its client id; this one now syncs as a new client",
            metadata: ["clientID": "\(renewed)"])
        run.summary.identityRenewed = true
        return .renumbered
    }

    /// A server that says it applied less for this client than it once
    /// acknowledged lost history: every followed scope is refetched as a
    /// recovery, and what the server lacks goes back.
    @discardableResult
    private func recoverIfHistoryLost(serverLastApplied: Int64, _ run: inout SyncRun) async throws -> Bool {
        let applier = run.applier, scopes = configuration.scopes
        let started = try await database.writeWithoutCapture { db in
            try applier.startRecoveryIfHistoryLost(serverLastApplied: serverLastApplied, scopes: scopes, db)
        }
        guard started else { return false }
        logger.warning(
            "the server applied less than it had acknowledged: it lost history; refetching every scope to send back what it lacks",
            metadata: ["serverLastApplied": "\(serverLastApplied)"])
        for scope in scopes { run.cursors.startOver(scope) }
        return true
    }

    private func setAside(reason: String, _ run: inout SyncRun) async throws -> SyncStateMachine.Event {
        let mutation = run.batch[0]
        try await run.recorder.refuse(mutation, reason: reason)
        run.summary.rejected += 1
        logger.warning("a mutation was set aside", metadata: ["mutation": "\(mutation.mutationID ?? 0)", "reason": "\(reason)"])
        return .setAside
    }

    /// An empty push: does the server answer at all, now that the mutation it
    /// failed on is out of the way?
    private func probe() async -> SyncStateMachine.Event {
        do {
            _ = try await transport.push(PushRequest(clientID: try await clientID(), mutations: []), token: credentials.token)
            return .probed(nil)
        } catch {
            return .probed(SyncFailure(error))
        }
    }

    private func readBackRows(_ run: inout SyncRun) async -> SyncStateMachine.Event {
        do {
            try await fetchRows()
            return .rowsReadBack
        } catch {
            return .failed(run.failure(error))
        }
    }

    private func pull(_ asked: [String], _ run: inout SyncRun) async throws -> SyncStateMachine.Event {
        broadcaster.update { $0.phase = .pulling }
        let request = PullRequest(
            clientID: try await clientID(),
            scopes: asked.map { run.cursors.request(for: $0) },
            limit: configuration.pullPageSize)
        let reply: PullResponse
        let prefetched = run.takePrefetch(for: request)
        do {
            reply = try await timed(&run.summary.waitingForServer) {
                if let prefetched {
                    // Taken from the run, so the sync's own cancellation must reach it here.
                    return try await withTaskCancellationHandler {
                        try await prefetched.value
                    } onCancel: {
                        prefetched.cancel()
                    }
                }
                return try await transport.pull(request, token: credentials.token)
            }
        } catch {
            let scope = asked[0]
            let failed = run.failure(error)
            let hasCursor = run.cursors.rows[scope] != nil, hasNoticeCursor = run.cursors.notices[scope] != nil
            if case .refused(let status, let message) = failed, asked.count == 1, !(status == 400 && (hasCursor || hasNoticeCursor)) {
                logger.warning("the server refuses to pull a scope; skipping it", metadata: ["scope": "\(scope)", "error": "\(message)"])
                broadcaster.update { $0.lastError = "pulling \(scope): HTTP \(status): \(message)" }
            }
            return .pullFailed(asked: asked, failed, hasCursor: hasCursor, hasNoticeCursor: hasNoticeCursor)
        }
        let renewed = try await renewIfRestored(serverLastApplied: reply.lastAppliedMutationID, appliedThrough: nil)
        if renewed { run.summary.identityRenewed = true }
        if !renewed, let next = PullPrefetch.nextRequest(after: reply, of: request, cursors: run.cursors) {
            let transport = self.transport, credentials = self.credentials
            run.prefetch = PullPrefetch(request: next, task: Task { try await transport.pull(next, token: await credentials.token) })
        }
        var more: [String] = []
        var sentBack = false
        if configuration.lostServerHistory == .sendBack, reply.pages.contains(where: \.lostHistory) {
            // Edits handed out on the lost history were applied by none of the store's own.
            let lastApplied = reply.lastAppliedMutationID
            try await database.write { db in try Outbox.forgetHandedOut(after: lastApplied, in: db) }
        }
        for page in reply.pages {
            try Task.checkCancellation()
            let applyStart = ContinuousClock.now
            let report = try await run.applier.apply(page)
            run.summary.inDatabase += ContinuousClock.now - applyStart
            if page.reset { run.summary.resets += 1 }
            run.summary.pulled += page.changes.count
            run.summary.setAside += report.setAside
            run.summary.swept += report.swept
            run.summary.sentBack += report.sentBack
            if report.sentBack > 0 {
                sentBack = true
                logger.warning(
                    "the server lost history; rows it lacks are sent back",
                    metadata: ["scope": "\(page.scope)", "rows": "\(report.sentBack)"])
            }
            run.summary.conflicts += report.notices
            run.cursors.advance(page)
            if page.hasMore { more.append(page.scope) }
            if !report.setAside.isEmpty {
                logger.warning("pulled rows set aside", metadata: ["rows": "\(report.setAside)"])
            }
            run.estimate.applied(page)
            let (pulled, estimate) = (run.summary.pulled, run.estimate.total)
            broadcaster.update {
                $0.pulled = pulled; $0.pullEstimate = estimate
            }
        }
        // A server that lost history gets the bytes it lacks before the rows sent back name them.
        if sentBack { try await transferAttachments(uploading: true, &run) }
        return .pulled(asked: asked, more: more, renewed: renewed, sentBack: sentBack)
    }

    private func wait(_ delay: Duration, _ run: inout SyncRun) async throws -> SyncStateMachine.Event {
        run.summary.retries += 1
        let error = run.lastError.map { "\($0)" }
        logger.info("sync failed, retrying", metadata: ["error": "\(error ?? "")", "delay": "\(delay)"])
        broadcaster.update {
            $0.phase = .backingOff; $0.lastError = error
        }
        try await clock.sleep(for: delay)
        return .waited
    }

    private func finish(refusedScopes refused: [String], pulled: Bool, _ run: inout SyncRun) async throws -> SyncSummary {
        await credentials.accepted()
        // A revoked scope this sync, begun after the revocation, could pull is followed live again.
        if pulled {
            liveRevoked = liveRevoked.filter { scope, revoked in refused.contains(scope) || revoked >= run.started }
        }
        run.summary.refusedScopes = refused
        let now = database.wallClock.nowMilliseconds()
        showCounts(
            try await database.write { db in
                try FerryMeta.setValue(now, for: .lastSyncAt, in: db)
                return try Self.counts(db)
            })
        run.estimate.finish()
        let estimate = run.estimate.total
        broadcaster.update {
            $0.phase = .idle
            $0.pullEstimate = estimate
            $0.lastError = refused.isEmpty ? nil : "the server refused to pull \(refused.joined(separator: ", "))"
            $0.lastSuccessfulSync = Date(timeIntervalSince1970: Double(now) / 1000)
        }
        return run.summary
    }

    /// The error a stopped sync throws.
    private func fail(_ stop: SyncStateMachine.Stop, _ run: SyncRun) -> any Error {
        let error = run.lastError ?? FerryError(.serverRefused, "the sync stopped")
        broadcaster.update {
            $0.phase = stop == .unauthorized ? .unauthorized : .idle; $0.lastError = "\(error)"
        }
        switch stop {
        case .gaveUp(let attempts):
            return FerryError(.serverUnavailable, "sync gave up after \(attempts) attempts; last failure: \(error)")
        case .unauthorized:
            return FerryError(.unauthorized, "the server refused the token and no new one was available: \(error)")
        case .refused:
            return FerryError(.serverRefused, "the server refused a request: \(error)")
        case .fatal:
            return error
        }
    }
}
