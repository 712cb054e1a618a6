@testable import FerryServer
import FerryProtocol
import Testing

/// ARCHITECTURE.md server semantics 3 and 4, on the pure merge.
@Suite struct RowMergeTests {
    static let alice = "client-a"
    static let bob = "client-b"

    static func stamp(_ ms: Int64) -> HLCTimestamp { HLCTimestamp(wallMilliseconds: ms, counter: 0) }

    static func upsert(_ columns: [String: ColumnValue], base: Int64?, at ms: Int64 = 1000) -> Mutation {
        Mutation(mutationID: 1, table: "note", rowID: "r", scope: "user:a", operation: .upsert, columns: columns, baseVersion: base, hlc: stamp(ms))
    }

    static func delete(base: Int64?) -> Mutation {
        Mutation(mutationID: 1, table: "note", rowID: "r", scope: "user:a", operation: .delete, baseVersion: base, hlc: stamp(1000))
    }

    /// A row created at version 1 by alice, then bob changed `title` at version 2 (stamp 2000).
    static var row: StoredRow {
        var row = RowMerge.merge(upsert(["title": "draft", "body": "x"], base: nil), from: alice, into: nil, policy: .lastWriteWins, version: 1).row!
        row = RowMerge.merge(upsert(["title": "bob's"], base: 1, at: 2000), from: bob, into: row, policy: .lastWriteWins, version: 2).row!
        return row
    }

    @Test func editsToDifferentColumnsBothApply() {
        let outcome = RowMerge.merge(Self.upsert(["body": "alice's body"], base: 1), from: Self.alice, into: Self.row, policy: .serverWins, version: 3)
        #expect(outcome.status == .merged)
        #expect(outcome.conflicts.isEmpty)
        #expect(outcome.row?.values == ["title": "bob's", "body": "alice's body"])
        #expect(outcome.row?.cells["body"]?.version == 3)
        #expect(outcome.row?.cells["title"]?.version == 2)
        #expect(outcome.row?.version == 3)
    }

    @Test func sameValueIsNoConflict() {
        let outcome = RowMerge.merge(Self.upsert(["title": "bob's"], base: 1), from: Self.alice, into: Self.row, policy: .manual, version: 3)
        #expect(outcome.conflicts.isEmpty)
        #expect(!outcome.changed)
    }

    @Test(arguments: [
        // policy, alice's stamp, value kept, resolution
        (ConflictPolicy.lastWriteWins, Int64(3000), ColumnValue.text("alice's"), Conflict.Resolution.keptLocal),
        (.lastWriteWins, 1500, "bob's", .keptServer),
        (.serverWins, 3000, "bob's", .keptServer),
        (.clientWins, 1500, "alice's", .keptLocal),
        (.manual, 3000, "bob's", .unresolved),
    ])
    func sameColumnFollowsPolicy(policy: ConflictPolicy, stamp: Int64, kept: ColumnValue, resolution: Conflict.Resolution) {
        let outcome = RowMerge.merge(
            Self.upsert(["title": "alice's", "body": "new body"], base: 1, at: stamp),
            from: Self.alice, into: Self.row, policy: policy, version: 3
        )
        #expect(outcome.status == .conflict)
        #expect(outcome.row?.values["title"] == kept)
        #expect(outcome.row?.values["body"] == "new body", "the other column applies whatever the policy")
        // Whatever was discarded is recorded with base, local and server values.
        #expect(
            outcome.conflicts == [
                Conflict(kind: .column, column: "title", base: "draft", local: "alice's", server: "bob's", resolution: resolution)
            ])
    }

    @Test func aClientNeverConflictsWithItsOwnEarlierEdit() {
        // Bob edits title again without having pulled since his first edit (base 1).
        let outcome = RowMerge.merge(Self.upsert(["title": "bob's second"], base: 1, at: 2500), from: Self.bob, into: Self.row, policy: .manual, version: 3)
        #expect(outcome.status == .applied)
        #expect(outcome.row?.values["title"] == "bob's second")
    }

    @Test func deleteWinsOverConcurrentUpdateAndRecordsIt() {
        let outcome = RowMerge.merge(Self.delete(base: 1), from: Self.alice, into: Self.row, policy: .clientWins, version: 3)
        #expect(outcome.status == .conflict)
        #expect(outcome.row?.deleted == true)
        #expect(outcome.row?.version == 3)
        #expect(
            outcome.conflicts == [
                Conflict(kind: .deleteOverrodeUpdate, column: "title", base: "draft", local: nil, server: "bob's", resolution: .keptLocal)
            ])
    }

    @Test func updateOfDeletedRowLosesAndIsRecorded() {
        let deleted = RowMerge.merge(Self.delete(base: 2), from: Self.bob, into: Self.row, policy: .lastWriteWins, version: 3).row!
        // Alice edited at base 2 with a later stamp and clientWins: the delete still wins.
        let outcome = RowMerge.merge(Self.upsert(["body": "late"], base: 2, at: 9000), from: Self.alice, into: deleted, policy: .clientWins, version: 4)
        #expect(outcome.status == .conflict)
        #expect(!outcome.changed)
        #expect(outcome.row == deleted)
        #expect(
            outcome.conflicts == [
                Conflict(kind: .updateLostToDelete, column: "body", base: "x", local: "late", server: nil, resolution: .keptServer)
            ])
    }

    @Test func staleClientCannotResurrectButAClientThatSawTheDeleteCanRecreate() {
        let deleted = RowMerge.merge(Self.delete(base: 2), from: Self.bob, into: Self.row, policy: .lastWriteWins, version: 3).row!
        let stale = RowMerge.merge(Self.upsert(["title": "back"], base: nil), from: Self.alice, into: deleted, policy: .clientWins, version: 4)
        #expect(stale.row?.deleted == true)
        let recreated = RowMerge.merge(Self.upsert(["title": "back"], base: 3), from: Self.alice, into: deleted, policy: .lastWriteWins, version: 4)
        #expect(recreated.status == .applied)
        #expect(recreated.row?.deleted == false)
        // The column the re-creation does not name keeps the value it held when deleted.
        #expect(recreated.row?.values == ["title": "back", "body": "x"])
    }

    @Test func rowGoneAfterGarbageCollectionStaysGoneForAStaleClient() {
        // The tombstone was collected: no row, but the client's base says it saw one.
        // The tombstone was at version 3, so the horizon is 3.
        let outcome = RowMerge.merge(Self.upsert(["title": "back"], base: 2), from: Self.alice, into: nil, policy: .clientWins, version: 4, horizon: 3)
        #expect(outcome.row == nil)
        #expect(outcome.status == .conflict)
        let sawDelete = RowMerge.merge(Self.upsert(["title": "back"], base: 3), from: Self.alice, into: nil, policy: .clientWins, version: 4, horizon: 3)
        #expect(sawDelete.row?.values == ["title": "back"])
    }

    @Test func deleteOfMissingOrDeletedRowChangesNothing() {
        #expect(RowMerge.merge(Self.delete(base: nil), from: Self.alice, into: nil, policy: .lastWriteWins, version: 1).changed == false)
        let deleted = RowMerge.merge(Self.delete(base: 2), from: Self.bob, into: Self.row, policy: .lastWriteWins, version: 3).row!
        let again = RowMerge.merge(Self.delete(base: 1), from: Self.alice, into: deleted, policy: .lastWriteWins, version: 4)
        #expect(!again.changed)
        #expect(again.status == .applied)
    }
}
