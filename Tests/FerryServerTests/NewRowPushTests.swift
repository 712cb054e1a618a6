@testable import FerryServer
import FerryProtocol
import Testing

/// A push planned without reading its rows (`NewRowPush`): which pushes try
/// it, and which plans their inserts fully check.
@Suite struct NewRowPushTests {
    static func mutation(_ id: Int64, row: String, operation: Mutation.Operation = .upsert, base: Int64? = nil, title: String = "t") -> Mutation {
        Mutation(
            mutationID: id, table: "note", rowID: row, scope: "user:a", operation: operation,
            columns: operation == .delete ? [:] : ["title": .text(title)], baseVersion: base,
            hlc: HLCTimestamp(wallMilliseconds: PushPlannerTests.now, counter: 0))
    }

    @Test func onlyAPushOfRowsItsDeviceMadeIsLikelyNew() {
        #expect(NewRowPush.isLikely([Self.mutation(1, row: "a"), Self.mutation(2, row: "b"), Self.mutation(3, row: "a")]))
        #expect(!NewRowPush.isLikely([]), "nothing to insert checks nothing")
        #expect(!NewRowPush.isLikely([Self.mutation(1, row: "a"), Self.mutation(2, row: "b", base: 4)]), "a base: the device saw it stored")
        #expect(!NewRowPush.isLikely([Self.mutation(1, row: "a"), Self.mutation(2, row: "b", operation: .delete)]))
    }

    @Test func aPlanThatWritesEveryRowIsChecked() throws {
        let fresh = [Self.mutation(1, row: "a"), Self.mutation(2, row: "b"), Self.mutation(3, row: "a", title: "u")]
        let plan = try PushPlannerTests.plan(fresh)
        #expect(NewRowPush.isChecked(plan, fresh: fresh))
    }

    @Test func aRejectedRowIsNotChecked() throws {
        let validator = MutationValidator { proposed in
            proposed.mutation.rowID == "b" ? .reject(reason: "no b") : .accept
        }
        let planner = PushPlanner(tables: ServerTables(rules: ["note": TableRule(validator: validator)]), maxClockDriftMilliseconds: 60_000)
        let fresh = [Self.mutation(1, row: "a"), Self.mutation(2, row: "b")]
        let plan = try PushPlannerTests.plan(fresh, planner: planner)
        #expect(plan.results.map(\.status) == [.applied, .rejected])
        #expect(!NewRowPush.isChecked(plan, fresh: fresh), "b was assumed absent and nothing wrote it")
    }
}
