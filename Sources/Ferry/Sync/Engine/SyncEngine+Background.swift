import FerryProtocol
import Foundation
import GRDB

/// Syncing by itself: shortly after local writes (debounced), periodically,
/// and when the server's live stream announces news.
extension SyncEngine {
    enum Trigger: Sendable {
        /// A local write: wait for more before syncing.
        case localChange
        /// Live news, a periodic tick, or the start: sync now.
        case now
    }

    /// Starts syncing by itself, beginning with a sync now. Transient
    /// failures retry with backoff, without limit, until ``stop()``.
    ///
    /// ```swift
    /// await engine.start()
    /// // ... the app writes; changes go out within `debounce`, news comes in live ...
    /// await engine.stop()
    /// ```
    public func start() {
        guard background == nil else { return }
        let (triggers, trigger) = AsyncStream.makeStream(of: Trigger.self, bufferingPolicy: .bufferingNewest(1))
        let configuration = self.configuration
        decisions = BackgroundDecisions(debounce: configuration.debounce, retry: configuration.retry)
        background = Task {
            await withTaskGroup(of: Void.self) { group in
                // Each source of triggers is supervised on its own: one that
                // fails is reported in the status and restarts with backoff,
                // and the others keep running.
                group.addTask { await self.supervise(.observation) { try await self.observeLocalWrites(trigger) } }
                if let interval = configuration.periodicInterval {
                    group.addTask { await self.supervise(.timer) { try await self.tick(every: interval, trigger) } }
                }
                if configuration.live {
                    group.addTask { await self.supervise(.live) { try await self.listenLive(trigger) } }
                }
                group.addTask { await self.consume(triggers) }
                // Only the consumer ends by itself, when ``stop()`` finishes the triggers.
                await group.next()
                group.cancelAll()
            }
        }
        wantPull(trigger)
        stopTrigger = trigger
    }

    /// Runs a source of triggers until the engine stops, restarting it
    /// with backoff whenever it fails or ends (``BackgroundDecisions``).
    private func supervise(_ source: BackgroundDecisions.Source, _ body: () async throws -> Void) async {
        while !Task.isCancelled {
            let failure: String
            var retryAfter: Duration?
            do {
                try await body()
                failure = "ended"
            } catch is CancellationError {
                return
            } catch {
                failure = "\(error)"
                if case .transient(let after) = SyncFailure(error) { retryAfter = after }
            }
            if Task.isCancelled { return }
            report(source, failure)
            let delay = decisions.failed(source, unit: random(), retryAfter: retryAfter)
            try? await clock.sleep(for: delay)
        }
    }

    /// A source failed: the app sees it in ``SyncStatus/backgroundIssues``.
    private func report(_ source: BackgroundDecisions.Source, _ failure: String) {
        logger.warning("a background sync trigger failed; restarting it", metadata: ["source": "\(source)", "error": "\(failure)"])
        broadcaster.update { $0.backgroundIssues[source.rawValue] = failure }
    }

    /// A source runs as it should again.
    private func ran(_ source: BackgroundDecisions.Source) {
        decisions.ran(source)
        if broadcaster.current.backgroundIssues[source.rawValue] != nil {
            broadcaster.update { $0.backgroundIssues[source.rawValue] = nil }
        }
    }

    /// Local writes: the count of rows with pending changes goes up.
    private func observeLocalWrites(_ trigger: AsyncStream<Trigger>.Continuation) async throws {
        var last = Int.max
        let counts = ValueObservation.tracking { db in
            (try Outbox.pendingCount(db), try Conflicts.count(db))
        }.values(in: database.writer)
        for try await (pending, conflicts) in counts {
            ran(.observation)
            broadcaster.update {
                $0.pendingCount = pending; $0.conflictCount = conflicts
            }
            if pending > last || (last == Int.max && pending > 0) { trigger.yield(.localChange) }
            last = pending
        }
    }

    private func tick(every interval: Duration, _ trigger: AsyncStream<Trigger>.Continuation) async throws {
        while true {
            try await clock.sleep(for: interval)
            ran(.timer)
            wantPull(trigger)
        }
    }

    /// Syncs for each trigger, after the wait ``BackgroundDecisions`` gives it.
    private func consume(_ triggers: AsyncStream<Trigger>) async {
        for await reason in triggers {
            // A local write that took the place of a trigger asking for a pull does not delay that pull.
            let wait = decisions.wait(before: pullOwed ? .now : reason)
            if wait > .zero { try? await clock.sleep(for: wait) }
            if Task.isCancelled { break }
            // Signed out: nothing is asked of the server until a new token (``updateToken(_:)``) comes.
            if await !credentials.refreshIfDue() {
                showSignedOut()
                continue
            }
            do {
                // A local write goes out alone while the stream is open on every followed scope and no
                // pull is owed (news, a catch-up, a tick, a page that did not apply): the stream brings
                // what others write.
                let followable = Set(configuration.scopes.filter { liveRevoked[$0] == nil })
                let streamCovers = broadcaster.current.liveConnected && liveFollowing == followable
                if reason == .localChange, streamCovers, !pullOwed {
                    let pushed = try await runExclusive(attempts: nil, pushOnly: true)
                    if pushed.needsPull {
                        pullOwed = false
                        _ = try await runExclusive(attempts: nil)
                    }
                } else {
                    // This sync pulls whatever the triggers before it asked for; one asked during it is owed again.
                    pullOwed = false
                    _ = try await runExclusive(attempts: nil)
                }
            } catch is CancellationError {
                break
            } catch {
                // Not a transport failure (those are retried): the app hears of it, and the next sync pulls.
                pullOwed = true
                logger.error("background sync failed", metadata: ["error": "\(error)"])
                broadcaster.update {
                    $0.phase = $0.phase == .unauthorized ? .unauthorized : .idle; $0.lastError = "\(error)"
                }
            }
        }
    }

    /// Asks the loop for a sync that pulls: a local write that comes after,
    /// and takes the trigger's place, does not make it a push alone.
    private func wantPull(_ trigger: AsyncStream<Trigger>.Continuation) {
        pullOwed = true
        trigger.yield(.now)
    }

    /// The app sees the engine signed out: ``SyncStatus/Phase/unauthorized``.
    private func showSignedOut() {
        guard broadcaster.current.phase != .unauthorized else { return }
        broadcaster.update {
            $0.phase = .unauthorized
            $0.lastError = "the server refused the token and no new one was available; sign in again"
        }
    }

    /// Stops syncing by itself and waits until the work in progress ends.
    /// A page being applied is committed or rolled back whole.
    public func stop() async {
        let task = background
        background = nil
        stopTrigger?.finish()
        stopTrigger = nil
        task?.cancel()
        await task?.value
        broadcaster.update {
            $0.phase = .idle; $0.liveConnected = false
        }
    }

    /// Applies the rows of a live page (the scope's cursor moves only when
    /// the page holds every change after it and no row of it has pending
    /// edits: then the next pull does not fetch them again), and says
    /// whether they all applied.
    private func applyLive(_ page: PullPage) async -> Bool {
        guard configuration.scopes.contains(page.scope) else { return false }
        do {
            let report = try await PageApplier(database: database, userScope: configuration.userScope).apply(page, movesCursor: false)
            try await refreshCounts()
            return report.setAside.isEmpty
        } catch {
            logger.warning("a live page did not apply; pulling instead", metadata: ["error": "\(error)"])
            return false
        }
    }

    /// Listens on the live endpoint (``supervise(_:_:)`` reconnects it with
    /// backoff), and asks for a sync when subscribed (to catch up) and on
    /// every announcement.
    private func listenLive(_ trigger: AsyncStream<Trigger>.Continuation) async throws {
        defer {
            broadcaster.update { $0.liveConnected = false }
            liveFollowing = []
        }
        // Signed out: the stream waits for a new token, asking the server nothing.
        while await !credentials.refreshIfDue() {
            try await clock.sleep(for: .seconds(1))
        }
        do {
            let scopes = configuration.scopes.filter { liveRevoked[$0] == nil }
            liveFollowing = Set(scopes)
            for try await message in transport.live(scopes: scopes, token: await credentials.token) {
                switch message {
                case .ready:
                    ran(.live)
                    broadcaster.update { $0.liveConnected = true }
                    wantPull(trigger)
                case .change:
                    wantPull(trigger)
                case .page(let page):
                    // The rows in one hop; anything amiss and a pull brings them instead.
                    if await !applyLive(page) { wantPull(trigger) }
                case .expired:
                    // Renew the token first, then sync (which says the user is
                    // signed out if it could not be renewed); the stream opens
                    // again with the new one.
                    let renewed = await credentials.refresh()
                    if !renewed { showSignedOut() }
                    wantPull(trigger)
                    throw SyncTransportError.unreachable(
                        renewed ? "the live stream's token expired; reopening with a renewed one" : "the live stream's token expired")
                case .revoked(let scope):
                    // The sync that follows meets the refusal and reports it; the stream reopens without the scope.
                    liveRevoked[scope] = .now
                    wantPull(trigger)
                    throw SyncTransportError.unreachable("the user can no longer read scope `\(scope)`, which the live stream followed")
                }
            }
        } catch {
            if SyncFailure(error) == .unauthorized { _ = await credentials.refresh() }
            throw error
        }
    }
}
