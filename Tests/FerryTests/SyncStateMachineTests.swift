@testable import Ferry
import FerryProtocol
import Testing

/// Every path of ``SyncStateMachine``, driven directly: no socket, no file,
/// no sleeping.
@Suite struct SyncStateMachineTests {
    static let retry = RetryPolicy(initialDelay: .milliseconds(100), maximumDelay: .seconds(10), multiplier: 2, attemptsPerSync: 5)

    func machine(
        scopes: [String] = ["user:a"], batch: Int = 8, attempts: Int? = 5, poison: Int = 3, identityChecked: Bool = true,
        pushOnly: Bool = false
    ) -> SyncStateMachine {
        SyncStateMachine(
            settings: .init(
                scopes: scopes, pushBatchSize: batch, retry: Self.retry, attempts: attempts, poisonAttempts: poison, pushOnly: pushOnly),
            identityChecked: identityChecked, random: { 0.5 }
        )
    }

    /// A machine past the schema step, about to push.
    func pushing(_ machine: inout SyncStateMachine) -> SyncStateMachine.Action {
        #expect(machine.start() == .refetchGrownTables)
        return machine.handle(.tablesRefetched)
    }

    static let unavailable = SyncFailure.transient(retryAfter: nil)
    static let serverError = SyncFailure.serverError(status: 500, message: "boom")

    @Test func aQuietSyncChecksIdentityOncePushesPullsAndFinishes() {
        var m = machine(scopes: ["user:a", "team:b"], identityChecked: false)
        #expect(m.start() == .checkIdentity)
        #expect(m.handle(.identityChecked(renewed: false)) == .refetchGrownTables)
        #expect(m.handle(.tablesRefetched) == .push(limit: 8))
        #expect(m.handle(.nothingToPush) == .readBackRows)
        #expect(m.handle(.rowsReadBack) == .pull(["user:a", "team:b"]))
        // Scopes with more pages are pulled again, alone.
        #expect(m.handle(.pulled(asked: ["user:a", "team:b"], more: ["team:b"], renewed: false)) == .pull(["team:b"]))
        #expect(m.handle(.pulled(asked: ["team:b"], more: [], renewed: false)) == .finish(refusedScopes: []))
    }

    @Test func batchesGrowBackAfterSuccessUpToTheConfiguredSize() {
        var m = machine(batch: 8)
        #expect(pushing(&m) == .push(limit: 8))
        // Refused as malformed: narrow down to the culprit.
        #expect(m.handle(.pushFailed(size: 8, .refused(status: 400, message: "bad"))) == .push(limit: 4))
        #expect(m.handle(.pushFailed(size: 4, .refused(status: 413, message: "big"))) == .push(limit: 2))
        #expect(m.handle(.pushed(size: 2, renewed: false)) == .push(limit: 4))
        #expect(m.handle(.pushFailed(size: 4, .refused(status: 403, message: "no"))) == .push(limit: 2))
        #expect(m.handle(.pushFailed(size: 2, .refused(status: 403, message: "no"))) == .push(limit: 1))
        #expect(m.handle(.pushFailed(size: 1, .refused(status: 403, message: "no"))) == .setAside(reason: "HTTP 403: no"))
        #expect(m.handle(.setAside) == .push(limit: 1))
        #expect(m.handle(.pushed(size: 1, renewed: false)) == .push(limit: 2))
        #expect(m.handle(.pushed(size: 2, renewed: false)) == .push(limit: 4))
        #expect(m.handle(.pushed(size: 4, renewed: false)) == .push(limit: 8))
        #expect(m.handle(.pushed(size: 8, renewed: false)) == .push(limit: 8))
    }

    @Test func aGapRenumbersAndRepeatedGapsStop() {
        var m = machine()
        _ = pushing(&m)
        for _ in 0..<3 {
            #expect(m.handle(.pushFailed(size: 8, .gap(lastApplied: 4))) == .renumber(after: 4))
            #expect(m.handle(.renumbered) == .push(limit: 8))
        }
        #expect(m.handle(.pushFailed(size: 8, .gap(lastApplied: 4))) == .fail(.refused))
        // Progress clears the count.
        var n = machine()
        _ = pushing(&n)
        for _ in 0..<5 {
            #expect(n.handle(.pushFailed(size: 8, .gap(lastApplied: 4))) == .renumber(after: 4))
            #expect(n.handle(.renumbered) == .push(limit: 8))
            #expect(n.handle(.pushed(size: 8, renewed: false)) == .push(limit: 8))
        }
    }

    /// Another copy of the database pushed under its client id: a new
    /// identity, settling what came before the mutation that differs, then
    /// the push goes on; a third time in one sync stops it.
    @Test func aReusedClientIDRenewsTheIdentityAndGoesOnPushing() {
        var m = machine()
        #expect(pushing(&m) == .push(limit: 8))
        #expect(m.handle(.pushFailed(size: 8, .clientIDReused(differingMutationID: 5))) == .renewIdentity(appliedThrough: 4))
        #expect(m.handle(.renumbered) == .push(limit: 8))
        #expect(m.handle(.pushFailed(size: 8, .clientIDReused(differingMutationID: 1))) == .renewIdentity(appliedThrough: 0))
        #expect(m.handle(.renumbered) == .push(limit: 8))
        #expect(m.handle(.pushFailed(size: 8, .clientIDReused(differingMutationID: 1))) == .fail(.refused))
    }

    /// A copy behind the server with mutations already numbered sends only
    /// those first, for the server to compare; then batches grow back.
    @Test func aCopyBehindTheServerSendsWhatItHandedOutFirst() {
        var m = machine(identityChecked: false)
        #expect(m.start() == .checkIdentity)
        #expect(m.handle(.identityChecked(renewed: false, verifying: 3)) == .refetchGrownTables)
        #expect(m.handle(.tablesRefetched) == .push(limit: 3))
        #expect(m.handle(.pushed(size: 3, renewed: true)) == .push(limit: 3))
    }

    @Test func transientFailuresBackOffRestartTheCycleAndGiveUpAfterTheAttempts() {
        var m = machine(attempts: 3)
        _ = pushing(&m)
        // Attempt n waits a jittered share (0.5 here) of the growing cap; Retry-After is a floor.
        #expect(m.handle(.pushFailed(size: 8, Self.unavailable)) == .wait(.milliseconds(50)))
        #expect(m.handle(.waited) == .refetchGrownTables)
        #expect(m.handle(.tablesRefetched) == .push(limit: 8))
        #expect(m.handle(.pushFailed(size: 8, .transient(retryAfter: .seconds(7)))) == .wait(.seconds(7)))
        #expect(m.handle(.waited) == .refetchGrownTables)
        #expect(m.handle(.tablesRefetched) == .push(limit: 8))
        #expect(m.handle(.pushFailed(size: 8, Self.unavailable)) == .fail(.gaveUp(attempts: 3)))
    }

    /// A server's rate limit (429 with `Retry-After`) between requests that
    /// went through paces a long drain: it waits, and uses up no attempt.
    @Test func aRateLimitBetweenRequestsThatWentThroughPacesTheSyncWithoutUsingAnAttempt() {
        var m = machine(attempts: 2)
        _ = pushing(&m)
        let throttled = SyncFailure.transient(retryAfter: .seconds(1))
        for _ in 0..<10 {
            #expect(m.handle(.pushed(size: 8, renewed: false)) == .push(limit: 8))
            #expect(m.handle(.pushFailed(size: 8, throttled)) == .wait(.seconds(1)))
            #expect(m.handle(.waited) == .refetchGrownTables)
            #expect(m.handle(.tablesRefetched) == .push(limit: 8))
        }
        // Pulls count as progress too.
        #expect(m.handle(.nothingToPush) == .readBackRows)
        #expect(m.handle(.rowsReadBack) == .pull(["user:a"]))
        #expect(m.handle(.pulled(asked: ["user:a"], more: ["user:a"], renewed: false)) == .pull(["user:a"]))
        #expect(m.handle(.pullFailed(asked: ["user:a"], throttled, hasCursor: true, hasNoticeCursor: false)) == .wait(.seconds(1)))
        #expect(m.handle(.waited) == .refetchGrownTables)
        #expect(m.handle(.tablesRefetched) == .push(limit: 8))
        // Nothing through since the last wait: a server that only refuses is failing, and the sync gives up.
        #expect(m.handle(.pushFailed(size: 8, throttled)) == .wait(.seconds(1)))
        #expect(m.handle(.waited) == .refetchGrownTables)
        #expect(m.handle(.tablesRefetched) == .push(limit: 8))
        #expect(m.handle(.pushFailed(size: 8, throttled)) == .fail(.gaveUp(attempts: 2)))
    }

    @Test func theBackgroundLoopNeverGivesUp() {
        var m = machine(attempts: nil)
        _ = pushing(&m)
        for attempt in 0..<40 {
            guard case .wait(let delay) = m.handle(.pushFailed(size: 8, Self.unavailable)) else {
                Issue.record("attempt \(attempt) did not wait")
                return
            }
            #expect(delay <= .seconds(5))
            #expect(m.handle(.waited) == .refetchGrownTables)
            #expect(m.handle(.tablesRefetched) == .push(limit: 8))
        }
    }

    @Test func anUnauthorizedRequestRefreshesTheTokenOnce() {
        var m = machine()
        _ = pushing(&m)
        #expect(m.handle(.pushFailed(size: 8, .unauthorized)) == .refreshToken)
        #expect(m.handle(.tokenRefreshed(true)) == .refetchGrownTables)
        #expect(m.handle(.tablesRefetched) == .push(limit: 8))
        #expect(m.handle(.pushFailed(size: 8, .unauthorized)) == .fail(.unauthorized))

        var n = machine()
        _ = pushing(&n)
        #expect(n.handle(.pushFailed(size: 8, .unauthorized)) == .refreshToken)
        #expect(n.handle(.tokenRefreshed(false)) == .fail(.unauthorized))
    }

    @Test func aFailureOutsideTheNetworkStops() {
        var m = machine(identityChecked: false)
        #expect(m.start() == .checkIdentity)
        #expect(m.handle(.failed(.fatal)) == .fail(.fatal))
        var n = machine()
        _ = pushing(&n)
        #expect(n.handle(.nothingToPush) == .readBackRows)
        #expect(n.handle(.failed(.refused(status: 400, message: "bad row id"))) == .fail(.refused))
    }

    /// A poison mutation: the server fails on it (500) every time. The batch
    /// is narrowed to the head at once; alone it fails `poisonAttempts`
    /// times; an empty push shows the server answers others; it is set
    /// aside and the queue moves on.
    @Test func aMutationTheServerKeepsFailingOnIsSetAsideAfterItsAttempts() {
        var m = machine(attempts: 2, poison: 3)
        _ = pushing(&m)
        #expect(m.handle(.pushFailed(size: 8, Self.serverError)) == .wait(.milliseconds(50)))
        #expect(m.handle(.waited) == .push(limit: 1))
        #expect(m.handle(.pushFailed(size: 1, Self.serverError)) == .wait(.milliseconds(50)))
        #expect(m.handle(.waited) == .push(limit: 1))
        #expect(m.handle(.pushFailed(size: 1, Self.serverError)) == .wait(.milliseconds(100)))
        #expect(m.handle(.waited) == .push(limit: 1))
        // Alone failures do not use up the sync's attempts (2 here).
        #expect(m.handle(.pushFailed(size: 1, Self.serverError)) == .probe)
        #expect(m.headFailures == 3)
        #expect(m.handle(.probed(nil)) == .setAside(reason: "HTTP 500: boom (failed 3 times alone while the server answered others)"))
        #expect(m.handle(.setAside) == .push(limit: 1))
        #expect(m.headFailures == 0)
        #expect(m.handle(.pushed(size: 1, renewed: false)) == .push(limit: 2))
    }

    /// A server that fails on everything is down, not poisoned: the probe
    /// fails too and nothing is set aside.
    @Test func aServerFailingOnEverythingSetsNothingAside() {
        var m = machine(attempts: nil, poison: 2)
        _ = pushing(&m)
        #expect(m.handle(.pushFailed(size: 8, Self.serverError)) == .wait(.milliseconds(50)))
        #expect(m.handle(.waited) == .push(limit: 1))
        #expect(m.handle(.pushFailed(size: 1, Self.serverError)) == .wait(.milliseconds(50)))
        #expect(m.handle(.waited) == .push(limit: 1))
        for _ in 0..<5 {
            #expect(m.handle(.pushFailed(size: 1, Self.serverError)) == .probe)
            guard case .wait = m.handle(.probed(Self.serverError)) else {
                Issue.record("a failed probe must back off")
                return
            }
            #expect(m.handle(.waited) == .push(limit: 1))
        }
        // Once the server answers again, the mutation goes through and the batch grows back.
        #expect(m.handle(.pushed(size: 1, renewed: false)) == .push(limit: 2))
    }

    @Test func aRestoredCopyFoundByAPullPushesAgainUnderTheNewIdentity() {
        var m = machine()
        _ = pushing(&m)
        #expect(m.handle(.nothingToPush) == .readBackRows)
        #expect(m.handle(.rowsReadBack) == .pull(["user:a"]))
        #expect(m.handle(.pulled(asked: ["user:a"], more: [], renewed: true)) == .push(limit: 8))
        #expect(m.handle(.pushed(size: 3, renewed: false)) == .push(limit: 8))
        #expect(m.handle(.nothingToPush) == .finish(refusedScopes: []))
    }

    @Test func aRestoredCopyFoundByThePushKeepsPushingThenPushesAgainAfterThePull() {
        var m = machine(identityChecked: false)
        #expect(m.start() == .checkIdentity)
        #expect(m.handle(.identityChecked(renewed: false)) == .refetchGrownTables)
        #expect(m.handle(.tablesRefetched) == .push(limit: 8))
        #expect(m.handle(.pushed(size: 8, renewed: true)) == .push(limit: 8))
        #expect(m.handle(.nothingToPush) == .readBackRows)
        #expect(m.handle(.rowsReadBack) == .pull(["user:a"]))
        #expect(m.handle(.pulled(asked: ["user:a"], more: [], renewed: false)) == .push(limit: 8))
        #expect(m.handle(.nothingToPush) == .finish(refusedScopes: []))
    }

    @Test func aRefusedScopeIsFoundAloneAndSkipped() {
        var m = machine(scopes: ["user:a", "team:x", "team:b"])
        _ = pushing(&m)
        #expect(m.handle(.nothingToPush) == .readBackRows)
        #expect(m.handle(.rowsReadBack) == .pull(["user:a", "team:x", "team:b"]))
        let forbidden = SyncFailure.refused(status: 403, message: "not a member")
        #expect(m.handle(.pullFailed(asked: ["user:a", "team:x", "team:b"], forbidden, hasCursor: true, hasNoticeCursor: true)) == .pull(["user:a"]))
        #expect(m.handle(.pulled(asked: ["user:a"], more: [], renewed: false)) == .pull(["team:x"]))
        #expect(m.handle(.pullFailed(asked: ["team:x"], forbidden, hasCursor: true, hasNoticeCursor: false)) == .pull(["team:b"]))
        #expect(m.handle(.pulled(asked: ["team:b"], more: [], renewed: false)) == .finish(refusedScopes: ["team:x"]))
    }

    @Test func aRefusedCursorStartsTheScopeOverAndThenItsNoticeCursor() {
        var m = machine()
        _ = pushing(&m)
        _ = m.handle(.nothingToPush)
        #expect(m.handle(.rowsReadBack) == .pull(["user:a"]))
        let bad = SyncFailure.refused(status: 400, message: "not a cursor this server issued")
        #expect(m.handle(.pullFailed(asked: ["user:a"], bad, hasCursor: true, hasNoticeCursor: true)) == .resetCursor(scope: "user:a"))
        #expect(m.handle(.cursorReset) == .pull(["user:a"]))
        #expect(m.handle(.pullFailed(asked: ["user:a"], bad, hasCursor: false, hasNoticeCursor: true)) == .resetNoticeCursor(scope: "user:a"))
        #expect(m.handle(.cursorReset) == .pull(["user:a"]))
        // With nothing left to reset, the scope is refused.
        #expect(m.handle(.pullFailed(asked: ["user:a"], bad, hasCursor: false, hasNoticeCursor: false)) == .finish(refusedScopes: ["user:a"]))
    }

    @Test func aPullThatFailsTransientlyRestartsTheCycle() {
        var m = machine()
        _ = pushing(&m)
        _ = m.handle(.nothingToPush)
        #expect(m.handle(.rowsReadBack) == .pull(["user:a"]))
        #expect(m.handle(.pullFailed(asked: ["user:a"], Self.unavailable, hasCursor: true, hasNoticeCursor: false)) == .wait(.milliseconds(50)))
        #expect(m.handle(.waited) == .refetchGrownTables)
        #expect(m.failures == 1)
    }

    /// A push alone finishes once the queue is empty; it pulls only to
    /// recover: from a server that lost history, or under a new identity.
    @Test func aPushAlonePullsOnlyToRecover() {
        var plain = machine(pushOnly: true)
        #expect(plain.start() == .refetchGrownTables)
        #expect(plain.handle(.tablesRefetched) == .push(limit: 8))
        #expect(plain.handle(.pushed(size: 1, renewed: false)) == .push(limit: 8))
        #expect(plain.handle(.nothingToPush) == .readBackRows)
        #expect(plain.handle(.rowsReadBack) == .finish(refusedScopes: []))

        var lost = machine(pushOnly: true)
        _ = lost.start()
        _ = lost.handle(.tablesRefetched)
        #expect(lost.handle(.pushFailed(size: 1, .historyLost)) == .pull(["user:a"]))

        var found = machine(identityChecked: false, pushOnly: true)
        #expect(found.start() == .checkIdentity)
        #expect(found.handle(.identityChecked(renewed: false, historyLost: true)) == .pull(["user:a"]))

        var renewed = machine(pushOnly: true)
        _ = renewed.start()
        _ = renewed.handle(.tablesRefetched)
        _ = renewed.handle(.pushed(size: 1, renewed: true))
        _ = renewed.handle(.nothingToPush)
        #expect(renewed.handle(.rowsReadBack) == .pull(["user:a"]))
    }
}
