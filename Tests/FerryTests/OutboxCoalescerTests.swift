@testable import Ferry
import FerryProtocol
import Testing

@Suite struct OutboxCoalescerTests {
    var seq: Int64 = 0

    mutating func entry(
        _ row: String, _ op: OutboxEntry.Operation, _ columns: Set<String>? = nil,
        base: Int64? = nil, mutationID: Int64? = nil
    ) -> OutboxEntry {
        seq += 1
        return OutboxEntry(
            seq: seq, table: "note", rowID: row, operation: op, columns: columns,
            baseVersion: base, hlc: HLCTimestamp(wallMilliseconds: 1000, counter: UInt16(seq)),
            mutationID: mutationID)
    }

    @Test mutating func editsOfOneRowBecomeOneUpsertWithTheUnionOfColumns() {
        let entries = [
            entry("a", .update, ["title"], base: 3), entry("b", .update, ["body"], base: 1),
            entry("a", .update, ["body"], base: 3),
        ]
        let result = OutboxCoalescer.coalesce(entries)
        #expect(result.mutations.map(\.rowID) == ["a", "b"])
        #expect(result.mutations[0].columns == ["title", "body"])
        #expect(result.mutations[0].entrySeqs == [1, 3])
        // The base it was made on: the first edit's.
        #expect(result.mutations[0].baseVersion == 3)
        #expect(result.mutations[0].hlc == entries[2].hlc)
        #expect(result.discarded.isEmpty)
    }

    /// An edit made after a pull brought a newer version keeps its newer
    /// base in a mutation of its own; the earlier edit keeps its older one.
    @Test mutating func anEditOnANewerVersionStartsItsOwnMutation() {
        let result = OutboxCoalescer.coalesce([
            entry("a", .update, ["title"], base: 3), entry("a", .update, ["body"], base: 9),
            entry("a", .update, ["title"], base: 9),
        ])
        #expect(result.mutations.map(\.baseVersion) == [3, 9])
        #expect(result.mutations.map(\.columns) == [["title"], ["body", "title"]])
        #expect(result.mutations.map(\.entrySeqs) == [[1], [2, 3]])
    }

    @Test mutating func insertThenUpdatesIsAnUpsertOfEveryColumn() {
        let result = OutboxCoalescer.coalesce([entry("a", .insert), entry("a", .update, ["title"])])
        #expect(result.mutations.count == 1)
        #expect(result.mutations[0].operation == .upsert)
        #expect(result.mutations[0].columns == nil)
    }

    @Test mutating func aDeleteSupersedesEarlierEdits() {
        let result = OutboxCoalescer.coalesce([entry("a", .update, ["title"], base: 7), entry("a", .delete, base: 7)])
        #expect(result.mutations.count == 1)
        #expect(result.mutations[0].operation == .delete)
        #expect(result.mutations[0].entrySeqs == [1, 2])
    }

    @Test mutating func insertThenDeleteOfANeverPushedRowDisappears() {
        let result = OutboxCoalescer.coalesce([
            entry("a", .insert), entry("b", .update, ["x"], base: 1), entry("a", .update, ["title"]), entry("a", .delete),
        ])
        #expect(result.mutations.map(\.rowID) == ["b"])
        #expect(result.discarded == [1, 3, 4])
    }

    @Test mutating func aRowTheServerKnowsIsDeletedEvenIfReinsertedLocally() {
        // base 5: the server has seen this row, so the insert is a re-create.
        let result = OutboxCoalescer.coalesce([entry("a", .insert, base: 5), entry("a", .delete, base: 5)])
        #expect(result.mutations.map(\.operation) == [.delete])
    }

    @Test mutating func deleteThenInsertIsAReplacementOfEveryColumn() {
        let result = OutboxCoalescer.coalesce([entry("a", .delete, base: 2), entry("a", .insert, base: 2), entry("a", .update, ["t"])])
        #expect(result.mutations.count == 1)
        #expect(result.mutations[0].operation == .upsert)
        #expect(result.mutations[0].columns == nil)
    }

    @Test mutating func insertAfterAnnihilationStartsAFreshRow() {
        let result = OutboxCoalescer.coalesce([entry("a", .insert), entry("a", .delete), entry("a", .insert)])
        #expect(result.discarded == [1, 2])
        #expect(result.mutations.map(\.entrySeqs) == [[3]])
    }

    @Test mutating func frozenMutationsAreNeverMergedWithLaterEdits() {
        // Entry 1 was sent as mutation 9 (maybe applied); the later delete must go on its own.
        let result = OutboxCoalescer.coalesce([
            entry("a", .insert, mutationID: 9), entry("a", .update, ["t"]), entry("a", .delete),
        ])
        #expect(result.mutations.map(\.mutationID) == [9, nil])
        #expect(result.mutations.map(\.operation) == [.upsert, .delete])
        #expect(result.discarded.isEmpty)
    }

    @Test mutating func entriesFrozenTogetherStayTogether() {
        let result = OutboxCoalescer.coalesce([
            entry("a", .update, ["x"], mutationID: 3), entry("b", .update, ["y"], mutationID: 4), entry("a", .update, ["z"], mutationID: 3),
        ])
        #expect(result.mutations.map(\.mutationID) == [3, 4])
        #expect(result.mutations[0].columns == ["x", "z"])
    }

    @Test mutating func rowsOfDifferentTablesAreDifferentRows() {
        var other = entry("a", .update, ["t"], base: 1)
        other.table = "task"
        let result = OutboxCoalescer.coalesce([entry("a", .update, ["t"], base: 1), other])
        #expect(result.mutations.count == 2)
    }
}
