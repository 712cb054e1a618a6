@testable import FerryServer
import FerryProtocol
import Testing

/// Which scopes a push's reply names as holding only its own rows
/// (`PushCoverage`), on the pure planner's plans.
@Suite struct PushCoverageTests {
    static func mutation(_ id: Int64, scope: String, row: String = "r", title: String = "t") -> Mutation {
        Mutation(
            mutationID: id, table: "note", rowID: row, scope: scope, operation: .upsert,
            columns: ["title": .text(title)], baseVersion: nil, hlc: HLCTimestamp(wallMilliseconds: PushPlannerTests.now, counter: 0)
        )
    }

    static func scopes(_ mutations: [Mutation], lastApplied: Int64 = 0, planner: PushPlanner = PushPlanner(tables: ServerTables(), maxClockDriftMilliseconds: 60_000)) throws -> Set<String> {
        let plan = try planner.plan(
            userID: "a", clientID: "c", mutations: mutations, lastApplied: lastApplied, rows: [:], version: 10,
            nowMilliseconds: PushPlannerTests.now)
        return PushCoverage.scopes(of: plan, request: PushRequest(clientID: "c", mutations: mutations))
    }

    @Test func everyScopeWrittenAsSentIsCovered() throws {
        let scopes = try Self.scopes([Self.mutation(1, scope: "user:a"), Self.mutation(2, scope: "team:x", row: "s")])
        #expect(scopes == ["user:a", "team:x"])
    }

    @Test func aScopeWithARejectedMutationIsNot() throws {
        let validator = MutationValidator { $0.mutation.columns["title"] == "" ? .reject(reason: "a title") : .accept }
        let planner = PushPlanner(tables: ServerTables(rules: ["note": TableRule(validator: validator)]), maxClockDriftMilliseconds: 60_000)
        let mutations = [Self.mutation(1, scope: "user:a"), Self.mutation(2, scope: "team:x", title: ""), Self.mutation(3, scope: "team:x", row: "s")]
        #expect(try Self.scopes(mutations, planner: planner) == ["user:a"])
    }

    @Test func replaysWriteNothingSoCoverNothing() throws {
        #expect(try Self.scopes([Self.mutation(1, scope: "user:a"), Self.mutation(2, scope: "user:a")], lastApplied: 2).isEmpty)
    }

    /// A scope with no row before the push says so: its first pull would bring the push's rows alone.
    @Test func aRangeStartsAtTheScopesLastChangeAndNeverBeforeTheHorizon() {
        func cursor(_ scope: String, _ position: Int64) -> String { "\(scope)@\(position)" }
        let last: [String: Int64] = ["a": 7, "b": 2]
        let covered = PushCoverage.covered(["b", "a", "c"], lastBefore: { last[$0] }, horizon: 4, end: 12, cursor: cursor)
        #expect(
            covered == [
                PushResponse.CoveredScope(scope: "a", after: "a@7", cursor: "a@12"),
                PushResponse.CoveredScope(scope: "b", after: "b@4", cursor: "b@12"),
                PushResponse.CoveredScope(scope: "c", after: "c@4", cursor: "c@12", emptyBefore: true),
            ])
        #expect(PushCoverage.covered(["a"], lastBefore: { _ in 12 }, horizon: 0, end: 12, cursor: cursor).isEmpty)
    }
}
