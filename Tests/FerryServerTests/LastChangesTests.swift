@testable import FerryServer
import Testing

/// ``LastChanges``: bounds that are never below the file, and a client's
/// last applied id that is never ahead of it.
@Suite struct LastChangesTests {
    let alice = LastChanges.Client(userID: "alice", clientID: "a1")
    let bob = LastChanges.Client(userID: "bob", clientID: "b1")

    @Test func aScopeNotHeardOfStandsAtTheFloors() {
        var known = LastChanges(version: 40, horizon: 5, lastNotice: 3)
        #expect(known.lastChange(of: "user:bob", for: "bob") == (40, 3))
        known.committed(
            .init(
                version: 41, rowScopes: ["user:alice"], notices: [.init(userID: "bob", scope: "team:x")], lastNotice: 9, client: alice,
                lastApplied: 7))
        #expect(known.version == 41)
        #expect(known.lastChange(of: "user:alice", for: "alice") == (41, 3))
        #expect(known.lastChange(of: "team:x", for: "bob") == (40, 9))
        #expect(known.lastChange(of: "team:x", for: "alice") == (40, 3), "notices are the user's own")
        #expect(known.lastApplied(by: alice) == 7)
        #expect(known.lastApplied(by: bob) == nil)
    }

    @Test func aFullTableIsEmptiedAndItsFloorsRaised() {
        var known = LastChanges(version: 10, horizon: 0, lastNotice: 0, capacity: 2)
        known.committed(.init(version: 11, rowScopes: ["a"], client: alice, lastApplied: 1))
        known.committed(.init(version: 12, rowScopes: ["b"], client: alice, lastApplied: 2))
        #expect(known.lastChange(of: "a", for: "alice").row == 11)
        known.committed(.init(version: 13, rowScopes: ["c"], client: bob, lastApplied: 1))
        #expect(known.lastChange(of: "a", for: "alice").row == 13, "forgotten: bounded by the version when it was emptied")
        #expect(known.lastChange(of: "c", for: "alice").row == 13)
        #expect(known.lastChange(of: "z", for: "alice").row == 13)
    }

    /// Where a user's notices end in a scope, learned from a read, lets a
    /// device whose user had no notice lately past a floor set by others'.
    @Test func aReadTeachesWhereAUsersNoticesEnd() {
        var known = LastChanges(version: 10, horizon: 0, lastNotice: 50)
        let walk = LastChanges.Notices(userID: "alice", scope: "team:x")
        #expect(known.lastChange(of: "team:x", for: "alice").notice == 50)
        known.learn(.init(version: 10, client: alice, lastApplied: 0, notices: [walk: 4]), since: known.generation)
        #expect(known.lastChange(of: "team:x", for: "alice").notice == 4)
        known.learn(.init(version: 10, client: alice, lastApplied: 0, notices: [walk: 2]), since: known.generation)
        #expect(known.lastChange(of: "team:x", for: "alice").notice == 4, "a known walk keeps its figure")
        known.committed(.init(version: 10, notices: [walk], lastNotice: 51, client: bob, lastApplied: 1))
        #expect(known.lastChange(of: "team:x", for: "alice").notice == 51)
    }

    @Test func aReadIsLearnedOnlyWhenNoCommitCanBeNewer() {
        var known = LastChanges(version: 10, horizon: 0, lastNotice: 0, capacity: 2)
        let before = known.generation
        known.learn(.init(version: 10, client: bob, lastApplied: 4), since: before)
        #expect(known.lastApplied(by: bob) == 4)
        known.committed(.init(version: 11, client: alice, lastApplied: 9))
        known.learn(.init(version: 11, client: alice, lastApplied: 3), since: before)
        #expect(known.lastApplied(by: alice) == 9, "its own commit knows better")
        // A third client empties the table: a read from before then may predate a commit the table forgot.
        let third = LastChanges.Client(userID: "carol", clientID: "c1")
        known.committed(.init(version: 12, client: third, lastApplied: 1))
        #expect(known.lastApplied(by: alice) == nil)
        known.learn(.init(version: 12, client: alice, lastApplied: 3), since: before)
        #expect(known.lastApplied(by: alice) == nil)
        known.learn(.init(version: 12, client: alice, lastApplied: 9), since: known.generation)
        #expect(known.lastApplied(by: alice) == 9)
    }

    /// A read that saw a commit not yet recorded here teaches no last
    /// applied id: an answer from memory would pair it with older pages.
    @Test func aReadAheadOfTheCommitsRecordedTeachesNoLastApplied() {
        var known = LastChanges(version: 10, horizon: 0, lastNotice: 0)
        known.learn(.init(version: 11, client: alice, lastApplied: 5), since: known.generation)
        #expect(known.lastApplied(by: alice) == nil)
    }

    @Test func theHorizonOnlyMovesForward() {
        var known = LastChanges(version: 10, horizon: 4, lastNotice: 0)
        known.collected(horizon: 8)
        known.collected(horizon: 6)
        #expect(known.horizon == 8)
    }
}
