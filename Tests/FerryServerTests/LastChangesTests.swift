@testable import FerryServer
import Testing

/// ``LastChanges``: bounds that are never below the file, and a client's
/// last applied id that is never ahead of it.
@Suite struct LastChangesTests {
    let alice = LastChanges.Client(userID: "alice", clientID: "a1")
    let bob = LastChanges.Client(userID: "bob", clientID: "b1")

    @Test func aScopeNotHeardOfStandsAtTheFloors() {
        var known = LastChanges(version: 40, horizon: 5, lastNotice: 3)
        #expect(known.lastChange(of: "user:bob") == (40, 3))
        known.committed(.init(version: 41, rowScopes: ["user:alice"], noticeScopes: ["team:x"], lastNotice: 9, client: alice, lastApplied: 7))
        #expect(known.version == 41)
        #expect(known.lastChange(of: "user:alice") == (41, 3))
        #expect(known.lastChange(of: "team:x") == (40, 9))
        #expect(known.lastChange(of: "user:bob") == (40, 3))
        #expect(known.lastApplied(by: alice) == 7)
        #expect(known.lastApplied(by: bob) == nil)
    }

    @Test func aFullTableIsEmptiedAndItsFloorsRaised() {
        var known = LastChanges(version: 10, horizon: 0, lastNotice: 0, capacity: 2)
        known.committed(.init(version: 11, rowScopes: ["a"], client: alice, lastApplied: 1))
        known.committed(.init(version: 12, rowScopes: ["b"], client: alice, lastApplied: 2))
        #expect(known.lastChange(of: "a").row == 11)
        known.committed(.init(version: 13, rowScopes: ["c"], client: bob, lastApplied: 1))
        #expect(known.lastChange(of: "a").row == 13, "forgotten: bounded by the version when it was emptied")
        #expect(known.lastChange(of: "c").row == 13)
        #expect(known.lastChange(of: "z").row == 13)
    }

    @Test func aReadIsLearnedOnlyWhenNoCommitCanBeNewer() {
        var known = LastChanges(version: 10, horizon: 0, lastNotice: 0, capacity: 2)
        let before = known.clientTableGeneration
        known.learn(lastApplied: 4, of: bob, since: before)
        #expect(known.lastApplied(by: bob) == 4)
        known.committed(.init(version: 11, client: alice, lastApplied: 9))
        known.learn(lastApplied: 3, of: alice, since: before)
        #expect(known.lastApplied(by: alice) == 9, "its own commit knows better")
        // A third client empties the table: a read from before then may predate a commit the table forgot.
        let third = LastChanges.Client(userID: "carol", clientID: "c1")
        known.committed(.init(version: 12, client: third, lastApplied: 1))
        #expect(known.lastApplied(by: alice) == nil)
        known.learn(lastApplied: 3, of: alice, since: before)
        #expect(known.lastApplied(by: alice) == nil)
        known.learn(lastApplied: 9, of: alice, since: known.clientTableGeneration)
        #expect(known.lastApplied(by: alice) == 9)
    }

    @Test func theHorizonOnlyMovesForward() {
        var known = LastChanges(version: 10, horizon: 4, lastNotice: 0)
        known.collected(horizon: 8)
        known.collected(horizon: 6)
        #expect(known.horizon == 8)
    }
}
