@testable import FerryServer
import FerryProtocol
import FerryTesting
import Testing

@Suite struct AppliedRunTests {
    @Test func aPushOfNewRowsIsOneRun() {
        let results = (1...500).map { MutationResult(mutationID: Int64(40 + $0), status: .applied, version: Int64(1_000 + $0)) }
        let (runs, others) = AppliedRun.split(results)
        #expect(runs == [AppliedRun(firstMutationID: 41, lastMutationID: 540, firstVersion: 1_001)])
        #expect(others.isEmpty)
        #expect(runs[0].result(for: 41) == results.first)
        #expect(runs[0].result(for: 540) == results.last)
        #expect(runs[0].result(for: 40) == nil)
        #expect(runs[0].result(for: 541) == nil)
    }

    @Test func aGapInTheVersionsOrAnotherResultStartsANewRun() {
        let conflict = Conflict(kind: .column, column: "t", base: .text("a"), local: .text("b"), server: .text("c"), resolution: .keptServer)
        let results = [
            MutationResult(mutationID: 1, status: .applied, version: 10),
            MutationResult(mutationID: 2, status: .applied, version: 11),
            // Another push's versions were taken in between.
            MutationResult(mutationID: 3, status: .applied, version: 15),
            MutationResult(mutationID: 4, status: .merged, version: 16),
            MutationResult(mutationID: 5, status: .applied, version: 17),
            MutationResult(mutationID: 6, status: .conflict, version: 18, conflicts: [conflict]),
            MutationResult(mutationID: 7, status: .rejected, reason: "no"),
            // Applied without a row (a delete of a row the server never had).
            MutationResult(mutationID: 8, status: .applied),
            // An unchanged row keeps its older version.
            MutationResult(mutationID: 9, status: .applied, version: 4),
            MutationResult(mutationID: 10, status: .applied, version: 5),
        ]
        let (runs, others) = AppliedRun.split(results)
        #expect(
            runs == [
                AppliedRun(firstMutationID: 1, lastMutationID: 2, firstVersion: 10),
                AppliedRun(firstMutationID: 3, lastMutationID: 3, firstVersion: 15),
                AppliedRun(firstMutationID: 5, lastMutationID: 5, firstVersion: 17),
                AppliedRun(firstMutationID: 9, lastMutationID: 10, firstVersion: 4),
            ])
        #expect(others.map(\.mutationID) == [4, 6, 7, 8])
        #expect(Self.rebuilt(runs, others, ids: 1...10) == results)
        for other in others { #expect(runs.allSatisfy { $0.result(for: other.mutationID) == nil }) }
    }

    /// Any sequence of results comes back exactly from its runs and the rest.
    @Test(arguments: 0..<50) func splittingLosesNothing(seed: Int) {
        var random = SplitMix64(mixing: UInt64(seed))
        var version = Int64.random(in: 0...100, using: &random)
        var results: [MutationResult] = []
        let count = Int64.random(in: 1...200, using: &random)
        for id in 1...count {
            version += Int64.random(in: 0...9, using: &random) < 8 ? 1 : Int64.random(in: -3...5, using: &random)
            switch Int.random(in: 0..<10, using: &random) {
            case 0: results.append(MutationResult(mutationID: id, status: .merged, version: version))
            case 1: results.append(MutationResult(mutationID: id, status: .rejected, reason: "r\(id)"))
            case 2: results.append(MutationResult(mutationID: id, status: .applied))
            default: results.append(MutationResult(mutationID: id, status: .applied, version: version))
            }
        }
        let (runs, others) = AppliedRun.split(results)
        #expect(Self.rebuilt(runs, others, ids: 1...count) == results)
        // Runs never overlap, and hold only ids no other result answers.
        for (earlier, later) in zip(runs, runs.dropFirst()) { #expect(earlier.lastMutationID < later.firstMutationID) }
        #expect(runs.map { Int($0.lastMutationID - $0.firstMutationID + 1) }.reduce(0, +) + others.count == results.count)
        for other in others { #expect(runs.allSatisfy { $0.result(for: other.mutationID) == nil }) }
    }

    @Test func aReplayAnswersARunsIDsAsTheyWereAnswered() throws {
        let plan = PushPlan(
            lastAppliedMutationID: 12, version: 30, results: [], replayedIDs: [9, 10, 11, 12], rows: [:], overwritten: [:], conflicts: [],
            rejections: [])
        let receipt = try plan.receipt(
            recorded: [11: StoreCoding.resultJSON(MutationResult(mutationID: 11, status: .merged, version: 22))],
            runs: [AppliedRun(firstMutationID: 8, lastMutationID: 10, firstVersion: 19)])
        #expect(
            receipt.response.results == [
                MutationResult(mutationID: 9, status: .applied, version: 20, replayed: true),
                MutationResult(mutationID: 10, status: .applied, version: 21, replayed: true),
                MutationResult(mutationID: 11, status: .merged, version: 22, replayed: true),
                // Collected: acknowledged as plainly applied.
                MutationResult(mutationID: 12, status: .applied, replayed: true),
            ])
    }

    private static func rebuilt(_ runs: [AppliedRun], _ others: [MutationResult], ids: ClosedRange<Int64>) -> [MutationResult] {
        let byID = Dictionary(uniqueKeysWithValues: others.map { ($0.mutationID, $0) })
        return ids.compactMap { id in byID[id] ?? runs.lazy.compactMap { $0.result(for: id) }.first }
    }
}
