@testable import FerryServer
import FerryProtocol
import FerryTestSupport
import Foundation
import Synchronization
import Testing

/// The embedded store reads a pull ahead while the page before it is on the
/// wire (``ReadAheadPulls``): an answer read ahead must be the one a read of
/// the file gives when the pull comes, byte for byte, whatever was written
/// between.
@Suite struct ReadAheadPullTests {
    /// A store holding `rows` rows of alice's, one push each.
    private static func store(rows: Int, in directory: TemporaryDirectory) async throws -> SQLiteSyncStore {
        let store = try SQLiteSyncStore(directory: directory.url)
        for id in 1...rows {
            _ = try await store.push(
                PushRequest(clientID: "seed", mutations: [Mutations.upsert(Int64(id), row: "r\(id)", ["t": .text("v\(id)")])]),
                userID: "alice", rules: PushRules())
        }
        return store
    }

    /// A first sync as the Ferry client pulls it (its notice cursor sent
    /// back) and as a client that sends none: every page after the first is
    /// read ahead, and each is the file's answer.
    @Test(arguments: [true, false]) func aFirstSyncsPagesAreReadAheadAndAreTheFilesAnswers(sendsNoticeCursor: Bool) async throws {
        let directory = try TemporaryDirectory()
        let store = try await Self.store(rows: 10, in: directory)
        var request = PullRequest(clientID: "a1", scopes: [.init(scope: "user:alice")], limit: 3)
        var rows: [String] = [], pages = 0, readAhead = 0
        while true {
            await store.readAhead.settled()
            let file = try await store.readPull(request, userID: "alice", limit: 3, notices: true)
            let answer = try await store.pullEncoded(request, userID: "alice", limit: 3, notices: true)
            #expect(try answer.json() == file.json())
            pages += 1
            if answer.wasReadAhead { readAhead += 1 }
            let page = try answer.decoded().pages[0]
            rows += page.changes.map(\.rowID)
            guard page.hasMore else { break }
            request.scopes[0].cursor = page.cursor
            if sendsNoticeCursor { request.scopes[0].notices = page.noticeCursor }
        }
        #expect(rows == (1...10).map { "r\($0)" })
        #expect(pages == 4 && readAhead == 3, "every page after the first was read ahead")
        try await store.close()
    }

    /// A write after the read ahead ended, before the pull comes: the pull
    /// reads the file, and its page holds the row the write changed.
    @Test func aWriteAfterTheReadAheadSendsThePullToTheFile() async throws {
        let directory = try TemporaryDirectory()
        let store = try await Self.store(rows: 4, in: directory)
        var request = PullRequest(clientID: "a1", scopes: [.init(scope: "user:alice")], limit: 2)
        let first = try await store.pullEncoded(request, userID: "alice", limit: 2, notices: true).decoded().pages[0]
        #expect(first.hasMore)
        await store.readAhead.settled()
        _ = try await store.push(
            PushRequest(clientID: "b1", mutations: [Mutations.upsert(1, row: "r1", ["t": .text("changed")], base: 1)]),
            userID: "alice", rules: PushRules())
        request.scopes[0].cursor = first.cursor
        request.scopes[0].notices = first.noticeCursor
        let file = try await store.readPull(request, userID: "alice", limit: 2, notices: true)
        let answer = try await store.pullEncoded(request, userID: "alice", limit: 2, notices: true)
        #expect(try answer.json() == file.json())
        #expect(!answer.wasReadAhead)
        #expect(try answer.decoded().pages[0].changes.map(\.rowID) == ["r3", "r4"] && answer.pages[0].hasMore, "r1 changed after them")
        try await store.close()
    }

    /// A pull other than the one read ahead (another limit) reads the file,
    /// and the client gets no read ahead for its next pulls.
    @Test func aPullOtherThanTheOneReadAheadReadsTheFileAndCools() async throws {
        let directory = try TemporaryDirectory()
        let store = try await Self.store(rows: 6, in: directory)
        var request = PullRequest(clientID: "a1", scopes: [.init(scope: "user:alice")], limit: 2)
        let first = try await store.pullEncoded(request, userID: "alice", limit: 2, notices: true).decoded().pages[0]
        request = PullRequest(
            clientID: "a1", scopes: [.init(scope: "user:alice", cursor: first.cursor, notices: first.noticeCursor)], limit: 1)
        let file = try await store.readPull(request, userID: "alice", limit: 1, notices: true)
        let answer = try await store.pullEncoded(request, userID: "alice", limit: 1, notices: true)
        #expect(try answer.json() == file.json() && !answer.wasReadAhead)
        let client = LastChanges.Client(userID: "alice", clientID: "a1")
        #expect(!store.readAhead.admits(client), "cooling")
        try await store.close()
    }

    /// More first syncs under way than answers held: the ones past the
    /// table read their next page themselves, and no answer a client is
    /// about to take is dropped for them.
    @Test func aFullTableReadsNoMoreAheadRatherThanDropAnAnswerAboutToBeTaken() async throws {
        let directory = try TemporaryDirectory()
        let store = try await Self.store(rows: 4, in: directory)
        let clients = ReadAheadPulls.maxEntries + 2
        var next: [PullRequest] = []
        for index in 0..<clients {
            let request = PullRequest(clientID: "c\(index)", scopes: [.init(scope: "user:alice")], limit: 2)
            let page = try await store.pullEncoded(request, userID: "alice", limit: 2, notices: true).decoded().pages[0]
            next.append(
                PullRequest(clientID: "c\(index)", scopes: [.init(scope: "user:alice", cursor: page.cursor, notices: page.noticeCursor)], limit: 2))
            await store.readAhead.settled()
        }
        // The last two first: had they pushed out the first two's answers, they would take their own.
        var readAhead: [String] = []
        for request in next[ReadAheadPulls.maxEntries...] + next[..<ReadAheadPulls.maxEntries] {
            let file = try await store.readPull(request, userID: "alice", limit: 2, notices: true)
            let answer = try await store.pullEncoded(request, userID: "alice", limit: 2, notices: true)
            #expect(try answer.json() == file.json())
            if answer.wasReadAhead { readAhead.append(request.clientID) }
        }
        #expect(readAhead == (0..<ReadAheadPulls.maxEntries).map { "c\($0)" }, "the first clients' answers were all taken, the last two read for themselves")
        try await store.close()
    }

    /// With the table full, an answer held longer than `stale` gives way,
    /// oldest first; a fresher one does not.
    @Test func aFullTableMakesRoomOnlyByAnswersHeldTooLong() async throws {
        let clock = Mutex(ContinuousClock.now)
        let pulls = ReadAheadPulls(now: { clock.withLock { $0 } })
        func client(_ index: Int) -> LastChanges.Client { LastChanges.Client(userID: "alice", clientID: "c\(index)") }
        func hold(_ index: Int) async {
            pulls.hold(PullRequest(clientID: "c\(index)", scopes: [.init(scope: "user:alice")]), for: client(index), limit: 2) { nil }
            await pulls.settled()
        }
        for index in 0..<ReadAheadPulls.maxEntries {
            await hold(index)
            clock.withLock { $0 += .milliseconds(1) }
        }
        await hold(100)
        #expect(pulls.holding.count == ReadAheadPulls.maxEntries && !pulls.holding.contains(client(100)), "none was held long enough")
        clock.withLock { $0 += ReadAheadPulls.stale }
        await hold(100)
        #expect(pulls.holding.contains(client(100)) && !pulls.holding.contains(client(0)), "the oldest gave way")
        #expect(pulls.holding.contains(client(1)))
        await pulls.close()
        #expect(pulls.holding.isEmpty)
    }

    /// The pull a Ferry client sends next, and which pulls are that one.
    @Test func theNextPullIsTheFerryClientsAndMatchesWithoutANoticeCursorAtItsStart() throws {
        let epoch = "e1"
        func page(_ scope: String, hasMore: Bool, reset: Bool = false) -> EncodedPullPage {
            EncodedPullPage(
                scope: scope, rows: EncodedRows(limit: 10, maxBytes: 1 << 20), cursor: "c-\(scope)", hasMore: hasMore, reset: reset,
                noticeCursor: "\(epoch)/0.7")
        }
        let request = PullRequest(clientID: "a1", scopes: [.init(scope: "s1"), .init(scope: "s2", cursor: "old", notices: "\(epoch)/0.2")], limit: 5)
        let next = try #require(
            PullReadAhead.nextRequest(
                after: EncodedPullResponse(lastAppliedMutationID: 0, pages: [page("s1", hasMore: false), page("s2", hasMore: true)]),
                of: request))
        #expect(next == PullRequest(clientID: "a1", scopes: [.init(scope: "s2", cursor: "c-s2", notices: "\(epoch)/0.7")], limit: 5))
        #expect(
            PullReadAhead.nextRequest(after: EncodedPullResponse(lastAppliedMutationID: 0, pages: [page("s1", hasMore: false)]), of: request)
                == nil, "nothing more to come")
        #expect(
            PullReadAhead.nextRequest(
                after: EncodedPullResponse(lastAppliedMutationID: 0, pages: [page("s1", hasMore: true, reset: true)]), of: request) == nil,
            "a reset leaves the next pull to the client")

        let start = ChangePosition(major: 0, minor: 7)
        #expect(PullReadAhead.matches(next, predicted: next, noticeStart: .start, epoch: epoch))
        var bare = next
        bare.scopes[0].notices = nil
        #expect(PullReadAhead.matches(bare, predicted: next, noticeStart: start, epoch: epoch), "no notice cursor starts where the one read does")
        #expect(!PullReadAhead.matches(bare, predicted: next, noticeStart: .start, epoch: epoch))
        for changed in [
            PullRequest(clientID: "a2", scopes: next.scopes, limit: 5), PullRequest(clientID: "a1", scopes: next.scopes, limit: 6),
            PullRequest(clientID: "a1", scopes: [.init(scope: "s2", cursor: "c-s1", notices: "\(epoch)/0.7")], limit: 5),
            PullRequest(clientID: "a1", scopes: [.init(scope: "s2", cursor: "c-s2", notices: "\(epoch)/0.7", previous: "p")], limit: 5),
            PullRequest(clientID: "a1", scopes: next.scopes + [.init(scope: "s1")], limit: 5),
        ] {
            #expect(!PullReadAhead.matches(changed, predicted: next, noticeStart: start, epoch: epoch))
        }
    }

    /// The write count is even between write transactions, and moves with each.
    @Test func theWriteCountIsStableOnlyBetweenWrites() async throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteSyncStore(directory: directory.url)
        let before = try #require(store.writes.stable)
        let during = try await store.write { _ in store.writes.stable }
        #expect(during == nil)
        let after = try #require(store.writes.stable)
        #expect(after == before + 2)
        try await store.close()
    }
}
