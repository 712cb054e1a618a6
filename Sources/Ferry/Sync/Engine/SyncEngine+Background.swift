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
        let database = self.database
        let clock = self.clock
        background = Task {
            await withTaskGroup(of: Void.self) { group in
                group.addTask {
                    // Local writes: the count of rows with pending changes goes up.
                    var last = Int.max
                    let counts = ValueObservation.tracking { db in
                        (try Outbox.pendingCount(db), try Conflicts.count(db))
                    }.values(in: database.writer)
                    do {
                        for try await (pending, conflicts) in counts {
                            self.broadcaster.update { $0.pendingCount = pending; $0.conflictCount = conflicts }
                            if pending > last || (last == Int.max && pending > 0) { trigger.yield(.localChange) }
                            last = pending
                        }
                    } catch {}
                }
                if let interval = configuration.periodicInterval {
                    group.addTask {
                        while !Task.isCancelled {
                            try? await clock.sleep(for: interval)
                            trigger.yield(.now)
                        }
                    }
                }
                if configuration.live {
                    group.addTask { await self.listenLive(trigger) }
                }
                group.addTask {
                    for await reason in triggers {
                        if reason == .localChange, configuration.debounce > .zero {
                            try? await clock.sleep(for: configuration.debounce)
                        }
                        if Task.isCancelled { break }
                        do {
                            _ = try await self.runExclusive(attempts: nil)
                        } catch is CancellationError {
                            break
                        } catch {
                            // Not a transport failure (those are retried): the app hears of it.
                            self.logger.error("background sync failed", metadata: ["error": "\(error)"])
                            self.broadcaster.update { $0.phase = $0.phase == .unauthorized ? .unauthorized : .idle; $0.lastError = "\(error)" }
                        }
                    }
                }
                await group.next()
                group.cancelAll()
            }
        }
        trigger.yield(.now)
        stopTrigger = trigger
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
        broadcaster.update { $0.phase = .idle; $0.liveConnected = false }
    }

    /// Applies the rows of a live page (they move no cursor), and says
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

    /// Listens on the live endpoint, reconnecting with backoff, and asks for
    /// a sync when subscribed (to catch up) and on every announcement.
    private func listenLive(_ trigger: AsyncStream<Trigger>.Continuation) async {
        var failures = 0
        while !Task.isCancelled {
            do {
                for try await message in transport.live(scopes: configuration.scopes, token: await credentials.token) {
                    switch message {
                    case .ready:
                        failures = 0
                        broadcaster.update { $0.liveConnected = true }
                        trigger.yield(.now)
                    case .change:
                        trigger.yield(.now)
                    case .page(let page):
                        // The rows in one hop; anything amiss and a pull brings them instead.
                        if await !applyLive(page) { trigger.yield(.now) }
                    }
                }
            } catch {
                if SyncFailure(error) == .unauthorized { _ = await credentials.refresh() }
            }
            broadcaster.update { $0.liveConnected = false }
            if Task.isCancelled { break }
            let delay = configuration.retry.delay(attempt: failures, unit: random())
            failures += 1
            try? await clock.sleep(for: delay)
        }
    }
}
