@testable import FerryServer
import FerryProtocol
import FerryTestSupport
import FerryTesting
import Testing

/// A push merges the same with the history ``HistoryNeeds`` keeps as with
/// all of it, and a store loads exactly that much: a row edited many times
/// does not make its next push read every value it ever held.
@Suite(.postgresTurns) struct HistoryNeedsTests {
    static let writers = ["c1", "c2", "c3"]
    static let columns = ["title", "body", "done"]

    static func mutation(_ id: Int64, base: Int64?, delete: Bool, hlc: Int64, _ random: inout SplitMix64) -> Mutation {
        var values: [String: ColumnValue] = [:]
        for column in columns where Bool.random(using: &random) {
            values[column] = .text("\(column) \(Int.random(in: 0..<4, using: &random))")
        }
        if values.isEmpty { values["title"] = .text("t \(id)") }
        return Mutation(
            mutationID: id, table: "note", rowID: "r", scope: "user:a", operation: delete ? .delete : .upsert,
            columns: delete ? [:] : values, baseVersion: base, hlc: HLCTimestamp(wallMilliseconds: hlc, counter: 0))
    }

    /// The parts of an outcome a push keeps: the row as stored (not its
    /// in-memory history), its tombstone values, and everything reported.
    static func summary(_ outcome: RowMerge.Outcome) -> String {
        let row = outcome.row.map { row in
            "v\(row.version) deleted \(row.deleted) by \(row.clientID) cells \(row.cells.sorted { $0.key < $1.key }) shows \(row.serverRow.values.sorted { $0.key < $1.key })"
        }
        let overwritten = outcome.overwritten.map { "\($0.column)@\($0.version)=\($0.value)" }
        return "\(row ?? "none") \(outcome.status) \(outcome.conflicts) \(outcome.changed) \(overwritten) \(outcome.overridden)"
    }

    @Test(arguments: [1, 2, 3, 4] as [UInt64]) func aPushMergesTheSameWithTheTrimmedHistory(seed: UInt64) {
        var random = SplitMix64(mixing: seed)
        for _ in 0..<200 {
            // A row with a history: edits by several writers, a delete and a re-creation now and then.
            var row: StoredRow?
            var version: Int64 = 0
            for edit in 0..<Int.random(in: 1..<30, using: &random) {
                version += 1
                let base = version > 1 ? Int64.random(in: 0..<version, using: &random) : nil
                let change = Self.mutation(Int64(edit), base: base, delete: Int.random(in: 0..<10, using: &random) == 0, hlc: version, &random)
                let outcome = RowMerge.merge(
                    change, from: Self.writers.randomElement(using: &random)!, into: row, policy: .lastWriteWins, version: version)
                if outcome.changed { row = outcome.row } else { version -= 1 }
            }
            // A push of one to three mutations of it, each with a base the writer could have seen.
            let push = (0..<Int.random(in: 1...3, using: &random)).map { index in
                Self.mutation(
                    100 + Int64(index), base: Bool.random(using: &random) ? Int64.random(in: 0...version, using: &random) : nil,
                    delete: Int.random(in: 0..<6, using: &random) == 0, hlc: version + 1 + Int64(index), &random)
            }
            let policy = ConflictPolicy.allCases.randomElement(using: &random)!
            let writer = Self.writers.randomElement(using: &random)!
            let key = RowKey(scope: "user:a", table: "note", rowID: "r")
            var full = row
            var trimmed = row.map { HistoryNeeds.trimmed($0, oldestBase: HistoryNeeds(push).oldestBase(of: key)) }
            var next = version
            for mutation in push {
                next += 1
                let a = RowMerge.merge(mutation, from: writer, into: full, policy: policy, version: next)
                let b = RowMerge.merge(mutation, from: writer, into: trimmed, policy: policy, version: next)
                #expect(Self.summary(a) == Self.summary(b))
                full = a.row
                trimmed = b.row
            }
        }
    }

    @Test func aRowAtItsNewestBaseKeepsOneValuePerColumn() throws {
        var row: StoredRow?
        for version in Int64(1)...50 {
            let edit = Mutation(
                mutationID: version, table: "note", rowID: "r", scope: "user:a", operation: .upsert,
                columns: ["title": .text("t\(version)"), "body": version == 1 ? "b" : nil].compactMapValues { $0 },
                baseVersion: version - 1, hlc: HLCTimestamp(wallMilliseconds: version, counter: 0))
            row = RowMerge.merge(edit, from: "c1", into: row, policy: .lastWriteWins, version: version).row
        }
        let held = try #require(row)
        #expect(held.history.count == 49)
        #expect(HistoryNeeds.trimmed(held, oldestBase: 50).history.map(\.version) == [49])
        #expect(HistoryNeeds.trimmed(held, oldestBase: 45).history.map(\.version) == [45, 46, 47, 48, 49])
        #expect(HistoryNeeds.trimmed(held, oldestBase: 0).history.count == 49)
    }

    /// Both stores load what ``HistoryNeeds/trimmed(_:oldestBase:)`` keeps,
    /// for a row edited by turns by two clients (so conflicts and stale
    /// bases), then deleted.
    @Test(arguments: StoreKind.available) func aStoreLoadsWhatTheRuleKeeps(_ kind: StoreKind) async throws {
        try await StoreUnderTest.with(kind) { server in
            let key = RowKey(scope: "user:alice", table: "note", rowID: "r1")
            var ids: [String: Int64] = ["c1": 0, "c2": 0]
            var version: Int64 = 0
            for edit in 0..<40 {
                let client = edit % 3 == 0 ? "c2" : "c1"
                ids[client]! += 1
                let columns: [String: ColumnValue] = edit % 4 == 0 ? ["title": .text("t\(edit)"), "body": .text("b\(edit)")] : ["title": .text("t\(edit)")]
                let reply = try await server.store.push(
                    PushRequest(clientID: client, mutations: [Mutations.upsert(ids[client]!, columns, base: edit == 0 ? nil : version - 1)]),
                    userID: "alice", rules: PushRules())
                version = max(version, reply.response.results[0].version ?? version)
            }
            let all = try #require(try await server.row(key))
            #expect(all.history.count > 30)
            for oldest in [0, 1, 7, version / 2, version - 1, version, Int64.max] {
                let loaded = try #require(try await server.row(key, oldestBase: oldest))
                let expected = HistoryNeeds.trimmed(all, oldestBase: oldest)
                #expect(Set(loaded.history) == Set(expected.history), "oldest base \(oldest)")
                #expect(loaded.cells == all.cells)
            }
            #expect(try #require(try await server.row(key, oldestBase: version)).history.count <= 2)

            ids["c1"]! += 1
            _ = try await server.store.push(
                PushRequest(clientID: "c1", mutations: [Mutations.delete(ids["c1"]!, base: version)]), userID: "alice", rules: PushRules())
            let tombstone = try #require(try await server.row(key, oldestBase: .max))
            #expect(tombstone.deleted)
            #expect(tombstone.history.count == all.history.count + 2, "a deleted row keeps all of it")
        }
    }

    /// Several rows loaded for one push, each with its own bound, one of
    /// them deleted: each is what the rule keeps of its whole history, as
    /// the store lists it apart from the loader.
    @Test(arguments: StoreKind.available) func rowsLoadedTogetherEachKeepWhatTheirBoundNeeds(_ kind: StoreKind) async throws {
        try await StoreUnderTest.with(kind) { server in
            var id: Int64 = 0
            var versions: [String: Int64] = [:]
            func edit(_ row: String, _ columns: [String: ColumnValue]) async throws {
                id += 1
                let reply = try await server.store.push(
                    PushRequest(clientID: "c1", mutations: [Mutations.upsert(id, row: row, columns, base: versions[row])]),
                    userID: "alice", rules: PushRules())
                versions[row] = reply.response.results[0].version
            }
            for round in 0..<12 {
                try await edit("busy", round % 3 == 0 ? ["title": .text("t\(round)"), "body": .text("b\(round)")] : ["title": .text("t\(round)")])
                if round < 6 { try await edit("gone", ["title": .text("g\(round)"), "body": .text("x\(round)")]) }
                if round < 3 { try await edit("calm", ["title": .text("c\(round)")]) }
            }
            id += 1
            _ = try await server.store.push(
                PushRequest(clientID: "c1", mutations: [Mutations.delete(id, row: "gone", base: versions["gone"])]), userID: "alice",
                rules: PushRules())

            // Every history entry, as the store lists it (not through the loader).
            var listed: [String: Set<String>] = [:]
            for line in try await server.collectedState() where line.hasPrefix("history ") {
                let entry = line.dropFirst("history ".count).split(separator: ".", maxSplits: 1)
                listed[String(entry[0]), default: []].insert(String(entry[1]))
            }
            func key(_ row: String) -> RowKey { RowKey(scope: "user:alice", table: "note", rowID: row) }
            let keys: Set<RowKey> = [key("busy"), key("gone"), key("calm")]
            let everything = try await server.rows(keys, oldestBases: [key("busy"): 0, key("gone"): 0, key("calm"): 0])
            for row in ["busy", "gone", "calm"] {
                let loaded = Set(everything[key(row)]!.history.map { "\($0.column) v\($0.version)" })
                #expect(loaded == listed[row, default: []], "\(row) with every base")
            }
            #expect(listed["busy"]!.count > 10)

            // Far apart, so a bound given to the wrong row or column changes what loads.
            let bounds = [key("busy"): 2, key("gone"): versions["gone"]!, key("calm"): Int64.max]
            let bounded = try await server.rows(keys, oldestBases: bounds)
            for key in keys {
                let expected = HistoryNeeds.trimmed(everything[key]!, oldestBase: bounds[key]!)
                #expect(Set(bounded[key]!.history) == Set(expected.history), "\(key.rowID)")
                #expect(bounded[key]!.cells == everything[key]!.cells)
            }
            #expect(bounded[key("gone")]!.deleted && bounded[key("gone")]!.history.count == listed["gone"]!.count)
            #expect(bounded[key("busy")]!.history.count == everything[key("busy")]!.history.count)
            #expect(bounded[key("calm")]!.history.count == 1 && everything[key("calm")]!.history.count == 2)
        }
    }
}
