@testable import FerryServer
import FerryProtocol
import FerryTestSupport
import FerryTesting
import Foundation
import Testing

/// The embedded store answers a pull of quiet scopes from memory
/// (``LastChanges``): every such answer must be the one a read of the file
/// gives at the same moment, byte for byte.
@Suite struct QuietPullTests {
    /// Three devices of two users push, pull, settle notices and collect
    /// garbage in a seeded order, with stale bases (so conflicts and notices
    /// happen) and deletes (so the horizon moves). Before every pull, the answer from
    /// memory, when there is one, is compared with the file's.
    ///
    /// With devices that pull as a Ferry client does (after a page with more
    /// to come, only the scopes with more), with and without notice
    /// cursors, most pulls after a page with more are read ahead
    /// (``ReadAheadPulls``): those answers must be the file's too.
    @Test(arguments: [(1, false), (2, false), (3, false), (4, true), (5, true)] as [(UInt64, Bool)])
    func anAnswerFromMemoryIsTheFilesAnswer(seed: UInt64, likeFerryClients: Bool) async throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteSyncStore(directory: directory.url)
        var random = SplitMix64(seed: seed)
        var devices = [
            Device(userID: "alice", clientID: "a1", scopes: ["user:alice", "team:x"], asks: likeFerryClients ? .likeAFerryClient : .everyScope),
            Device(userID: "alice", clientID: "a2", scopes: ["user:alice", "team:x"], asks: likeFerryClients ? .withoutNoticeCursors : .everyScope),
            Device(userID: "bob", clientID: "b1", scopes: ["user:bob", "team:x"], asks: likeFerryClients ? .likeAFerryClient : .everyScope),
        ]
        // Ferry clients pull small pages here, so pages with more to come are many.
        let limit = likeFerryClients ? 1 : 4
        var fromMemory = 0, moved = 0, notices = 0, settled = 0, resets = 0
        var pulling: Int?, readAhead = 0
        for _ in 0..<600 {
            var index = Int(random.next() % UInt64(devices.count))
            var step = random.next() % 20
            // A Ferry client pulls on while its pages have more, most often before anyone writes.
            if let device = pulling, random.next() % 4 != 0 { (index, step) = (device, 5) }
            pulling = nil
            switch step {
            case 0..<5:
                let push = devices[index].push(&random)
                _ = try await store.push(push, userID: devices[index].userID, rules: PushRules())
            case 5..<19:
                let request = devices[index].pullRequest
                let file = try await store.readPull(request, userID: devices[index].userID, limit: limit, notices: true)
                if let quiet = store.quietAnswer(request, userID: devices[index].userID, limit: limit) {
                    fromMemory += 1
                    #expect(try quiet.json() == file.json())
                    let cursors = request.scopes.map(\.cursor)
                    if quiet.pages.map(\.cursor) != cursors { moved += 1 }
                }
                let answer = try await store.pullEncoded(request, userID: devices[index].userID, limit: limit, notices: true)
                #expect(try answer.json() == file.json())
                if answer.wasReadAhead { readAhead += 1 }
                #expect(try PullResponseReader.response(Data(answer.json().utf8)) == answer.decoded(), "the client reads what the server wrote")
                let decoded = try answer.decoded()
                notices += decoded.pages.reduce(0) { $0 + $1.notices.count }
                settled += decoded.pages.reduce(0) { $0 + $1.settledNotices.count }
                resets += decoded.pages.filter(\.reset).count
                devices[index].apply(decoded)
                if likeFerryClients, !devices[index].more.isEmpty { pulling = index }
            default:
                _ = try await store.collectGarbage(before: Date().addingTimeInterval(3600))
            }
        }
        #expect(fromMemory > 30, "quiet pulls were answered from memory")
        #expect(moved > 1, "a quiet scope's cursor moved past writes elsewhere")
        #expect(notices > 0 && settled > 0 && resets > 0, "conflicts, settlements and collected tombstones happened")
        if likeFerryClients { #expect(readAhead > 10, "pulls were read ahead: \(readAhead)") }
        try await store.close()
    }

    /// A device that is caught up gets its own cursor text back, unsigned
    /// again; a write in another scope moves it to the new version, and a
    /// write in its scope sends the pull to the file.
    @Test func aCaughtUpPullIsAnsweredFromMemoryUntilItsScopeChanges() async throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteSyncStore(directory: directory.url)
        _ = try await store.push(
            PushRequest(clientID: "a1", mutations: [Mutations.upsert(1, ["t": "a"])]), userID: "alice", rules: PushRules())
        var request = PullRequest(clientID: "a1", scopes: [.init(scope: "user:alice")])
        #expect(store.quietAnswer(request, userID: "alice", limit: 10) == nil, "a first pull is read from the file")
        let first = try await store.pullEncoded(request, userID: "alice", limit: 10, notices: true)
        #expect(first.pages[0].rows.count == 1)
        request.scopes[0].cursor = first.pages[0].cursor
        request.scopes[0].notices = first.pages[0].noticeCursor

        let quiet = try #require(store.quietAnswer(request, userID: "alice", limit: 10))
        #expect(quiet.lastAppliedMutationID == 1)
        #expect(quiet.pages[0].cursor == first.pages[0].cursor && quiet.pages[0].rows.isEmpty)

        _ = try await store.push(
            PushRequest(clientID: "b1", mutations: [Mutations.upsert(1, scope: "user:bob", ["t": "b"])]), userID: "bob", rules: PushRules())
        let elsewhere = try #require(store.quietAnswer(request, userID: "alice", limit: 10))
        #expect(elsewhere.pages[0].cursor != first.pages[0].cursor, "moved to the store's new version")
        #expect(try await elsewhere.json() == store.readPull(request, userID: "alice", limit: 10, notices: true).json())

        _ = try await store.push(
            PushRequest(clientID: "a2", mutations: [Mutations.upsert(1, row: "r2", ["t": "c"])]), userID: "alice", rules: PushRules())
        #expect(store.quietAnswer(request, userID: "alice", limit: 10) == nil, "its scope changed")
        let next = try await store.pullEncoded(request, userID: "alice", limit: 10, notices: true)
        #expect(try next.pages[0].rows.decoded().map(\.rowID) == ["r2"])
        try await store.close()
    }

    /// A device's own push teaches its last applied id; a device the store
    /// knows nothing of since it opened is read from the file first.
    @Test func aClientsLastAppliedIdComesFromItsCommitsOrTheFile() async throws {
        let directory = try TemporaryDirectory()
        var store = try SQLiteSyncStore(directory: directory.url)
        _ = try await store.push(
            PushRequest(clientID: "a1", mutations: [Mutations.upsert(1, ["t": "a"]), Mutations.upsert(2, row: "r2", ["t": "b"])]),
            userID: "alice", rules: PushRules())
        let end = try await store.endCursors(scopes: ["user:alice"])["user:alice"]
        let request = PullRequest(clientID: "a1", scopes: [.init(scope: "user:alice", cursor: end, notices: "\(store.epoch)/0.0")])
        #expect(store.quietAnswer(request, userID: "alice", limit: 10)?.lastAppliedMutationID == 2)
        try await store.close()

        store = try SQLiteSyncStore(directory: directory.url)
        let reopened = try await store.endCursors(scopes: ["user:alice"])["user:alice"]
        let again = PullRequest(clientID: "a1", scopes: [.init(scope: "user:alice", cursor: reopened, notices: "\(store.epoch)/0.0")])
        #expect(store.quietAnswer(again, userID: "alice", limit: 10) == nil, "not known since the store opened")
        #expect(try await store.pullEncoded(again, userID: "alice", limit: 10, notices: true).lastAppliedMutationID == 2)
        #expect(store.quietAnswer(again, userID: "alice", limit: 10)?.lastAppliedMutationID == 2, "learned from the read")
        try await store.close()
    }

    /// The push route checks write access for the mutations past a client's
    /// last applied id: answered from memory when a commit or a read taught
    /// it, else from the file, and the same either way.
    @Test func theLastAppliedIdAPushIsCheckedAgainstIsTheFilesFromMemoryOrNot() async throws {
        let directory = try TemporaryDirectory()
        var store = try SQLiteSyncStore(directory: directory.url)
        #expect(try await store.lastAppliedMutationID(userID: "alice", clientID: "a1") == 0)
        _ = try await store.push(
            PushRequest(clientID: "a1", mutations: [Mutations.upsert(1, ["t": "a"]), Mutations.upsert(2, row: "r2", ["t": "b"])]),
            userID: "alice", rules: PushRules())
        #expect(store.known.withLock { $0.lastApplied(by: .init(userID: "alice", clientID: "a1")) } == 2)
        #expect(try await store.lastAppliedMutationID(userID: "alice", clientID: "a1") == 2)
        #expect(try await store.lastAppliedMutationID(userID: "bob", clientID: "a1") == 0, "another user's client is another client")
        // Memory is what answers: a commit recorded there (and nowhere else, here) is the answer.
        let alice = LastChanges.Client(userID: "alice", clientID: "a1")
        store.known.withLock { $0.committed(.init(version: $0.version, client: alice, lastApplied: 9)) }
        #expect(try await store.lastAppliedMutationID(userID: "alice", clientID: "a1") == 9)
        try await store.close()

        store = try SQLiteSyncStore(directory: directory.url)
        #expect(store.known.withLock { $0.lastApplied(by: .init(userID: "alice", clientID: "a1")) } == nil)
        #expect(try await store.lastAppliedMutationID(userID: "alice", clientID: "a1") == 2, "read from the file")
        try await store.close()
    }
}

extension QuietPullTests {
    /// Notices of another user, held when the store opens, do not keep a
    /// device whose user has none from being answered from memory: one
    /// read of the file teaches where its user's notices end.
    @Test func anotherUsersNoticesDoNotHoldADeviceBack() async throws {
        let directory = try TemporaryDirectory()
        var store = try SQLiteSyncStore(directory: directory.url)
        // carol follows team:x; she will have no notice, and her notice cursor stands before bob's.
        _ = try await store.push(
            PushRequest(clientID: "b1", mutations: [Mutations.upsert(1, scope: "team:x", ["t": "b"])]), userID: "bob", rules: PushRules())
        var request = PullRequest(clientID: "c1", scopes: [.init(scope: "team:x")])
        let first = try await store.pullEncoded(request, userID: "carol", limit: 10, notices: true)
        request.scopes[0].cursor = first.pages[0].cursor
        request.scopes[0].notices = first.pages[0].noticeCursor
        // alice deletes bob's row without having seen it: a notice for bob in team:x.
        _ = try await store.push(
            PushRequest(clientID: "a1", mutations: [Mutations.delete(1, scope: "team:x", base: nil)]), userID: "alice", rules: PushRules())
        var held = 0
        for user in ["alice", "bob"] {
            let all = PullRequest(clientID: "other", scopes: [.init(scope: "team:x", notices: "\(store.epoch)/0.0")])
            held += try await store.pullEncoded(all, userID: user, limit: 10, notices: true).pages[0].notices.count
        }
        #expect(held > 0, "the store holds a notice")
        try await store.close()

        store = try SQLiteSyncStore(directory: directory.url)
        let second = try await store.pullEncoded(request, userID: "carol", limit: 10, notices: true)
        request.scopes[0].cursor = second.pages[0].cursor
        request.scopes[0].notices = second.pages[0].noticeCursor
        #expect(second.pages[0].notices.isEmpty)
        let quiet = try #require(store.quietAnswer(request, userID: "carol", limit: 10), "answered from memory")
        #expect(try await quiet.json() == store.readPull(request, userID: "carol", limit: 10, notices: true).json())
        try await store.close()
    }
}

/// One device in ``QuietPullTests``: its cursors, the versions it has seen,
/// and its next mutation id.
private struct Device {
    /// Which scopes a pull asks for, and with which cursors.
    enum Asks {
        /// Every scope, each with its cursor and notice cursor.
        case everyScope
        /// As the Ferry client does: after a page with more to come, only
        /// the scopes with more.
        case likeAFerryClient
        /// As a Ferry client, but never with a notice cursor.
        case withoutNoticeCursors
    }

    var userID: String
    var clientID: String
    var scopes: [String]
    var asks = Asks.everyScope
    /// The scopes whose last page had more to come.
    var more: [String] = []
    var cursors: [String: String] = [:]
    var noticeCursors: [String: String] = [:]
    var seen: [String: Int64] = [:]
    var nextMutation: Int64 = 1
    /// Notices received and not yet settled.
    var unsettled: [PushRequest.SettledNotice] = []

    init(userID: String, clientID: String, scopes: [String], asks: Asks = .everyScope) {
        self.userID = userID
        self.clientID = clientID
        self.scopes = scopes
        self.asks = asks
    }

    var pullRequest: PullRequest {
        let asked = asks == .everyScope || more.isEmpty ? scopes : more
        return PullRequest(
            clientID: clientID,
            scopes: asked.map {
                PullRequest.ScopeCursor(scope: $0, cursor: cursors[$0], notices: asks == .withoutNoticeCursors ? nil : noticeCursors[$0])
            })
    }

    /// One or two edits on five rows of one of its scopes, on the versions
    /// it last saw; or, now and then, the settlement of the notices it has.
    mutating func push(_ random: inout SplitMix64) -> PushRequest {
        if !unsettled.isEmpty, random.next() % 2 == 0 {
            defer { unsettled = [] }
            return PushRequest(clientID: clientID, mutations: [], settled: unsettled)
        }
        let scope = scopes[Int(random.next() % UInt64(scopes.count))]
        var mutations: [Mutation] = []
        for _ in 0...(random.next() % 2) {
            let row = "r\(random.next() % 5)"
            let base = seen["\(scope)/\(row)"]
            if random.next() % 6 == 0 {
                mutations.append(Mutations.delete(nextMutation, row: row, scope: scope, base: base))
            } else {
                let value = ColumnValue.text("\(clientID)-\(nextMutation)")
                mutations.append(Mutations.upsert(nextMutation, row: row, scope: scope, ["t": value], base: base))
            }
            nextMutation += 1
        }
        return PushRequest(clientID: clientID, mutations: mutations)
    }

    mutating func apply(_ response: PullResponse) {
        for page in response.pages {
            if page.reset { seen = seen.filter { !$0.key.hasPrefix(page.scope + "/") } }
            for row in page.changes { seen["\(page.scope)/\(row.rowID)"] = row.version }
            unsettled += page.notices.map { PushRequest.SettledNotice(scope: page.scope, id: $0.id) }
            cursors[page.scope] = page.cursor
            noticeCursors[page.scope] = page.noticeCursor
        }
        more = response.pages.filter(\.hasMore).map(\.scope)
    }
}
