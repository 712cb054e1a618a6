@testable import FerryServer
import FerryProtocol
import Foundation
import Testing

/// A replay is told from a different edit under the same id
/// (``MutationDigest``): the planner refuses the second, on the pure types.
@Suite struct MutationDigestTests {
    static let planner = PushPlanner(tables: ServerTables(), maxClockDriftMilliseconds: 60_000)

    static func plan(_ mutations: [Mutation], lastApplied: Int64, recorded: [Mutation]) throws(PushPlanner.Refusal) -> PushPlan {
        try planner.plan(
            userID: "a", clientID: "c", mutations: mutations, lastApplied: lastApplied, rows: [:], version: 10,
            recorded: Dictionary(uniqueKeysWithValues: recorded.map { ($0.mutationID, MutationDigest($0)) }),
            nowMilliseconds: PushPlannerTests.now)
    }

    @Test func everyPartOfAMutationChangesItsDigestButItsID() {
        let base = Mutation(
            mutationID: 4, table: "note", rowID: "r", scope: "user:a", operation: .upsert,
            columns: ["title": .text("a"), "n": .integer(1), "x": .real(1.5), "b": .blob(Data([1, 2])), "z": .null],
            baseVersion: 7, hlc: HLCTimestamp(wallMilliseconds: 1_700_000_000_000, counter: 3))
        var sameButID = base
        sameButID.mutationID = 9
        #expect(MutationDigest(sameButID) == MutationDigest(base))
        let changes: [(inout Mutation) -> Void] = [
            { $0.table = "task" }, { $0.rowID = "s" }, { $0.scope = "team:x" }, { $0.operation = .delete },
            { $0.baseVersion = nil }, { $0.baseVersion = 8 }, { $0.hlc = HLCTimestamp(rawValue: $0.hlc.rawValue + 1) },
            { $0.columns["title"] = .text("b") }, { $0.columns["n"] = .real(1) }, { $0.columns["x"] = .real(1.25) },
            { $0.columns["b"] = .blob(Data([1, 3])) }, { $0.columns["z"] = .text("") }, { $0.columns["new"] = .null },
            { $0.columns["title"] = nil },
            // Bytes moved from one name or value into the next do not hash alike.
            { $0.columns = ["title": .text("ab"), "n": .integer(1)] },
        ]
        var seen: Set<MutationDigest> = [MutationDigest(base)]
        for change in changes {
            var changed = base
            change(&changed)
            #expect(seen.insert(MutationDigest(changed)).inserted, "\(changed) hashes like another")
        }
        #expect(
            MutationDigest(Mutation(mutationID: 1, table: "ab", rowID: "c", scope: "s", operation: .delete, baseVersion: nil, hlc: .zero))
                != MutationDigest(Mutation(mutationID: 1, table: "a", rowID: "bc", scope: "s", operation: .delete, baseVersion: nil, hlc: .zero)))
    }

    /// Digests are stored: a server upgraded under a device that replays a
    /// push must hash it as the server before it did. The value was worked
    /// out apart from this code (FNV-1a 64 over the bytes the digest names).
    @Test func aDigestIsTheSameFromReleaseToRelease() {
        let mutation = Mutation(
            mutationID: 4, table: "note", rowID: "r", scope: "user:a", operation: .upsert,
            columns: ["title": .text("a"), "n": .integer(1), "x": .real(1.5), "b": .blob(Data([1, 2])), "z": .null],
            baseVersion: 7, hlc: HLCTimestamp(wallMilliseconds: 1_700_000_000_000, counter: 3))
        #expect(MutationDigest(mutation).rawValue == -6_129_399_086_487_692_900)
    }

    @Test func digestsPackedAreUnpackedByID() {
        let digests = [Int64.min, -1, 0, 1, .max].map(MutationDigest.init(rawValue:))
        let packed = MutationDigest.packed(digests)
        #expect(packed.count == 40)
        let unpacked = MutationDigest.unpacked(packed + [7], firstID: 11)
        #expect(unpacked == Dictionary(uniqueKeysWithValues: zip(11...15, digests)))
    }

    @Test func theSameMutationsSentAgainAreAReplay() throws {
        let applied = (1...3).map { PushPlannerTests.mutation($0, row: "r\($0)") }
        let plan = try Self.plan(applied + [PushPlannerTests.mutation(4)], lastApplied: 3, recorded: applied)
        #expect(plan.replayedIDs == [1, 2, 3])
        #expect(plan.results.map(\.mutationID) == [4])
        #expect(plan.digests == [MutationDigest(PushPlannerTests.mutation(4))])
    }

    /// A second copy of the database sends its own edits under ids the
    /// first applied: refused, naming the first that differs, after the
    /// ones both copies hold.
    @Test func aDifferentEditUnderAnAppliedIDIsRefusedAtTheFirstThatDiffers() {
        let applied = (1...3).map { PushPlannerTests.mutation($0, row: "r\($0)") }
        let copy = [applied[0], PushPlannerTests.mutation(2, row: "mine"), PushPlannerTests.mutation(3, row: "r3", title: "mine")]
        #expect(throws: PushPlanner.Refusal.differentReplay(lastApplied: 3, mutationID: 2)) {
            try Self.plan(copy + [PushPlannerTests.mutation(4)], lastApplied: 3, recorded: applied)
        }
    }

    /// Ids applied before digests were kept, or whose digests were
    /// collected, are replays as before.
    @Test func anIDWithNoDigestIsAReplay() throws {
        let plan = try Self.plan([PushPlannerTests.mutation(2, title: "other")], lastApplied: 3, recorded: [])
        #expect(plan.replayedIDs == [2])
    }
}
