@testable import FerryServer
import FerryProtocol
import Foundation
import GRDB
import Testing
import FerryTestSupport

/// ARCHITECTURE.md server semantics 1–6, on every store: the real SQLite store,
/// and the real PostgreSQL store in the cluster `scripts/with-postgres` starts.
@Suite(.postgresTurns) struct SyncStoreConformanceTests {
    // Made at each use: its `now` is the time of the push (a stored one, made at first use, goes stale while other suites run, and pushes stamped after it looked like clock drift).
    static var rules: PushRules { PushRules() }

    func pullAll(_ store: any SyncStore, client: String = "c1", scope: String = "user:alice", cursor: String? = nil, limit: Int = 1000) async throws -> PullPage {
        try await store.pull(PullRequest(clientID: client, scopes: [.init(scope: scope, cursor: cursor)]), userID: "alice", limit: limit).pages[0]
    }

    @Test(arguments: StoreKind.available) func replayingAPushAHundredTimesLeavesTheSameState(_ kind: StoreKind) async throws {
        try await StoreUnderTest.with(kind) { server in
            let push = PushRequest(
                clientID: "c1",
                mutations: [
                    Mutations.upsert(1, ["title": "a", "n": 1]),
                    Mutations.upsert(2, row: "r2", ["title": "b"]),
                    Mutations.delete(3, row: "r2", base: nil),
                ])
            let first = try await server.store.push(push, userID: "alice", rules: Self.rules)
            let after = try await server.digest()
            for _ in 0..<100 {
                let replay = try await server.store.push(push, userID: "alice", rules: Self.rules)
                #expect(replay.response.lastAppliedMutationID == 3)
                #expect(replay.response.results.allSatisfy { $0.replayed })
                let asFirstTime = replay.response.results.map { result in
                    var result = result
                    result.replayed = false
                    return result
                }
                #expect(asFirstTime == first.response.results)
            }
            #expect(try await server.digest() == after)
        }
    }

    /// A retry that spans two earlier pushes, each mixing mutations that
    /// applied as written (kept as runs) with a conflict and a rejection
    /// (kept one by one), is answered with every result as first given.
    @Test(arguments: StoreKind.available) func aReplayAcrossPushesAnswersEachResultAsFirstGiven(_ kind: StoreKind) async throws {
        try await StoreUnderTest.with(kind) { server in
            let store = server.store
            _ = try await store.push(PushRequest(clientID: "c0", mutations: [Mutations.upsert(1, row: "shared", ["t": "theirs"])]), userID: "alice", rules: Self.rules)
            let first = PushRequest(
                clientID: "c1",
                mutations: [
                    Mutations.upsert(1, row: "a", ["t": "1"]),
                    Mutations.upsert(2, row: "b", ["t": "2"]),
                    // Lost to c0's write: a conflict, with the row.
                    Mutations.upsert(3, row: "shared", ["t": "mine"], base: nil),
                    Mutations.upsert(4, row: "c", ["t": "4"]),
                    Mutations.upsert(5, row: "d", ["t": "5"]),
                ])
            let second = PushRequest(
                clientID: "c1",
                mutations: [
                    Mutations.upsert(6, row: "e", ["t": "6"]),
                    // A base the server never issued: rejected.
                    Mutations.upsert(7, row: "x", ["t": "7"], base: 999),
                    Mutations.upsert(8, row: "a", ["t": "8"], base: 2),
                ])
            let answered =
                try await store.push(first, userID: "alice", rules: Self.rules).response.results
                + store.push(second, userID: "alice", rules: Self.rules).response.results
            #expect(answered.map(\.status) == [.applied, .applied, .conflict, .applied, .applied, .applied, .rejected, .applied])
            let retry = PushRequest(clientID: "c1", mutations: Array((first.mutations + second.mutations)[1...6]))
            let replay = try await store.push(retry, userID: "alice", rules: Self.rules)
            #expect(replay.response.lastAppliedMutationID == 8)
            #expect(replay.response.results.allSatisfy { $0.replayed })
            #expect(
                replay.response.results.map {
                    var result = $0; result.replayed = false; return result
                } == Array(answered[1...6]))
            // The store's view of its results, runs expanded, says the same.
            let viewed = try await server.recordedResults(client: "c1").map { try StoreCoding.decode(MutationResult.self, from: $0) }
            #expect(viewed == answered)
        }
    }

    /// A push of rows its device made (no base versions) that meets rows
    /// stored before it merges with each as if it had read it: the
    /// PostgreSQL store plans such a push first without reading its rows
    /// (`NewRowPush`), and its insert of a stored row sends it back to read
    /// them. So does a plan that would not write every row: here a
    /// validator that answers from the stored row rejects every row when
    /// it is asked as if none were stored.
    @Test(arguments: StoreKind.available) func aPushOfNewRowsThatMeetsStoredRowsMergesWithThem(_ kind: StoreKind) async throws {
        try await StoreUnderTest.with(kind) { server in
            let store = server.store
            let earlier = HLCTimestamp(wallMilliseconds: Mutations.stamp.wallMilliseconds - 10_000, counter: 0)
            _ = try await store.push(
                PushRequest(
                    clientID: "c0",
                    mutations: [
                        Mutations.upsert(1, row: "shared", ["title": "theirs", "body": "kept"], hlc: earlier),
                        Mutations.upsert(2, row: "gone", ["title": "deleted"], hlc: earlier),
                        Mutations.delete(3, row: "gone", base: nil),
                    ]), userID: "alice", rules: Self.rules)
            let met = try await store.push(
                PushRequest(
                    clientID: "c1",
                    mutations: [
                        Mutations.upsert(1, row: "a", ["title": "a"]),
                        // Later than c0's write: its title wins, c0's body stays.
                        Mutations.upsert(2, row: "shared", ["title": "mine"]),
                        // Never saw the delete: the delete wins.
                        Mutations.upsert(3, row: "gone", ["title": "back"]),
                        Mutations.upsert(4, row: "b", ["title": "b"]),
                    ]), userID: "alice", rules: Self.rules)
            let results = met.response.results
            #expect(results[0].status == .applied && results[3].status == .applied)
            #expect(results[1].conflicts.map(\.server) == [.text("theirs")], "c1 never saw c0's title")
            #expect(results[1].row?.values == ["title": "mine", "body": "kept"])
            #expect(results[2].status == .conflict)
            #expect(results[2].row?.deleted == true)

            var rules = Self.rules
            rules.tables = ServerTables(rules: [
                "note": TableRule(validator: MutationValidator { $0.currentValues == nil ? .reject(reason: "no new notes") : .accept })
            ])
            let edits = try await store.push(
                PushRequest(
                    clientID: "c2",
                    mutations: [Mutations.upsert(1, row: "c", ["title": "c"]), Mutations.upsert(2, row: "shared", ["extra": "added"])]),
                userID: "alice", rules: rules)
            #expect(edits.response.results.map(\.status) == [.rejected, .merged])

            let changes = Dictionary(uniqueKeysWithValues: try await pullAll(store).changes.map { ($0.rowID, $0) })
            #expect(Set(changes.keys) == ["a", "b", "shared"], "a device that never saw the delete does not bring the row back")
            #expect(changes["shared"]?.values == ["title": "mine", "body": "kept", "extra": "added"])
        }
    }

    /// Devices creating the same row at the same moment, each in a push of
    /// new rows: every push lands once, and the row holds one of their writes.
    @Test(arguments: StoreKind.available) func concurrentPushesCreatingTheSameRowEachLandOnce(_ kind: StoreKind) async throws {
        try await StoreUnderTest.with(kind) { server in
            let store = server.store
            let clients = 8
            let receipts = try await withThrowingTaskGroup(of: PushReceipt.self) { group in
                for client in 0..<clients {
                    group.addTask {
                        try await store.push(
                            PushRequest(
                                clientID: "c\(client)",
                                mutations: [
                                    Mutations.upsert(1, row: "own\(client)", ["title": .text("own")]),
                                    Mutations.upsert(2, row: "hot", ["title": .text("from \(client)")]),
                                ]), userID: "alice", rules: Self.rules)
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(receipts.allSatisfy { $0.response.lastAppliedMutationID == 2 })
            #expect(receipts.allSatisfy { $0.response.results.first?.status == .applied })
            let rows = Dictionary(uniqueKeysWithValues: try await pullAll(store).changes.map { ($0.rowID, $0.values) })
            #expect(rows.count == clients + 1)
            #expect((0..<clients).map { ColumnValue.text("from \($0)") }.contains(rows["hot"]?["title"] ?? .null))
        }
    }

    /// A different edit sent under ids the store applied (a second copy of
    /// the client's database, syncing beside the first) is refused with
    /// `clientIDReused`, naming the first that differs, and changes nothing;
    /// the first copy's own resend is still a replay.
    @Test(arguments: StoreKind.available) func aDifferentEditUnderAnAppliedIDIsRefusedNotDropped(_ kind: StoreKind) async throws {
        try await StoreUnderTest.with(kind) { server in
            let stamp = Mutations.stamp
            let original = PushRequest(
                clientID: "c1", mutations: (1...3).map { Mutations.upsert($0, row: "r\($0)", ["t": "original"], hlc: stamp) })
            _ = try await server.store.push(original, userID: "alice", rules: Self.rules)
            let after = try await server.digest()
            // The copy holds mutation 1 (handed out before it was made); 2 and 3 are its own.
            let copy = PushRequest(
                clientID: "c1",
                mutations: [original.mutations[0]]
                    + (2...4).map { Mutations.upsert($0, row: "copy\($0)", ["t": "copy"], hlc: stamp) })
            await #expect {
                try await server.store.push(copy, userID: "alice", rules: Self.rules)
            } throws: { error in
                let error = error as? FerryServerError
                return error?.code == .clientIDReused && error?.status == 409 && error?.differingMutationID == 2
                    && error?.lastAppliedMutationID == 3
            }
            #expect(try await server.digest() == after)
            let replay = try await server.store.push(original, userID: "alice", rules: Self.rules)
            #expect(replay.response.results.map(\.replayed) == [true, true, true])
            #expect(try await server.digest() == after)
        }
    }

    /// A push of more rows than one statement writes (a drain's batch):
    /// every row, every overwritten value's history and every result is
    /// stored, whatever statement of a multi-row write it fell in.
    @Test(arguments: StoreKind.available) func aPushOfHundredsOfRowsStoresEachRowItsHistoryAndItsResult(_ kind: StoreKind) async throws {
        let count: Int64 = 257
        try await StoreUnderTest.with(kind) { server in
            let store = server.store
            _ = try await store.push(
                PushRequest(clientID: "c1", mutations: (1...count).map { Mutations.upsert($0, row: "r\($0)", ["title": .text("t\($0)"), "n": .integer($0)]) }),
                userID: "alice", rules: Self.rules)
            let overwrite = PushRequest(
                clientID: "c2", mutations: (1...count).map { Mutations.upsert($0, row: "r\($0)", ["title": .text("u\($0)")], base: $0) })
            let first = try await store.push(overwrite, userID: "alice", rules: Self.rules)
            #expect(first.response.results.map(\.version) == (1...count).map { count + $0 })
            // Each conflict's base is the value the history kept of the row's first version.
            let late = try await store.push(
                PushRequest(
                    clientID: "c1", mutations: (1...count).map { Mutations.upsert(count + $0, row: "r\($0)", ["title": .text("late \($0)")], base: $0) }),
                userID: "alice", rules: Self.rules)
            #expect(late.response.results.count == Int(count))
            for (index, result) in late.response.results.enumerated() {
                #expect(result.conflicts.map(\.base) == [.text("t\(index + 1)")])
                #expect(result.conflicts.map(\.server) == [.text("u\(index + 1)")])
            }
            let replay = try await store.push(overwrite, userID: "alice", rules: Self.rules)
            #expect(replay.response.results.map(\.mutationID) == first.response.results.map(\.mutationID))
            #expect(replay.response.results.allSatisfy { $0.replayed })
            #expect(replay.response.results.map(\.version) == first.response.results.map(\.version))
            let page = try await pullAll(store)
            #expect(Set(page.changes.map(\.rowID)) == Set((1...count).map { "r\($0)" }))
            for change in page.changes {
                let i = Int64(change.rowID.dropFirst())!
                #expect(change.values["n"] == .integer(i))
            }
        }
    }

    @Test(arguments: StoreKind.available) func aGapIsRefusedWithWhereToResumeAndChangesNothing(_ kind: StoreKind) async throws {
        try await StoreUnderTest.with(kind) { server in
            _ = try await server.store.push(PushRequest(clientID: "c1", mutations: [Mutations.upsert(1, ["t": "a"])]), userID: "alice", rules: Self.rules)
            let before = try await server.digest()
            let error = await #expect(throws: FerryServerError.self) {
                try await server.store.push(
                    PushRequest(clientID: "c1", mutations: [Mutations.upsert(2, ["t": "b"]), Mutations.upsert(4, ["t": "c"])]),
                    userID: "alice", rules: Self.rules
                )
            }
            #expect(error?.code == .mutationGap)
            #expect(error?.lastAppliedMutationID == 1)
            #expect(try await server.digest() == before)
        }
    }

    @Test(arguments: StoreKind.available) func clientStateIsPerUser(_ kind: StoreKind) async throws {
        // The same client id under another user is another client: no shared counter.
        try await StoreUnderTest.with(kind) { server in
            _ = try await server.store.push(PushRequest(clientID: "c1", mutations: [Mutations.upsert(1, ["t": "a"])]), userID: "alice", rules: Self.rules)
            let bob = try await server.store.push(
                PushRequest(clientID: "c1", mutations: [Mutations.upsert(1, scope: "user:bob", ["t": "b"])]), userID: "bob", rules: Self.rules
            )
            #expect(bob.response.results.map(\.replayed) == [false])
        }
    }

    @Test(arguments: StoreKind.available) func oneCounterWithRowAndColumnVersions(_ kind: StoreKind) async throws {
        try await StoreUnderTest.with(kind) { server in
            let store = server.store
            _ = try await store.push(
                PushRequest(
                    clientID: "c1",
                    mutations: [
                        Mutations.upsert(1, row: "a", ["title": "x", "body": "y"]),
                        Mutations.upsert(2, row: "b", ["title": "z"]),
                    ]), userID: "alice", rules: Self.rules)
            let bob = try await store.push(
                PushRequest(
                    clientID: "c2",
                    mutations: [
                        Mutations.upsert(1, row: "a", ["body": "y2"], base: 1)
                    ]), userID: "alice", rules: Self.rules)
            #expect(bob.response.results.map(\.version) == [3])
            let page = try await pullAll(store)
            #expect(page.changes.map(\.rowID) == ["b", "a"])
            #expect(page.changes.map(\.version) == [2, 3])
            let row = try #require(try await server.row(RowKey(scope: "user:alice", table: "note", rowID: "a")))
            #expect(row.version == 3)
            #expect(row.cells["title"]?.version == 1)
            #expect(row.cells["body"]?.version == 3)
        }
    }

    @Test(arguments: StoreKind.available) func conflictsAndRejectionsAreRecorded(_ kind: StoreKind) async throws {
        var tables = ServerTables(rules: [
            "task": TableRule(
                policy: .serverWins,
                validator: MutationValidator { proposed in
                    proposed.mutation.columns["done"] == "maybe" ? .reject(reason: "done is yes or no") : .accept
                })
        ])
        tables.acceptsOtherTables = false
        let rules = PushRules(tables: tables)
        try await StoreUnderTest.with(kind) { server in
            let store = server.store
            _ = try await store.push(PushRequest(clientID: "c1", mutations: [Mutations.upsert(1, table: "task", ["done": "no"])]), userID: "alice", rules: rules)
            _ = try await store.push(PushRequest(clientID: "c2", mutations: [Mutations.upsert(1, table: "task", ["done": "yes"], base: 1)]), userID: "alice", rules: rules)
            let late = try await store.push(
                PushRequest(
                    clientID: "c1",
                    mutations: [
                        Mutations.upsert(2, table: "task", ["done": "no way"], base: 1),
                        Mutations.upsert(3, table: "task", ["done": "maybe"], base: 2),
                    ]), userID: "alice", rules: rules)
            #expect(late.response.lastAppliedMutationID == 3)
            #expect(late.response.results.map(\.status) == [.conflict, .rejected])
            #expect(
                late.response.results[0].conflicts == [
                    Conflict(kind: .column, column: "done", base: "no", local: "no way", server: "yes", resolution: .keptServer)
                ])
            #expect(late.response.results[1].reason == "done is yes or no")
            let conflict = try #require(try await server.recordedConflict(client: "c1", mutation: 2))
            #expect(try JSONDecoder().decode(Conflict.self, from: Data(conflict.utf8)) == late.response.results[0].conflicts[0])
            #expect(try await server.recordedRejection(client: "c1", mutation: 3) == "done is yes or no")
        }
    }

    @Test(arguments: StoreKind.available) func pagesFollowTheCursorAndEndAtTheStoreVersion(_ kind: StoreKind) async throws {
        try await StoreUnderTest.with(kind) { server in
            let store = server.store
            _ = try await store.push(
                PushRequest(clientID: "c1", mutations: (1...25).map { Mutations.upsert(Int64($0), row: "r\($0)", ["n": .integer(Int64($0))]) }), userID: "alice", rules: Self.rules)
            var cursor: String?
            var seen: [String] = []
            var pages = 0
            repeat {
                let page = try await pullAll(store, cursor: cursor, limit: 10)
                seen += page.changes.map(\.rowID)
                cursor = page.cursor
                pages += 1
                if !page.hasMore { break }
            } while true
            #expect(pages == 3)
            #expect(seen == (1...25).map { "r\($0)" })
            // Nothing new: an empty page, and the cursor stays usable.
            let empty = try await pullAll(store, cursor: cursor)
            #expect(empty.changes.isEmpty && !empty.hasMore && !empty.reset)
        }
    }

    /// The first page of a scope sent from scratch says about how many rows
    /// the whole of it sends (PostgreSQL counts live rows; SQLite reads its
    /// index alone, so the tombstone counts too); no other page carries an
    /// estimate. A reset page counts again.
    /// A scope's readers, read at once for a live change, answer for each
    /// user what `membership(of:in:)` answers; a missing scope has none.
    @Test(arguments: StoreKind.available) func aScopesReadersAnswerAsEachMembershipDoes(_ kind: StoreKind) async throws {
        try await StoreUnderTest.with(kind) { server in
            let store = server.store
            try await store.createScope("crew", owner: "alice")
            try await store.setMember("bob", role: .read, in: "crew")
            try await store.setMember("carol", role: .write, in: "crew")
            try await store.createScope("ownerless", owner: nil)
            try await store.setMember("bob", role: .write, in: "ownerless")
            for scope in ["crew", "ownerless"] {
                let readers = try #require(try await store.readers(of: scope))
                for user in ["alice", "bob", "carol", "dave"] {
                    #expect(readers.membership(of: user) == (try await store.membership(of: user, in: scope)), "\(user) in \(scope)")
                }
            }
            #expect(try await store.readers(of: "crew")?.members == ["bob": .read, "carol": .write])
            #expect(try await store.readers(of: "missing") == nil)
            _ = try await store.removeMember("bob", from: "crew")
            #expect(try await store.readers(of: "crew")?.membership(of: "bob") == nil)
        }
    }

    @Test(arguments: StoreKind.available) func theFirstPageFromScratchEstimatesTheRowsToCome(_ kind: StoreKind) async throws {
        try await StoreUnderTest.with(kind) { server in
            let store = server.store
            _ = try await store.push(
                PushRequest(clientID: "c1", mutations: (1...25).map { Mutations.upsert(Int64($0), row: "r\($0)", ["n": .integer(Int64($0))]) }),
                userID: "alice", rules: Self.rules)
            _ = try await store.push(PushRequest(clientID: "c1", mutations: [Mutations.delete(26, row: "r25", base: 25)]), userID: "alice", rules: Self.rules)
            let first = try await pullAll(store, limit: 10)
            #expect((24...25).contains(first.estimatedRows ?? 0) && first.hasMore && !first.reset)
            let second = try await pullAll(store, cursor: first.cursor, limit: 10)
            #expect(second.estimatedRows == nil)
            // A page that holds the whole scope is its own count, tombstones left out.
            #expect(try await pullAll(store, limit: 1000).estimatedRows == 24)
            // The encoded page says the same on the wire.
            let encoded = try await store.pullEncoded(
                PullRequest(clientID: "c1", scopes: [.init(scope: "user:alice", cursor: nil)]), userID: "alice", limit: 10, notices: true)
            let decoded = try JSONDecoder().decode(PullResponse.self, from: Data(try encoded.json().utf8))
            let estimate = try #require(decoded.pages[0].estimatedRows)
            let json = try encoded.json()
            #expect((24...25).contains(estimate) && json.contains("\"estimatedRows\":\(estimate),"))
            // An empty scope: zero to come.
            #expect(try await pullAll(store, scope: "user:nobody-yet").estimatedRows == 0)

            // A cursor behind the tombstone horizon starts over, with an estimate.
            _ = try await store.collectGarbage(before: Date().addingTimeInterval(1))
            let reset = try await pullAll(store, cursor: first.cursor, limit: 10)
            #expect(reset.reset && (24...25).contains(reset.estimatedRows ?? 0))
        }
    }

    @Test(arguments: StoreKind.available) func aPullPageAndTheLastAppliedIDComeFromOneSnapshot(_ kind: StoreKind) async throws {
        try await StoreUnderTest.with(kind) { server in
            let store = server.store
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    for id in Int64(1)...150 {
                        let push = PushRequest(clientID: "c1", mutations: [Mutations.upsert(id, row: "row-\(id)", ["n": .integer(id)])])
                        _ = try await store.push(push, userID: "alice", rules: Self.rules)
                    }
                }
                group.addTask {
                    for _ in 0..<150 {
                        let response = try await store.pull(
                            PullRequest(clientID: "c1", scopes: [.init(scope: "user:alice")]), userID: "alice", limit: 1000
                        )
                        // Mutation n created row-n: the rows present are exactly those of the applied ids.
                        let applied = response.lastAppliedMutationID
                        let present = Set(response.pages[0].changes.map(\.rowID))
                        #expect(present == Set((0..<applied).map { "row-\($0 + 1)" }))
                    }
                }
                try await group.waitForAll()
            }
        }
    }

    @Test(arguments: StoreKind.available) func pullsInterleavedWithConcurrentPushesNeverMissACommittedChange(_ kind: StoreKind) async throws {
        try await StoreUnderTest.with(kind) { server in
            let store = server.store
            let writers = 4
            let follower = Task {
                // Pulls small pages while the writers run, keeping what it saw.
                var seen: [String: Int64] = [:]
                var cursor: String?
                for _ in 0..<300 {
                    let page = try await pullAll(store, client: "follower", cursor: cursor, limit: 5)
                    for change in page.changes { seen[change.rowID] = change.version }
                    cursor = page.cursor
                    #expect(!page.reset)
                }
                return (seen, cursor)
            }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for writer in 0..<writers {
                    group.addTask {
                        for id in 1...60 {
                            // Rows are rewritten, so they move to new versions while being paged.
                            let push = PushRequest(
                                clientID: "writer-\(writer)",
                                mutations: [
                                    Mutations.upsert(Int64(id), row: "w\(writer)-\(id % 7)", ["n": .integer(Int64(id))])
                                ])
                            _ = try await store.push(push, userID: "alice", rules: Self.rules)
                        }
                    }
                }
                try await group.waitForAll()
            }
            var (seen, cursor) = try await follower.value
            // Following the cursor to the end must give exactly the final state.
            while true {
                let page = try await pullAll(store, client: "follower", cursor: cursor, limit: 5)
                for change in page.changes { seen[change.rowID] = change.version }
                cursor = page.cursor
                if !page.hasMore { break }
            }
            let truth = try await pullAll(store, client: "check")
            #expect(truth.changes.count == writers * 7)
            #expect(seen == Dictionary(uniqueKeysWithValues: truth.changes.map { ($0.rowID, $0.version) }))
        }
    }

    /// A value discarded by a writer who had not seen it is noticed to
    /// every client of its writer's user but the overriding one, after the
    /// notice cursor, in pages, and only in the scope's pull; notices expire
    /// with the tombstones.
    @Test(arguments: StoreKind.available) func noticesReachTheWritersUserOnceAndExpireWithTombstones(_ kind: StoreKind) async throws {
        try await StoreUnderTest.with(kind) { server in
            let store = server.store
            _ = try await store.push(
                PushRequest(
                    clientID: "c1",
                    mutations: [
                        Mutations.upsert(1, row: "r1", ["t": "a", "n": 1]),
                        Mutations.upsert(2, row: "r2", ["t": "b"]),
                        Mutations.upsert(3, row: "r3", ["t": "c"]),
                    ]), userID: "alice", rules: Self.rules)
            // A third client of alice's pulls once now: its notices start here.
            let before = try await store.pull(PullRequest(clientID: "c3", scopes: [.init(scope: "user:alice")]), userID: "alice", limit: 1000)
            // Another client of alice's, which never saw them, deletes r1 and r2 and rewrites r3 later.
            let overriding = try await store.push(
                PushRequest(
                    clientID: "c2",
                    mutations: [
                        Mutations.delete(1, row: "r1", base: nil),
                        Mutations.delete(2, row: "r2", base: nil),
                        Mutations.upsert(3, row: "r3", ["t": "c2's"], base: 0, hlc: HLCTimestamp(wallMilliseconds: Int64(Date().timeIntervalSince1970 * 1000) + 1000, counter: 0)),
                    ]), userID: "alice", rules: Self.rules)
            #expect(overriding.response.results.map(\.status) == [.conflict, .conflict, .conflict])
            #expect(overriding.response.results.allSatisfy { $0.row != nil })

            func notices(_ client: String, after cursor: String? = nil, limit: Int = 1000) async throws -> PullPage {
                try await store.pull(
                    PullRequest(clientID: client, scopes: [.init(scope: "user:alice", notices: cursor)]), userID: "alice", limit: limit
                ).pages[0]
            }
            let writer = try await notices("c1")
            #expect(writer.notices.map(\.rowID) == ["r1", "r1", "r2", "r3"])
            #expect(writer.notices.map(\.conflict.kind) == [.updateLostToDelete, .updateLostToDelete, .updateLostToDelete, .column])
            let r3 = try #require(writer.notices.last)
            #expect(r3.conflict.local == .text("c") && r3.conflict.server == .text("c2's") && r3.conflict.resolution == .keptServer)
            #expect(r3.overriddenBy == "alice" && r3.policy == .lastWriteWins && r3.row?.values["t"] == .text("c2's"))
            #expect(writer.notices[0].row?.deleted == true && writer.notices[0].policy == nil)
            #expect(try await notices("c2").notices.isEmpty, "the overriding client was told by its reply")
            #expect(try await notices("c3", after: before.pages[0].noticeCursor).notices == writer.notices, "every other client of the user")
            #expect(try await notices("c5").notices.isEmpty, "a new client starts at its first pull: old conflicts are not handed to it")
            #expect(try await notices("c1", after: writer.noticeCursor).notices.isEmpty)
            // A cursor from another epoch of the store (a restored backup) starts over.
            #expect(try await notices("c1", after: "another-epoch/999999.999999").notices == writer.notices)
            let other = try await store.pull(PullRequest(clientID: "b1", scopes: [.init(scope: "user:bob")]), userID: "bob", limit: 1000)
            #expect(other.pages[0].notices.isEmpty)

            // In pages: a small limit delivers them all, in order, each once.
            var cursor: String?
            var paged: [ConflictNotice] = []
            for _ in 0..<10 {
                let page = try await notices("c1", after: cursor, limit: 1)
                paged += page.notices
                cursor = page.noticeCursor ?? cursor
                if !page.hasMore { break }
            }
            #expect(paged == writer.notices)

            // The overriding reply names the notice of the same loss: its user's, so settling one settles both.
            #expect(overriding.response.results[2].conflicts.map(\.noticeID) == [r3.id])
            // Bob cannot settle alice's notice: nothing is recorded, for alice or for him.
            let settled = PushRequest.SettledNotice(scope: "user:alice", id: r3.id)
            _ = try await store.push(PushRequest(clientID: "b1", mutations: [], settled: [settled]), userID: "bob", rules: Self.rules)
            #expect(try await notices("c1", after: writer.noticeCursor).settledNotices.isEmpty)
            let asBob = try await store.pull(
                PullRequest(clientID: "b2", scopes: [.init(scope: "user:alice", notices: writer.noticeCursor)]),
                userID: "bob", limit: 1000)
            #expect(asBob.pages[0].settledNotices.isEmpty)
            // Settled on c3: every client of alice's is told, c3 too; settling twice records it once.
            for _ in 0..<2 {
                _ = try await store.push(PushRequest(clientID: "c3", mutations: [], settled: [settled]), userID: "alice", rules: Self.rules)
            }
            let told = try await notices("c1", after: writer.noticeCursor)
            #expect(told.notices.isEmpty && told.settledNotices == [r3.id])
            #expect(try await notices("c3", after: writer.noticeCursor).settledNotices == [r3.id])

            // A client whose first push came before its first pull starts its notices at that push: a value of
            // its own overridden in between reaches it.
            _ = try await store.push(
                PushRequest(clientID: "c6", mutations: [Mutations.upsert(1, row: "r6", ["t": "c6's"])]),
                userID: "alice", rules: Self.rules)
            _ = try await store.push(
                PushRequest(
                    clientID: "c7",
                    mutations: [
                        Mutations.upsert(
                            1, row: "r6", ["t": "c7's"], base: 0,
                            hlc: HLCTimestamp(wallMilliseconds: Int64(Date().timeIntervalSince1970 * 1000) + 2000, counter: 0))
                    ]), userID: "alice", rules: Self.rules)
            #expect(try await notices("c6").notices.map(\.conflict.local) == [.text("c6's")])

            _ = try await store.collectGarbage(before: Date().addingTimeInterval(1))
            #expect(try await notices("c1").notices.isEmpty)
            await #expect(throws: FerryServerError.self) { _ = try await notices("c1", after: "garbage") }
        }
    }

    @Test(arguments: StoreKind.available) func oldCursorsGetAResetAfterGarbageCollection(_ kind: StoreKind) async throws {
        try await StoreUnderTest.with(kind) { server in
            let store = server.store
            _ = try await store.push(
                PushRequest(
                    clientID: "c1",
                    mutations: [
                        Mutations.upsert(1, row: "keep", ["t": "a"]),
                        Mutations.upsert(2, row: "gone", ["t": "b"]),
                    ]), userID: "alice", rules: Self.rules)
            let old = try await pullAll(store).cursor
            _ = try await store.push(PushRequest(clientID: "c1", mutations: [Mutations.delete(3, row: "gone", base: 2)]), userID: "alice", rules: Self.rules)
            let beforeCollection = try await pullAll(store, cursor: old)
            #expect(beforeCollection.changes.map(\.deleted) == [true])

            // Nothing is old enough yet.
            #expect(try await store.collectGarbage(before: Date().addingTimeInterval(-3600)).tombstonesRemoved == 0)
            let report = try await store.collectGarbage(before: Date().addingTimeInterval(1))
            #expect(report.tombstonesRemoved == 1)
            #expect(report.horizon == 3)

            let reset = try await pullAll(store, cursor: old)
            #expect(reset.reset)
            #expect(reset.changes.map(\.rowID) == ["keep"])
            let current = try await pullAll(store, cursor: reset.cursor)
            #expect(!current.reset && current.changes.isEmpty)

            // A stale client's edit of the collected row does not bring it back.
            let stale = try await store.push(
                PushRequest(clientID: "c2", mutations: [Mutations.upsert(1, row: "gone", ["t": "again"], base: 2)]),
                userID: "alice", rules: Self.rules
            )
            #expect(stale.response.results.map(\.status) == [.conflict])
            #expect(try await pullAll(store).changes.map(\.rowID) == ["keep"])

            // Nor does a client that never saw the row, inserting the same id: it
            // meets the deletion record the collected tombstone left, and is told.
            let unaware = try await store.push(
                PushRequest(clientID: "c4", mutations: [Mutations.upsert(1, row: "gone", ["t": "from scratch"])]),
                userID: "alice", rules: Self.rules
            )
            #expect(unaware.response.results.map(\.status) == [.conflict])
            #expect(unaware.response.results.first?.conflicts.map(\.kind) == [.updateLostToDelete])
            #expect(try await pullAll(store).changes.map(\.rowID) == ["keep"])

            // A client that saw the delete (base at the horizon) may re-create it.
            let recreated = try await store.push(
                PushRequest(clientID: "c3", mutations: [Mutations.upsert(1, row: "gone", ["t": "new"], base: 3)]),
                userID: "alice", rules: Self.rules
            )
            #expect(recreated.response.results.map(\.status) == [.applied])
        }
    }

    /// `GarbageRules`, one scenario, the same outcome on both stores.
    @Test(arguments: StoreKind.available) func garbageCollectionFollowsTheSameRulesOnEveryStore(_ kind: StoreKind) async throws {
        try await StoreUnderTest.with(kind) { server in
            let store = server.store
            let early = HLCTimestamp(wallMilliseconds: 1_000, counter: 0)
            let first = PushRequest(
                clientID: "c1",
                mutations: [
                    Mutations.upsert(1, ["t": "a"], hlc: early),
                    Mutations.upsert(2, ["t": "b"], base: 1, hlc: early),
                    Mutations.upsert(3, ["t": "c"], base: 2, hlc: early),
                ])
            _ = try await store.push(first, userID: "alice", rules: Self.rules)
            // c2 saw version 1 only: its later stamp wins the column, with a conflict recorded and c1 told.
            let racing = PushRequest(clientID: "c2", mutations: [Mutations.upsert(1, ["t": "z"], base: 1)])
            let raced = try await store.push(racing, userID: "alice", rules: Self.rules)
            #expect(raced.response.results.map(\.status) == [.conflict])
            _ = try await store.push(
                PushRequest(
                    clientID: "c1",
                    mutations: [
                        Mutations.upsert(4, row: "r2", ["t": "x"]),
                        Mutations.delete(5, row: "r2", base: 5),
                    ]), userID: "alice", rules: Self.rules)
            _ = try await store.push(PushRequest(clientID: "c1", mutations: [Mutations.upsert(6, row: "r3", ["t": "later"])]), userID: "alice", rules: Self.rules)
            #expect(
                try await server.collectedState() == [
                    "history r1.t v1", "history r1.t v2", "history r1.t v3", "history r2.t v5",
                    "horizon 0", "notices 1",
                    "result c1#1", "result c1#2", "result c1#3", "result c1#4", "result c1#5", "result c1#6", "result c2#1",
                    "row r1", "row r2 deleted", "row r3",
                ])

            let report = try await store.collectGarbage(before: Date().addingTimeInterval(1))
            #expect(report.tombstonesRemoved == 1)
            #expect(report.horizon == 6)
            #expect(
                try await server.collectedState() == [
                    // r1.t's newest value at or below the horizon stays; older ones and r2's go with its tombstone.
                    "history r1.t v3",
                    "horizon 6", "notices 0",
                    // Results older than the horizon go, but each client's newest.
                    "result c1#4", "result c1#5", "result c1#6", "result c2#1",
                    // r2's tombstone stays as its deletion record: keys and delete version, no values.
                    "row r1", "row r2 deletion record", "row r3",
                ])

            // A replay whose results were collected is acknowledged as plainly applied…
            let replayedFirst = try await store.push(first, userID: "alice", rules: Self.rules)
            #expect(replayedFirst.response.results == (1...3).map { MutationResult(mutationID: $0, status: .applied, replayed: true) })
            // …and a client's newest result is answered in full.
            let replayedRace = try await store.push(racing, userID: "alice", rules: Self.rules)
            var expected = raced.response.results
            expected[0].replayed = true
            #expect(replayedRace.response.results == expected)
            #expect(replayedRace.response.lastAppliedMutationID == 1)

            // An overwrite adds a value below the unchanged horizon: the next collection prunes the older one.
            _ = try await store.push(PushRequest(clientID: "c1", mutations: [Mutations.upsert(7, ["t": "y"], base: 4)]), userID: "alice", rules: Self.rules)
            #expect(try await store.collectGarbage(before: Date().addingTimeInterval(1)).tombstonesRemoved == 0)
            #expect(try await server.collectedState().filter { $0.hasPrefix("history") } == ["history r1.t v4"])
        }
    }

    @Test(arguments: StoreKind.available) func pagesAreCutBySizeAndStillAdvance(_ kind: StoreKind) async throws {
        try await StoreUnderTest.with(kind, maxPageBytes: 10_000) { server in
            let store = server.store
            let big = ColumnValue.text(String(repeating: "x", count: 4000))
            _ = try await store.push(PushRequest(clientID: "c1", mutations: (1...5).map { Mutations.upsert(Int64($0), row: "r\($0)", ["t": big]) }), userID: "alice", rules: Self.rules)
            var cursor: String?
            var sizes: [Int] = []
            let deadline = ContinuousClock.now + .seconds(30)
            while true {
                let page = try await pullAll(store, cursor: cursor)
                cursor = page.cursor
                if sizes.isEmpty, page.changes.isEmpty, ContinuousClock.now < deadline {
                    // PostgreSQL hands out a transaction's rows once every transaction begun before it
                    // in the cluster has ended, and another suite's may still be open: ask again.
                    try await Task.sleep(for: .milliseconds(20))
                    continue
                }
                sizes.append(page.changes.count)
                if !page.hasMore { break }
            }
            #expect(sizes == [2, 2, 1])
        }
    }

    @Test(arguments: StoreKind.available) func cursorsFromAnotherServerEpochGetAReset(_ kind: StoreKind) async throws {
        try await StoreUnderTest.with(kind) { first in
            try await StoreUnderTest.with(kind) { second in
                _ = try await first.store.push(PushRequest(clientID: "c1", mutations: [Mutations.upsert(1, ["t": "a"])]), userID: "alice", rules: Self.rules)
                _ = try await second.store.push(PushRequest(clientID: "c1", mutations: [Mutations.upsert(1, ["t": "b"])]), userID: "alice", rules: Self.rules)
                let cursor = try await pullAll(first.store).cursor
                let page = try await pullAll(second.store, cursor: cursor)
                #expect(page.reset)
                #expect(page.changes.map(\.values) == [["t": "b"]])
            }
        }
    }

    @Test(arguments: StoreKind.available) func theStoreSurvivesReopening(_ kind: StoreKind) async throws {
        try await StoreUnderTest.with(kind) { server in
            let push = PushRequest(clientID: "c1", mutations: [Mutations.upsert(1, ["t": "a"])])
            _ = try await server.store.push(push, userID: "alice", rules: Self.rules)
            let cursor = try await pullAll(server.store).cursor
            let reopened = try await server.reopened()
            let page = try await pullAll(reopened.store, cursor: cursor)
            #expect(!page.reset && page.changes.isEmpty)
            // The same mutation sent again, as a device resends it (its stamp too).
            let replay = try await reopened.store.push(push, userID: "alice", rules: Self.rules)
            #expect(replay.response.results.map(\.replayed) == [true])
            try await reopened.close()
        }
    }

    @Test(arguments: StoreKind.available) func sharedScopesKeepOwnersAndMembers(_ kind: StoreKind) async throws {
        try await StoreUnderTest.with(kind) { server in
            let store = server.store
            try await store.createScope("team:field", owner: "alice")
            try await store.createScope("team:admin", owner: nil)
            let taken = await #expect(throws: FerryServerError.self) { try await store.createScope("team:field", owner: "bob") }
            #expect(taken?.code == .alreadyExists)
            try await store.setMember("bob", role: .read, in: "team:field")
            try await store.setMember("bob", role: .write, in: "team:admin")
            try await store.setMember("bob", role: .write, in: "team:field")
            let missing = await #expect(throws: FerryServerError.self) { try await store.setMember("bob", role: .read, in: "team:none") }
            #expect(missing?.code == .notFound)

            #expect(try await store.membership(of: "alice", in: "team:field") == ScopeMembership(scope: "team:field", role: .write, owner: true))
            #expect(try await store.membership(of: "bob", in: "team:field") == ScopeMembership(scope: "team:field", role: .write, owner: false))
            #expect(try await store.membership(of: "carol", in: "team:field") == nil)
            #expect(try await store.membership(of: "bob", in: "team:none") == nil)
            #expect(
                try await store.memberships(of: "bob") == [
                    ScopeMembership(scope: "team:admin", role: .write, owner: false),
                    ScopeMembership(scope: "team:field", role: .write, owner: false),
                ])
            #expect(try await store.memberships(of: "alice") == [ScopeMembership(scope: "team:field", role: .write, owner: true)])
        }
    }
}
