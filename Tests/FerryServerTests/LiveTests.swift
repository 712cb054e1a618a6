@testable import FerryServer
import FerryProtocol
import Foundation
import Hummingbird
import HummingbirdTesting
import NIOConcurrencyHelpers
import Testing
import FerryTestSupport

/// The live endpoint on a real socket.
@Suite struct LiveTests {
    @Test func aCommitReachesASubscriberWithin100Milliseconds() async throws {
        let server = try await TestServer()
        let token = try await server.token("alice")
        try await server.store.createScope("team:field", owner: "alice")
        let app = try await server.application()
        try await app.test(.live) { client in
            let port = try #require(client.port)
            let latencies = NIOLockedValueBox<[Duration]>([])
            // Commit instants: an in-process subscriber hears of each commit right after the store makes it.
            let commits = NIOLockedValueBox<[ContinuousClock.Instant]>([])
            let inProcess = server.store.changeFeed.subscribe(to: ["user:alice"])
            let rounds = 10
            let (ready, readyContinuation) = AsyncStream.makeStream(of: Void.self)
            let (received, receivedContinuation) = AsyncStream.makeStream(of: ContinuousClock.Instant.self)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    for await _ in inProcess.changes {
                        let now = ContinuousClock.now
                        if commits.withLockedValue({
                            $0.append(now); return $0.count
                        }) == rounds {
                            break
                        }
                    }
                }
                group.addTask {
                    // However the stream ends, nobody waits for it any longer.
                    defer {
                        readyContinuation.finish()
                        receivedContinuation.finish()
                    }
                    let changes = NIOLockedValueBox(0)
                    let status = try await EventStreamClient.stream(port: port, path: "/v1/live?scope=user:alice&scope=team:field", token: token) { event in
                        switch event.name {
                        case "ready":
                            readyContinuation.yield()
                        case "change":
                            #expect(event.data == #"{"scopes":["user:alice"]}"#)
                            receivedContinuation.yield(event.received)
                            changes.withLockedValue { $0 += 1 }
                        default:
                            break
                        }
                        return changes.withLockedValue { $0 } < rounds
                    }
                    #expect(status.contains(" 200 "))
                }
                var readyIterator = ready.makeAsyncIterator()
                await readyIterator.next()
                var arrivals: [ContinuousClock.Instant] = []
                var receivedIterator = received.makeAsyncIterator()
                for round in 1...rounds {
                    _ = try await server.store.push(
                        PushRequest(clientID: "c1", mutations: [Mutations.upsert(Int64(round), row: "r\(round)", ["n": .integer(Int64(round))])]),
                        userID: "alice", rules: PushRules()
                    )
                    arrivals.append(try #require(await receivedIterator.next()))
                }
                try await group.waitForAll()
                let committed = commits.withLockedValue { $0 }
                #expect(committed.count == rounds)
                latencies.withLockedValue { $0 = zip(arrivals, committed).map { max(.zero, $0 - $1) } }
            }
            let measured = latencies.withLockedValue { $0 }
            #expect(measured.count == rounds)
            let worst = try #require(measured.max())
            let median = measured.sorted()[measured.count / 2]
            // The median holds the 100 ms goal; the worst only has to stay
            // under a second, because the full suite shares 2 cores with it
            // (a lone run sees a max of 1–2 ms).
            #expect(median < .milliseconds(100), "median notification took \(median)")
            #expect(worst < .seconds(1), "slowest notification took \(worst)")
            print("live notification latency over \(rounds) commits: median \(median), max \(worst), all \(measured)")
        }
    }

    @Test func subscribersHearOnlyTheirScopesAndForbiddenScopesAre403() async throws {
        let server = try await TestServer()
        let alice = try await server.token("alice")
        let app = try await server.application()
        try await app.test(.live) { client in
            let port = try #require(client.port)
            let status = try await EventStreamClient.stream(port: port, path: "/v1/live?scope=user:bob", token: alice) { _ in false }
            #expect(status.contains("403"))

            let heard = NIOLockedValueBox<[String]>([])
            let (ready, readyContinuation) = AsyncStream.makeStream(of: Void.self)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    defer { readyContinuation.finish() }
                    try await EventStreamClient.stream(port: port, path: "/v1/live?scope=user:alice", token: alice) { event in
                        if event.name == "ready" { readyContinuation.yield() }
                        if event.name == "change" { heard.withLockedValue { $0.append(event.data) } }
                        return event.name != "change"
                    }
                }
                var iterator = ready.makeAsyncIterator()
                await iterator.next()
                // Bob's commit is not Alice's news; hers is.
                _ = try await server.store.push(PushRequest(clientID: "b", mutations: [Mutations.upsert(1, scope: "user:bob", ["t": "b"])]), userID: "bob", rules: PushRules())
                _ = try await server.store.push(PushRequest(clientID: "a", mutations: [Mutations.upsert(1, ["t": "a"])]), userID: "alice", rules: PushRules())
                try await group.waitForAll()
            }
            #expect(heard.withLockedValue { $0 } == [#"{"scopes":["user:alice"]}"#])
        }
    }

    /// With `rows=true` a small change arrives as its rows (`event: page`, a
    /// PullPage with no notices and no notice cursor); the next small change
    /// carries only its own rows; a change of more than 100 rows is a
    /// `change`; and rows=garbage is refused.
    @Test func smallChangesArriveAsTheirRows() async throws {
        let server = try await TestServer()
        let alice = try await server.token("alice")
        let app = try await server.application()
        try await app.test(.live) { client in
            let port = try #require(client.port)
            let refused = try await EventStreamClient.stream(port: port, path: "/v1/live?scope=user:alice&rows=yes", token: alice) { _ in false }
            #expect(refused.contains("400"))

            let events = NIOLockedValueBox<[(name: String, data: String)]>([])
            let (ready, readyContinuation) = AsyncStream.makeStream(of: Void.self)
            let (arrived, arrivedContinuation) = AsyncStream.makeStream(of: Void.self)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    defer { readyContinuation.finish(); arrivedContinuation.finish() }
                    try await EventStreamClient.stream(port: port, path: "/v1/live?scope=user:alice&rows=true", token: alice) { event in
                        if event.name == "ready" { readyContinuation.yield(); return true }
                        let count = events.withLockedValue {
                            $0.append((event.name, event.data)); return $0.count
                        }
                        arrivedContinuation.yield()
                        return count < 3
                    }
                }
                var readyIterator = ready.makeAsyncIterator()
                await readyIterator.next()
                var arrivals = arrived.makeAsyncIterator()
                _ = try await server.store.push(PushRequest(clientID: "a", mutations: [Mutations.upsert(1, row: "r1", ["t": "one"])]), userID: "alice", rules: PushRules())
                await arrivals.next()
                _ = try await server.store.push(PushRequest(clientID: "a", mutations: [Mutations.upsert(2, row: "r2", ["t": "two"])]), userID: "alice", rules: PushRules())
                await arrivals.next()
                let many = (3...103).map { Mutations.upsert(Int64($0), row: "m\($0)", ["t": "many"]) }
                _ = try await server.store.push(PushRequest(clientID: "a", mutations: many), userID: "alice", rules: PushRules())
                try await group.waitForAll()
            }
            let seen = events.withLockedValue { $0 }
            #expect(seen.map(\.name) == ["page", "page", "change"])
            let first = try JSONDecoder().decode(PullPage.self, from: Data(seen[0].data.utf8))
            #expect(first.scope == "user:alice" && first.changes.map(\.rowID) == ["r1"] && first.changes[0].values == ["t": "one"])
            #expect(first.noticeCursor == nil && first.notices.isEmpty && !first.hasMore && !first.reset)
            let second = try JSONDecoder().decode(PullPage.self, from: Data(seen[1].data.utf8))
            #expect(second.changes.map(\.rowID) == ["r2"])
            #expect(seen[2].data == #"{"scopes":["user:alice"]}"#)
        }
    }
}

/// A token's life bounds the live stream it opened.
@Suite struct LiveTokenLifetimeTests {
    @Test func aStreamEndsWithAnExpiredEventWhenItsTokenExpires() async throws {
        let server = try await TestServer()
        let token = try await server.authority.mint(userID: "alice", lifetime: .seconds(2))
        let app = try await server.application()
        try await app.test(.live) { client in
            let port = try #require(client.port)
            let events = NIOLockedValueBox<[String]>([])
            let opened = ContinuousClock.now
            let status = try await EventStreamClient.stream(port: port, path: "/v1/live?scope=user:alice", token: token) { event in
                events.withLockedValue { $0.append(event.name) }
                return event.name != "expired"
            }
            let lasted = ContinuousClock.now - opened
            #expect(status.contains(" 200 "))
            #expect(events.withLockedValue { $0 } == ["ready", "expired"])
            #expect(lasted < .seconds(10), "the stream lasted \(lasted)")
            // The same token opens nothing now.
            let again = try await EventStreamClient.request(port: port, method: "GET", path: "/v1/live?scope=user:alice", token: token)
            #expect(again.status.contains(" 401 "), "\(again)")
        }
    }
}

/// Access bounds a live stream as its token does: a member removed from a
/// shared scope it follows gets `revoked` at the next news, and the
/// stream ends.
@Suite struct LiveAccessLossTests {
    @Test func aStreamEndsWithARevokedEventWhenItsUserLosesTheScope() async throws {
        let server = try await TestServer()
        try await server.store.createScope("trip@alice", owner: "alice")
        try await server.store.setMember("bob", role: .read, in: "trip@alice")
        let bob = try await server.token("bob")
        let app = try await server.application()
        try await app.test(.live) { client in
            let port = try #require(client.port)
            let events = NIOLockedValueBox<[(String, String)]>([])
            let stream = Task {
                try await EventStreamClient.stream(port: port, path: "/v1/live?scope=trip@alice&scope=user:bob", token: bob) { event in
                    events.withLockedValue { $0.append((event.name, event.data)) }
                    return event.name != "revoked"
                }
            }
            #expect(try await eventually(within: .seconds(10)) { events.withLockedValue { $0.map(\.0) } == ["ready"] })
            #expect(try await server.store.removeMember("bob", from: "trip@alice"))
            // News in the scope: the stream checks access before it says anything of it.
            _ = try await server.store.push(
                PushRequest(clientID: "c1", mutations: [Mutations.upsert(1, scope: "trip@alice", ["title": "x"])]), userID: "alice",
                rules: PushRules())
            let status = try await stream.value
            #expect(status.contains(" 200 "))
            #expect(events.withLockedValue { $0.map(\.0) } == ["ready", "revoked"])
            #expect(events.withLockedValue { $0.last?.1 }?.contains("trip@alice") == true)
        }
    }
}
