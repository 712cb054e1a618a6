@testable import FerryServer
import FerryProtocol
import Foundation
import Testing
import FerryTestSupport

/// What the admin API reads and changes in a store, the same on both:
/// scopes and members, a table's rows by id, users and devices, and the
/// webhook lease that gives each webhook one deliverer.
@Suite(.postgresTurns) struct AdminStoreTests {
    /// The server's time now, as each push takes it.
    static var rules: PushRules { PushRules() }

    @Test(arguments: StoreKind.available) func scopesMembersAndDevices(_ kind: StoreKind) async throws {
        try await StoreUnderTest.with(kind) { server in
            let store = server.store
            for name in ["b-team@alice", "a-team@alice", "c-team@bob"] { try await store.createScope(name, owner: nil) }
            try await store.setMember("zoe", role: .read, in: "a-team@alice")
            try await store.setMember("amy", role: .write, in: "a-team@alice")
            #expect(try await store.scopes(after: nil, limit: 2).map(\.scope) == ["a-team@alice", "b-team@alice"])
            #expect(try await store.scopes(after: "b-team@alice", limit: 2).map(\.scope) == ["c-team@bob"])
            let summary = try #require(try await store.scope("a-team@alice"))
            #expect(summary.owner == nil && summary.members == [ScopeMember(userID: "amy", role: .write), ScopeMember(userID: "zoe", role: .read)])
            #expect(try await store.scope("nope@alice") == nil)
            #expect(try await store.removeMember("zoe", from: "a-team@alice"))
            #expect(try await store.removeMember("zoe", from: "a-team@alice") == false)
            #expect(try await store.membership(of: "zoe", in: "a-team@alice") == nil)
            await #expect(throws: FerryServerError.self) { try await store.removeMember("zoe", from: "nope@alice") }

            let before = Int64(Date().timeIntervalSince1970 * 1000) - 1
            _ = try await store.push(PushRequest(clientID: "phone", mutations: [Mutations.upsert(1, ["title": "a"])]), userID: "alice", rules: Self.rules)
            _ = try await store.push(PushRequest(clientID: "laptop", mutations: [Mutations.upsert(1, ["title": "b"])]), userID: "alice", rules: Self.rules)
            _ = try await store.push(
                PushRequest(clientID: "tablet", mutations: [Mutations.upsert(1, scope: "user:bob", ["title": "c"])]), userID: "bob", rules: Self.rules)
            #expect(try await store.users(after: nil, limit: 10) == ["alice", "bob"])
            #expect(try await store.users(after: "alice", limit: 10) == ["bob"])
            let devices = try await store.devices(of: "alice")
            #expect(devices.map(\.clientID) == ["laptop", "phone"] && devices.allSatisfy { $0.lastMutationID == 1 && ($0.lastPushAt ?? 0) >= before })
        }
    }

    @Test(arguments: StoreKind.available) func aTablesRowsByIDAndSinceATime(_ kind: StoreKind) async throws {
        try await StoreUnderTest.with(kind) { server in
            let store = server.store
            let mutations =
                (0..<5).map { Mutations.upsert(Int64($0 + 1), row: "r\($0)", ["title": .text("t\($0)")]) }
                + [Mutations.delete(6, row: "r2", base: nil), Mutations.upsert(7, row: "x1", table: "other", ["a": 1])]
            _ = try await store.push(PushRequest(clientID: "c", mutations: mutations), userID: "alice", rules: Self.rules)
            let first = try await store.rows(scope: "user:alice", table: "note", after: nil, changedSince: nil, limit: 2)
            #expect(first.map(\.rowID) == ["r0", "r1"] && first[0].values == ["title": .text("t0")])
            let rest = try await store.rows(scope: "user:alice", table: "note", after: "r1", changedSince: nil, limit: 10)
            #expect(rest.map(\.rowID) == ["r3", "r4"], "a deleted row is not listed")
            let changed = try await store.rows(scope: "user:alice", table: "note", after: nil, changedSince: 0, limit: 10)
            #expect(changed.map(\.rowID) == ["r0", "r1", "r2", "r3", "r4"] && changed[2].deleted && changed[2].values.isEmpty)
            #expect(try await store.rows(scope: "user:alice", table: "note", after: nil, changedSince: Int64.max / 2, limit: 10).isEmpty)
            #expect(try await store.rows(scope: "user:bob", table: "note", after: nil, changedSince: nil, limit: 10).isEmpty)
        }
    }

    @Test(arguments: StoreKind.available) func oneDelivererHoldsAWebhookAtATime(_ kind: StoreKind) async throws {
        try await StoreUnderTest.with(kind) { server in
            let store = server.store
            let a = try #require(try await store.leaseWebhook("notify", holder: "a", now: 1_000, leaseMilliseconds: 500))
            #expect(a == WebhookState(name: "notify"))
            #expect(try await store.leaseWebhook("notify", holder: "b", now: 1_200, leaseMilliseconds: 500) == nil)
            var state = a
            state.cursor = "c1"
            state.deliveredAt = 1_300
            #expect(try await store.recordWebhook(state, holder: "a", now: 1_300))
            #expect(try await store.recordWebhook(state, holder: "b", now: 1_300) == false)
            // The lease ran out: b takes over, and a's late record is refused.
            let b = try #require(try await store.leaseWebhook("notify", holder: "b", now: 1_600, leaseMilliseconds: 500))
            #expect(b.cursor == "c1" && b.deliveredAt == 1_300)
            state.cursor = "stale"
            #expect(try await store.recordWebhook(state, holder: "a", now: 1_650) == false)
            // A negative lease gives it up at once.
            #expect(try await store.leaseWebhook("notify", holder: "b", now: 1_700, leaseMilliseconds: -1) != nil)
            #expect(try await store.leaseWebhook("notify", holder: "a", now: 1_701, leaseMilliseconds: 500) != nil)
            state = WebhookBackoff.failed(b, error: "HTTP 500", maxFailures: 1)
            #expect(try await store.recordWebhook(state, holder: "a", now: 1_702))
            #expect(try await store.webhookStates().map(\.parked) == [true])
            #expect(try await store.replayWebhook("notify", from: .cursor("c0")))
            let replayed = try #require(try await store.webhookStates().first)
            #expect(!replayed.parked && replayed.failures == 0 && replayed.cursor == "c0")
            #expect(try await store.leaseWebhook("notify", holder: "b", now: 1_703, leaseMilliseconds: 500) != nil, "a replay frees the lease")
            #expect(try await store.replayWebhook("notify", from: .beginning))
            #expect(try await store.webhookStates().first?.cursor == nil)
            #expect(try await store.replayWebhook("unknown", from: .whereItStopped) == false)
        }
    }
}
