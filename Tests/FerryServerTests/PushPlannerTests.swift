@testable import FerryServer
import FerryProtocol
import Testing

/// ARCHITECTURE.md server semantic 1 and the validation hook, on the pure planner.
@Suite struct PushPlannerTests {
    static let now: Int64 = 1_700_000_000_000

    static func mutation(_ id: Int64, row: String = "r", title: String = "t", at ms: Int64 = now) -> Mutation {
        Mutation(
            mutationID: id, table: "note", rowID: row, scope: "user:a", operation: .upsert,
            columns: ["title": .text(title)], baseVersion: nil, hlc: HLCTimestamp(wallMilliseconds: ms, counter: 0)
        )
    }

    static func plan(_ mutations: [Mutation], lastApplied: Int64 = 0, planner: PushPlanner = PushPlanner(tables: ServerTables(), maxClockDriftMilliseconds: 60_000)) throws -> PushPlan {
        try planner.plan(userID: "a", clientID: "c", mutations: mutations, lastApplied: lastApplied, rows: [:], version: 10, nowMilliseconds: now)
    }

    @Test func freshMutationsGetConsecutiveVersions() throws {
        let plan = try Self.plan([Self.mutation(1, row: "x"), Self.mutation(2, row: "y"), Self.mutation(3, row: "x", title: "u")])
        #expect(plan.lastAppliedMutationID == 3)
        #expect(plan.version == 13)
        #expect(plan.results.map(\.version) == [11, 12, 13])
        #expect(plan.rows[RowKey(scope: "user:a", table: "note", rowID: "x")]?.values == ["title": "u"])
    }

    @Test func replayedIDsAreAcknowledgedWithoutEffect() throws {
        let plan = try Self.plan([Self.mutation(4), Self.mutation(5), Self.mutation(6)], lastApplied: 5)
        #expect(plan.replayedIDs == [4, 5])
        #expect(plan.results.map(\.mutationID) == [6])
        #expect(plan.lastAppliedMutationID == 6)
    }

    @Test(arguments: [[Int64(2)], [1, 3], [7]])
    func aGapIsRefused(ids: [Int64]) {
        #expect(throws: PushPlanner.Refusal.self) {
            try Self.plan(ids.map { Self.mutation($0) }, lastApplied: ids == [7] ? 5 : 0)
        }
    }

    @Test func stampsTooFarAheadAreRejectedForLastWriteWinsOnly() throws {
        let ahead = Self.mutation(1, at: Self.now + 61_000)
        let plan = try Self.plan([ahead, Self.mutation(2, at: Self.now + 59_000)])
        #expect(plan.results.map(\.status) == [.rejected, .applied])
        #expect(plan.results[0].reason?.contains("ahead of the server") == true)
        #expect(plan.lastAppliedMutationID == 2, "a rejection still advances the last applied id")

        let serverWins = PushPlanner(tables: ServerTables(defaultRule: TableRule(policy: .serverWins)), maxClockDriftMilliseconds: 60_000)
        #expect(try Self.plan([ahead], planner: serverWins).results.map(\.status) == [.applied])
    }

    @Test func validatorRejectsWithReasonAndIsRecorded() throws {
        let validator = MutationValidator { proposed in
            proposed.mutation.columns["title"] == "" ? .reject(reason: "a note needs a title") : .accept
        }
        let planner = PushPlanner(tables: ServerTables(rules: ["note": TableRule(validator: validator)]), maxClockDriftMilliseconds: 60_000)
        let plan = try Self.plan([Self.mutation(1, title: ""), Self.mutation(2, row: "s")], planner: planner)
        #expect(plan.results.map(\.status) == [.rejected, .applied])
        #expect(plan.results[0].reason == "a note needs a title")
        #expect(plan.rejections.map(\.reason) == ["a note needs a title"])
        #expect(plan.lastAppliedMutationID == 2)
        #expect(plan.rows.keys.map(\.rowID) == ["s"])
    }

    @Test func aBaseTheServerNeverIssuedIsRejected() throws {
        let key = RowKey(scope: "user:a", table: "note", rowID: "r")
        let row = StoredRow(version: 4, deleted: false, cells: [:], clientID: "a:other")
        var mutation = Self.mutation(1)
        mutation.baseVersion = 5
        let plan = try PushPlanner(tables: ServerTables(), maxClockDriftMilliseconds: 60_000)
            .plan(userID: "a", clientID: "c", mutations: [mutation], lastApplied: 0, rows: [key: row], version: 10, nowMilliseconds: Self.now)
        #expect(plan.results.map(\.status) == [.rejected])
        #expect(plan.rows.isEmpty)
    }

    @Test func theSameClientIDUnderAnotherUserIsAnotherWriter() throws {
        let key = RowKey(scope: "team:x", table: "note", rowID: "r")
        let planner = PushPlanner(tables: ServerTables(defaultRule: TableRule(policy: .serverWins)), maxClockDriftMilliseconds: 60_000)
        var first = Self.mutation(1)
        first.scope = "team:x"
        let created = try planner.plan(userID: "a", clientID: "c", mutations: [first], lastApplied: 0, rows: [:], version: 0, nowMilliseconds: Self.now)
        var second = Self.mutation(1, title: "other")
        second.scope = "team:x"
        second.baseVersion = 0
        let plan = try planner.plan(userID: "b", clientID: "c", mutations: [second], lastApplied: 0, rows: created.rows, version: 1, nowMilliseconds: Self.now)
        #expect(plan.results.map(\.status) == [.conflict])
        #expect(plan.rows[key] == nil, "server wins: b's stale edit must not overwrite a's value")
    }

    /// A push that overrode its own user's value elsewhere names, in its
    /// reply's conflict, the notice that user's other devices get; a notice
    /// for another user is not named (its conflict is that user's).
    @Test func aReplyConflictNamesTheNoticeOfTheSameLossForItsOwnUser() {
        let key = RowKey(scope: "team:x", table: "note", rowID: "n1")
        func conflict(_ column: String) -> Conflict {
            Conflict(kind: .column, column: column, base: .text("b"), local: .text("l"), server: .text("s"), resolution: .keptLocal)
        }
        func notice(_ user: String, _ column: String) -> PushPlan.RecordedNotice {
            PushPlan.RecordedNotice(
                key: key, mutationID: 7, userID: user, byUserID: "alice", byClientID: "phone",
                conflict: conflict(column), row: nil, policy: .lastWriteWins, version: 11)
        }
        var plan = PushPlan(
            lastAppliedMutationID: 7, version: 11,
            results: [MutationResult(mutationID: 7, status: .merged, version: 11, conflicts: [conflict("title"), conflict("body")])],
            replayedIDs: [], rows: [:], overwritten: [:],
            conflicts: [
                PushPlan.RecordedConflict(key: key, mutationID: 7, version: 11, conflict: conflict("title")),
                PushPlan.RecordedConflict(key: key, mutationID: 7, version: 11, conflict: conflict("body")),
            ],
            rejections: [], notices: [notice("alice", "title"), notice("bob", "body")]
        )
        plan.linkNotices(ids: [41, 42]) { NoticeCursor.id($0, epoch: "e1") }
        #expect(plan.results[0].conflicts.map(\.noticeID) == ["e1/41", nil])
        #expect(plan.conflicts.map(\.conflict.noticeID) == ["e1/41", nil])
    }

    /// A notice's public id names its store id (and the SQLite store's
    /// generation); an id of another epoch, or a made-up one, names none.
    @Test func noticeIDsParseBackOnlyInTheirEpoch() {
        #expect(NoticeCursor.parse(id: NoticeCursor.id(17, epoch: "e1"), epoch: "e1")! == ("", 17))
        #expect(NoticeCursor.parse(id: NoticeCursor.id(17, epoch: "e1", generation: "g-2.x"), epoch: "e1")! == ("g-2.x", 17))
        #expect(NoticeCursor.parse(id: NoticeCursor.id(17, epoch: "e1"), epoch: "e2") == nil)
        for made in ["e1", "e1/", "e1/x", "e1/g.", "e1/g.x", ""] { #expect(NoticeCursor.parse(id: made, epoch: "e1") == nil) }
    }
}
