@testable import Ferry
@testable import FerryServer
import FerryProtocol
import Foundation
import GRDB
import Testing
import FerryTestSupport

/// The started engine: syncing after local writes, live news from the
/// server, status as an async sequence, and stopping mid-sync.
@Suite struct BackgroundSyncTests {
    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory()
    }

    /// `a` writes; a started `b`, listening live with no periodic sync,
    /// sees the row soon after: median under 1 s over 5 edits, each under
    /// 5 s (the full suite shares 2 cores; alone, each takes tens of ms).
    @Test func writesReachAListeningDeviceLive() async throws {
        let server = try await SyncServer.start()
        try await server.stopping {
            let a = try await Device.make("a", user: "alice", server: server, directory: directory) { $0.debounce = .milliseconds(20) }
            let b = try await Device.make("b", user: "alice", server: server, directory: directory) { $0.live = true }
            await a.engine.start()
            await b.engine.start()
            defer {
                Task {
                    await a.engine.stop(); await b.engine.stop()
                }
            }
            #expect(try await eventually(within: .seconds(10)) { b.engine.status.liveConnected })

            let latencies = try await a.latencies(to: b, count: 5, title: "live")
            #expect(latencies.sorted()[2] < .seconds(1), "\(latencies)")
            #expect(latencies.allSatisfy { $0 < .seconds(5) }, "\(latencies)")
            print("write on a to row on b, live: \(latencies)")
        }
    }

    @Test func statusReportsPhasesCountsAndTheLastSync() async throws {
        let server = try await SyncServer.start()
        try await server.stopping {
            let device = try await Device.make("a", user: "alice", server: server, directory: directory) { $0.pushBatchSize = 10 }
            let seen = Locked<[SyncStatus]>([])
            let watcher = Task {
                for await status in device.engine.statusUpdates() {
                    seen.withLock { $0.append(status) }
                }
            }
            defer { watcher.cancel() }
            try await device.database.write { db in
                for index in 0..<30 { try db.execute(sql: "INSERT INTO note(id, title) VALUES (?, 'x')", arguments: ["n\(index)"]) }
            }
            try await device.engine.sync()
            #expect(try await eventually(within: .seconds(10)) { seen.withLock { $0.last?.lastSuccessfulSync != nil } })

            let statuses = seen.withLock { $0 }
            let phases = statuses.map(\.phase)
            #expect(phases.contains(.pushing) && phases.contains(.pulling))
            #expect(statuses.contains { $0.phase == .pushing && $0.pushed == 10 })
            let last = try #require(statuses.last)
            // Its own 30 rows are not downloaded back (`PushResponse.covered`): the scope held no row before.
            #expect(last.phase == .idle && last.pendingCount == 0 && last.pushed == 30 && last.pulled == 0)
            #expect(last.lastError == nil && last.conflictCount == 0)
        }
    }

    /// Cancelling a sync mid-pull leaves whole pages applied, and the next
    /// sync finishes the job.
    @Test func cancellingMidPullLeavesWholePages() async throws {
        let server = try await SyncServer.start()
        try await server.stopping {
            let writer = try await Device.make("w", user: "alice", server: server, directory: directory) { $0.pushBatchSize = 1000 }
            try await writer.database.write { db in
                for index in 0..<3000 { try db.execute(sql: "INSERT INTO note(id, title) VALUES (?, 'x')", arguments: ["n\(index)"]) }
            }
            try await writer.engine.sync()

            let reader = try await Device.make("r", user: "alice", server: server, directory: directory) { $0.pullPageSize = 100 }
            let sync = Task { try await reader.engine.sync() }
            #expect(try await eventually(within: .seconds(10)) { try reader.notes().count >= 300 })
            sync.cancel()
            _ = try? await sync.value
            let count = try reader.notes().count
            #expect(count % 100 == 0)
            let cursor = try await reader.database.read { db in try String.fetchOne(db, sql: "SELECT cursor FROM ferry_cursors") }
            #expect(cursor != nil)
            try await reader.engine.sync()
            #expect(try reader.notes().count == 3000)
        }
    }

    @Test func localWritesAreSyncedShortlyAfterByAStartedEngine() async throws {
        let server = try await SyncServer.start()
        try await server.stopping {
            let device = try await Device.make("a", user: "alice", server: server, directory: directory) {
                $0.live = false
                $0.debounce = .milliseconds(50)
            }
            await device.engine.start()
            defer { Task { await device.engine.stop() } }
            try device.execute("INSERT INTO note(id, title) VALUES ('1', 'auto')")
            #expect(try await eventually(within: .seconds(10)) { try await server.rows("note", in: "user:alice")["1"] != nil })
            await device.engine.stop()
            #expect(device.engine.status.phase == .idle)
        }
    }

    /// A failure the engine cannot retry (here, a transport that throws
    /// something that is not a transport error) reaches `statusUpdates()`
    /// from the background loop instead of being dropped.
    @Test(.timeLimit(.minutes(1))) func aBackgroundFailureReachesTheStatus() async throws {
        struct Broken: Error, CustomStringConvertible {
            var description: String { "the transport is broken" }
        }
        struct BrokenTransport: SyncTransport {
            func push(_ request: PushRequest, token: String?) async throws -> PushResponse { throw Broken() }
            func pull(_ request: PullRequest, token: String?) async throws -> PullResponse { throw Broken() }
            func row(scope: String, table: String, rowID: String, token: String?) async throws -> ServerRow? { throw Broken() }
            func live(scopes: [String], token: String?) -> AsyncThrowingStream<LiveMessage, any Error> {
                AsyncThrowingStream { $0.finish(throwing: Broken()) }
            }
        }
        let database = try FerryDatabase(path: directory.path("broken.sqlite"), schema: SyncSchema.schema())
        var configuration = SyncConfiguration(userID: "alice", live: false)
        configuration.periodicInterval = nil
        let engine = try SyncEngine(database: database, transport: BrokenTransport(), configuration: configuration)
        var updates = engine.statusUpdates().makeAsyncIterator()
        await engine.start()
        defer { Task { await engine.stop() } }
        var seen: String?
        while seen == nil, let status = await updates.next() {
            seen = status.lastError
        }
        #expect(seen == "the transport is broken")
        #expect(engine.status.phase == .idle)
    }

    /// A small change reaches a listening device as its rows, in one hop:
    /// `b` shows `a`'s edit without another pull, and its next pull (which
    /// may bring the same rows again) changes nothing.
    @Test func aSmallChangeArrivesWithItsRowsWithoutAPull() async throws {
        let server = try await SyncServer.start()
        try await server.stopping {
            let pulls = Locked(0)
            let a = try await Device.make("a", user: "alice", server: server, directory: directory)
            let b = try await Device.make(
                "b", user: "alice", server: server, directory: directory, configure: { $0.live = true },
                transport: { PullCounter(inner: $0, pulls: pulls) })
            await b.engine.start()
            defer { Task { await b.engine.stop() } }
            #expect(try await eventually(within: .seconds(10)) { b.engine.status.liveConnected && b.engine.status.lastSuccessfulSync != nil })
            // The syncs that start and `ready` asked for are over once no pull happens for a while (bounded).
            var pullsBefore = pulls.withLock { $0 }
            for _ in 0..<50 {
                try await Task.sleep(for: .milliseconds(100))
                let now = pulls.withLock { $0 }
                if now == pullsBefore, b.engine.status.phase == .idle { break }
                pullsBefore = now
            }

            try a.execute("INSERT INTO note(id, title) VALUES ('live-1', 'in one hop')")
            try await a.engine.sync()
            #expect(try await eventually(within: .seconds(10)) { try b.note("live-1") != nil })
            #expect(try b.note("live-1")?.title == "in one hop")
            #expect(pulls.withLock { $0 } == pullsBefore, "the rows came with the live event, not a pull")
            #expect(try b.database.outbox.pendingCount() == 0, "applied rows never echo into the outbox")

            try await b.engine.sync()
            #expect(try b.notes() == a.notes())
        }
    }

    /// The observation of local writes fails inside a running engine (its
    /// query meets a missing table): the status names it, the engine
    /// restarts it with backoff, and the write made meanwhile goes out once
    /// the table is back. Nothing is lost.
    @Test func anObservationFailureIsReportedAndBackgroundSyncResumes() async throws {
        let server = try await SyncServer.start()
        try await server.stopping {
            let device = try await Device.make("a", user: "alice", server: server, directory: directory) {
                $0.debounce = .milliseconds(10)
                $0.live = false
                $0.retry = RetryPolicy(initialDelay: .milliseconds(50), maximumDelay: .milliseconds(200), attemptsPerSync: 3)
            }
            await device.engine.start()
            defer { Task { await device.engine.stop() } }
            try device.execute("INSERT INTO note(id, title) VALUES ('before', 'synced by the loop')")
            #expect(try await eventually(within: .seconds(10)) { try await server.rows("note", in: "user:alice")["before"] != nil })
            #expect(try await eventually(within: .seconds(10)) { device.engine.status.pendingCount == 0 && device.engine.status.phase == .idle })

            // The observation reads ferry_conflicts: without it, its next fetch fails.
            try device.execute("ALTER TABLE ferry_conflicts RENAME TO ferry_conflicts_away")
            try device.execute("INSERT INTO note(id, title) VALUES ('during', 'written while the observation is down')")
            #expect(try await eventually(within: .seconds(10)) { device.engine.status.backgroundIssues["observation"] != nil })
            let issue = device.engine.status.backgroundIssues["observation"] ?? ""
            #expect(issue.contains("ferry_conflicts"), "\(issue)")

            try device.execute("ALTER TABLE ferry_conflicts_away RENAME TO ferry_conflicts")
            #expect(try await eventually(within: .seconds(10)) { try await server.rows("note", in: "user:alice")["during"] != nil })
            #expect(try await eventually(within: .seconds(10)) { device.engine.status.backgroundIssues.isEmpty })
            try device.execute("INSERT INTO note(id, title) VALUES ('after', 'synced by the restarted observation')")
            #expect(try await eventually(within: .seconds(10)) { try await server.rows("note", in: "user:alice")["after"] != nil })
            // The server commits a push before the device records its reply: the outbox empties just after.
            #expect(try await eventually(within: .seconds(10)) { try device.database.outbox.pendingCount() == 0 })
        }
    }
}

/// Counts pulls on the way to the real server.
private struct PullCounter: SyncTransport {
    let inner: any SyncTransport
    let pulls: Locked<Int>

    func push(_ request: PushRequest, token: String?) async throws -> PushResponse { try await inner.push(request, token: token) }
    func pull(_ request: PullRequest, token: String?) async throws -> PullResponse {
        pulls.withLock { $0 += 1 }
        return try await inner.pull(request, token: token)
    }
    func row(scope: String, table: String, rowID: String, token: String?) async throws -> ServerRow? {
        try await inner.row(scope: scope, table: table, rowID: rowID, token: token)
    }
    func live(scopes: [String], token: String?) -> AsyncThrowingStream<LiveMessage, any Error> { inner.live(scopes: scopes, token: token) }
}

/// A token's life bounds the live stream: when it expires, the engine
/// renews the token and listens again, and news still arrives live.
@Suite struct LiveTokenRenewalTests {
    @Test func aLiveStreamWhoseTokenExpiresIsReopenedWithARenewedToken() async throws {
        let directory = try TemporaryDirectory()
        let server = try await SyncServer.start()
        try await server.stopping {
            let renewals = Locked(0)
            let short = try await server.token("alice", lifetime: .seconds(2))
            let a = try await Device.make("a", user: "alice", server: server, directory: directory)
            let b = try await Device.make(
                "b", user: "alice", server: server, directory: directory, configure: { $0.live = true }, token: short,
                tokenRefresher: {
                    renewals.withLock { $0 += 1 }
                    return try await server.token("alice", lifetime: .seconds(600))
                })
            await b.engine.start()
            #expect(try await eventually(within: .seconds(10)) { b.engine.status.liveConnected })
            // Past the first token's life: the stream ended, a renewed token reopened it.
            #expect(try await eventually(within: .seconds(15)) { renewals.withLock { $0 } >= 1 && b.engine.status.liveConnected })
            try a.execute("INSERT INTO note(id, title) VALUES ('after', 'renewed')")
            _ = try await a.engine.sync()
            #expect(try await eventually(within: .seconds(10)) { try b.note("after") != nil })
            #expect(renewals.withLock { $0 } == 1, "one renewal for one expiry")
            #expect(b.engine.status.phase != .unauthorized)
            await b.engine.stop()
        }
    }
}

/// A token that can never be renewed leaves the background engine signed
/// out, not retrying: over a minute of local writes, a periodic timer and
/// a live stream wanting to open, the server sees a handful of requests.
@Suite struct SignedOutEngineTests {
    @Test func aPermanentlyRefusedTokenIsAHandfulOfRequestsAMinute() async throws {
        let directory = try TemporaryDirectory()
        let server = try await SyncServer.start()
        try await server.stopping {
            struct SignedOut: Error {}
            let refreshes = Locked(0)
            let device = try await Device.make(
                "a", user: "alice", server: server, directory: directory,
                configure: {
                    $0.live = true
                    $0.periodicInterval = .seconds(5)
                    $0.debounce = .milliseconds(50)
                },
                token: "revoked-by-the-identity-provider",
                tokenRefresher: {
                    refreshes.withLock { $0 += 1 }
                    throw SignedOut()
                })
            await device.engine.start()
            let started = ContinuousClock.now
            for index in 0..<12 {
                try device.execute("INSERT INTO note(id, title) VALUES ('n\(index)', 'offline')")
                try await Task.sleep(until: started + .seconds(5 * (index + 1)))
            }
            #expect(device.engine.status.phase == .unauthorized)
            #expect(try device.database.outbox.pendingCount() == 12, "nothing lost while signed out")
            // Signed in again: the background loop syncs at once.
            await device.engine.updateToken(try await server.token("alice"))
            #expect(try await eventually(within: .seconds(10)) { try device.database.outbox.pendingCount() == 0 })
            await device.engine.stop()
            let lines = try await AdminClient(port: server.port).send(.GET, "/metrics").text
                .split(separator: "\n").filter { $0.hasPrefix("ferry_http_requests_total") && $0.contains(#"status="401""#) }
            let refused = lines.compactMap { $0.split(separator: " ").last.flatMap { Int($0) } }.reduce(0, +)
            #expect(refused <= 5, "\(refused) refused requests in a minute: \(lines)")
            // The app's token refresher is asked a handful of times too, not in a loop (on a loaded
            // machine a timer and the live stream may each ask once more than the server is sent).
            #expect(refreshes.withLock { $0 } <= refused + 3, "\(refreshes.withLock { $0 }) refreshes for \(refused) refusals")
        }
    }
}
