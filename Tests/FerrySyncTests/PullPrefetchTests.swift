@testable import Ferry
import FerryProtocol
import FerryTesting
import FerryTestSupport
import Foundation
import GRDB
import Testing

/// While a pulled page applies, the next one is already asked for; the
/// next pull takes that answer only if it asks the very same thing.
@Suite(.postgresTurns) struct PullPrefetchTests {
    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory()
    }

    private static func page(_ scope: String, cursor: String, hasMore: Bool, reset: Bool = false) -> PullPage {
        PullPage(scope: scope, changes: [], cursor: cursor, hasMore: hasMore, reset: reset, noticeCursor: "n-\(cursor)")
    }

    @Test func theNextRequestIsTheScopesWithMoreFromWhereTheirPagesEnd() throws {
        var cursors = ScopeCursors()
        cursors.previous["team:x"] = "old"
        let request = PullRequest(clientID: "c", scopes: [cursors.request(for: "user:a"), cursors.request(for: "team:x")], limit: 5)
        let reply = PullResponse(
            lastAppliedMutationID: 0, pages: [Self.page("user:a", cursor: "a1", hasMore: false), Self.page("team:x", cursor: "x1", hasMore: true)])
        let next = try #require(PullPrefetch.nextRequest(after: reply, of: request, cursors: cursors))
        #expect(next == PullRequest(clientID: "c", scopes: [.init(scope: "team:x", cursor: "x1", notices: "n-x1")], limit: 5))
    }

    @Test func nothingIsAskedEarlyWhenNothingFollowsOrAScopeStartsOver() {
        let request = PullRequest(clientID: "c", scopes: [.init(scope: "user:a")])
        let done = PullResponse(lastAppliedMutationID: 0, pages: [Self.page("user:a", cursor: "a1", hasMore: false)])
        #expect(PullPrefetch.nextRequest(after: done, of: request, cursors: ScopeCursors()) == nil)
        let reset = PullResponse(lastAppliedMutationID: 0, pages: [Self.page("user:a", cursor: "a1", hasMore: true, reset: true)])
        #expect(PullPrefetch.nextRequest(after: reset, of: request, cursors: ScopeCursors()) == nil)
    }

    /// 58 notes in pages of 5: pulls after the first are asked for while
    /// the page before them is still being applied, none is sent twice, and
    /// the device ends with every note. (Twelve pages, so a busy machine
    /// that starts some prefetches late still shows one early; the notes
    /// are counted through a connection opened before the sync, so asking
    /// costs no open.)
    @Test(arguments: StoreKind.available) func theNextPageIsAskedForWhileThisOneApplies(kind: StoreKind) async throws {
        try await SyncServer.with(kind) { server in
            let writer = try await Device.make("writer", user: "alice", server: server, directory: directory)
            for index in 0..<58 { try writer.execute("INSERT INTO note(id, title) VALUES ('n\(index)', 'note \(index)')") }
            try await writer.engine.sync()

            let path = directory.path("reader.sqlite")
            let notesWhenAsked = Locked<[Int]>([])
            let counter = Locked<DatabaseQueue?>(nil)
            let reader = try await Device.make(
                "reader", user: "alice", server: server, directory: directory, configure: { $0.pullPageSize = 5 },
                transport: { inner in
                    ForwardingTransport(
                        inner,
                        willPull: { _ in
                            let count = counter.withLock { queue in (try? queue?.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM note") }) ?? nil }
                            notesWhenAsked.withLock { $0.append(count ?? 0) }
                        })
                })
            counter.withLock { $0 = try? DatabaseQueue(path: path) }
            #expect(counter.withLock { $0 != nil })
            let pullsBefore = try await server.metric("ferry_pulls_total")
            let readAheadBefore = try await server.metric("ferry_pulls_read_ahead_total")
            try await reader.engine.sync()
            let asked = notesWhenAsked.withLock { $0 }
            #expect(try await server.metric("ferry_pulls_total") - pullsBefore == 12, "twelve pages, twelve pulls: none wasted")
            // The embedded store read each page after the first before the client asked: the pull it
            // expected is the one the client sent.
            let readAhead = try await server.metric("ferry_pulls_read_ahead_total") - readAheadBefore
            #expect(kind == .sqlite ? readAhead >= 10 : readAhead == 0, "\(readAhead) of 11 pages read ahead")
            #expect(asked.count == 12)
            // Asked for page k before page k - 1 (5 notes each) was applied.
            #expect(asked.enumerated().dropFirst().contains { index, notes in notes < 5 * index }, "\(asked)")
            #expect(try reader.notes().count == 58)
        }
    }
}

extension PullPrefetchTests {
    /// A sync cancelled while its next pull waits on a prefetched answer
    /// ends at once: the cancellation reaches the prefetch.
    @Test func cancellingASyncCancelsItsPrefetch() async throws {
        try await SyncServer.with(.sqlite) { server in
            let writer = try await Device.make("writer", user: "alice", server: server, directory: directory)
            for index in 0..<12 { try writer.execute("INSERT INTO note(id, title) VALUES ('n\(index)', 'note \(index)')") }
            try await writer.engine.sync()
            let pulls = Locked(0)
            let (waiting, waitingSignal) = AsyncStream.makeStream(of: Void.self)
            let reader = try await Device.make(
                "reader", user: "alice", server: server, directory: directory, configure: { $0.pullPageSize = 5 },
                transport: { inner in
                    ForwardingTransport(
                        inner,
                        willPull: { _ in
                            // The second pull, the prefetch, hangs as a stalled network would.
                            guard
                                pulls.withLock({
                                    $0 += 1; return $0
                                }) == 2
                            else { return }
                            waitingSignal.yield()
                            try await Task.sleep(for: .seconds(30))
                        })
                })
            let sync = Task { try await reader.engine.sync() }
            for await _ in waiting { break }
            try await Task.sleep(for: .milliseconds(200))
            let cancelled = ContinuousClock.now
            sync.cancel()
            _ = try? await sync.value
            #expect(ContinuousClock.now - cancelled < .seconds(5), "the sync ended without waiting out the stalled pull")
        }
    }
}
