@testable import FerryServer
import FerryProtocol
import Foundation
import Hummingbird
import HummingbirdTesting
import JWTKit
import Testing

/// Bearer JWTs and scope access (ARCHITECTURE.md server semantic 7) over HTTP.
@Suite struct APIAuthTests {
    static let pull = #"{"clientID":"c1","scopes":[{"scope":"user:alice"}]}"#

    @Test func noTokenBadSignatureExpiredOrGarbledAre401() async throws {
        let server = try await TestServer()
        let otherKey = await TokenAuthority(secret: String(repeating: "x", count: 40))
        let forged = try await otherKey.mint(userID: "alice", lifetime: .seconds(600))
        let expired = try await server.authority.mint(userID: "alice", lifetime: .seconds(60), now: Date().addingTimeInterval(-3600))
        try await server.withClient { client in
            for token: String? in [nil, forged, expired, "not.a.jwt", ""] {
                let response = try await client.send(.post, "/v1/pull", token: token, json: Self.pull)
                #expect(response.status == .unauthorized)
                #expect(try response.decode(ErrorResponse.self).code == .unauthorized)
            }
            let wrongScheme = try await client.execute(uri: "/v1/pull", method: .post, headers: [.authorization: "Basic YTpi"], body: .init(string: Self.pull))
            #expect(wrongScheme.status == .unauthorized)
            let expiredBody = try await client.send(.post, "/v1/pull", token: expired, json: Self.pull)
            #expect(try expiredBody.decode(ErrorResponse.self).message.contains("expired"))
        }
    }

    @Test func anotherUsersScopeIs403AndRevealsNothing() async throws {
        let server = try await TestServer()
        try await server.store.createScope("team:secret", owner: "bob")
        _ = try await server.store.push(
            PushRequest(clientID: "b1", mutations: [Mutations.upsert(1, scope: "team:secret", ["t": "plans"])]),
            userID: "bob", rules: PushRules()
        )
        _ = try await server.store.push(
            PushRequest(clientID: "b2", mutations: [Mutations.upsert(1, scope: "user:bob", ["t": "diary"])]),
            userID: "bob", rules: PushRules()
        )
        let mallory = try await server.token("mallory")
        let before = try await server.digest()
        try await server.withClient { client in
            // An existing scope with data, another user's personal scope, and a scope that does not exist.
            var bodies: [String] = []
            for scope in ["team:secret", "user:bob", "team:nothing"] {
                let pull = try await client.send(.post, "/v1/pull", token: mallory, body: PullRequest(clientID: "m1", scopes: [.init(scope: scope)]))
                let push = try await client.send(.post, "/v1/push", token: mallory, body: PushRequest(clientID: "m1", mutations: [Mutations.upsert(1, scope: scope, ["t": "x"])]))
                let live = try await client.send(.get, "/v1/live?scope=\(scope)", token: mallory)
                for response in [pull, push, live] {
                    #expect(response.status == .forbidden)
                    bodies.append(response.text.replacingOccurrences(of: scope, with: "SCOPE"))
                }
                let member = try await client.send(.put, "/v1/scopes/\(scope)/members/mallory", token: mallory, json: #"{"role":"write"}"#)
                #expect(member.status == .forbidden)
                bodies.append(member.text)
            }
            // Same answers, word for word, whatever the scope holds or whether it exists.
            #expect(Set(bodies[0..<4]) == Set(bodies[4..<8]))
            #expect(Set(bodies[4..<8]) == Set(bodies[8..<12]))
        }
        #expect(try await server.digest() == before)
    }

    @Test func pushNeedsWriteAndPullNeedsRead() async throws {
        let server = try await TestServer()
        let owner = try await server.token("olga")
        let reader = try await server.token("rita")
        let writer = try await server.token("walt")
        try await server.withClient { client in
            let created = try await client.send(.post, "/v1/scopes", token: owner, json: #"{"scope":"team:survey@olga"}"#)
            #expect(created.status == .created)
            // Another user cannot take a name in olga's namespace, whether it exists or not.
            for name in ["team:survey@olga", "team:other@olga"] {
                let taken = try await client.send(.post, "/v1/scopes", token: reader, json: #"{"scope":"\#(name)"}"#)
                #expect(taken.status == .forbidden, "\(name): \(taken.text)")
            }
            #expect(try await client.send(.post, "/v1/scopes", token: reader, json: #"{"scope":"team:survey"}"#).status == .badRequest)
            #expect(try await client.send(.post, "/v1/scopes", token: reader, json: #"{"scope":"user:x@rita"}"#).status == .conflict)
            #expect(try await client.send(.post, "/v1/scopes", token: owner, json: #"{"scope":"team:survey@olga"}"#).status == .conflict)
            #expect(try await client.send(.put, "/v1/scopes/team:survey@olga/members/rita", token: owner, json: #"{"role":"read"}"#).status == .ok)
            #expect(try await client.send(.put, "/v1/scopes/team:survey@olga/members/walt", token: owner, json: #"{"role":"write"}"#).status == .ok)
            // A member who does not own the scope cannot add others.
            #expect(try await client.send(.put, "/v1/scopes/team:survey@olga/members/eve", token: writer, json: #"{"role":"write"}"#).status == .forbidden)

            let push = { (token: String, client: String) in
                PushRequest(clientID: client, mutations: [Mutations.upsert(1, row: client, scope: "team:survey@olga", ["t": .text(client)])])
            }
            #expect(try await client.send(.post, "/v1/push", token: reader, body: push(reader, "rc")).status == .forbidden)
            #expect(try await client.send(.post, "/v1/push", token: writer, body: push(writer, "wc")).status == .ok)
            #expect(try await client.send(.post, "/v1/push", token: owner, body: push(owner, "oc")).status == .ok)
            let pulled = try await client.send(.post, "/v1/pull", token: reader, body: PullRequest(clientID: "rc", scopes: [.init(scope: "team:survey@olga")]))
            #expect(pulled.status == .ok)
            #expect(Set(try pulled.decode(PullResponse.self).pages[0].changes.map(\.rowID)) == ["wc", "oc"])

            let scopes = try await client.send(.get, "/v1/scopes", token: reader).decode(ScopeList.self)
            #expect(
                scopes.scopes == [
                    ScopeMembership(scope: "user:rita", role: .write, owner: true),
                    ScopeMembership(scope: "team:survey@olga", role: .read, owner: false),
                ])

            // The owner takes a member out: only the owner, never themself, and a non-member is 404.
            let scope = "/v1/scopes/team:survey@olga/members/"
            #expect(try await client.send(.delete, scope + "rita", token: writer).status == .forbidden)
            #expect(try await client.send(.delete, scope + "olga", token: owner).status == .badRequest)
            #expect(try await client.send(.delete, scope + "eve", token: owner).status == .notFound)
            #expect(try await client.send(.delete, "/v1/scopes/user:olga/members/rita", token: owner).status == .forbidden)
            #expect(try await client.send(.delete, scope + "rita", token: owner).status == .noContent)
            let refused = try await client.send(.post, "/v1/pull", token: reader, body: PullRequest(clientID: "rc", scopes: [.init(scope: "team:survey@olga")]))
            #expect(refused.status == .forbidden)
            #expect(try await client.send(.get, "/v1/scopes", token: reader).decode(ScopeList.self).scopes.count == 1)
            #expect(try await client.send(.delete, scope + "rita", token: owner).status == .notFound)
        }
    }
    /// `GET /v1/rows` is authorized like a pull: a non-member gets the same
    /// 403 whether the row (or the scope) exists or not; a reader gets the
    /// row, a deleted one with the values it held, and 404 for no row.
    @Test func aRowIsReadLikeAPull() async throws {
        let server = try await TestServer()
        try await server.store.createScope("team:x", owner: "olga")
        try await server.store.setMember("rita", role: .read, in: "team:x")
        _ = try await server.store.push(
            PushRequest(
                clientID: "o1",
                mutations: [
                    Mutations.upsert(1, row: "kept", scope: "team:x", ["t": "plans", "n": 3]),
                    Mutations.upsert(2, row: "gone", scope: "team:x", ["t": "old"]),
                    Mutations.delete(3, row: "gone", scope: "team:x", base: 2),
                ]),
            userID: "olga", rules: PushRules()
        )
        let rita = try await server.token("rita")
        let mallory = try await server.token("mallory")
        try await server.withClient { client in
            let kept = try await client.send(.get, "/v1/rows/team%3Ax/note/kept", token: rita)
            #expect(kept.status == .ok)
            let row = try kept.decode(ServerRow.self)
            #expect(row.deleted == false && row.values == ["t": .text("plans"), "n": .integer(3)] && row.version > 0)

            let gone = try await client.send(.get, "/v1/rows/team:x/note/gone", token: rita).decode(ServerRow.self)
            #expect(gone.deleted && gone.values["t"] == .text("old"))

            let missing = try await client.send(.get, "/v1/rows/team:x/note/never", token: rita)
            #expect(missing.status == .notFound)
            #expect(try missing.decode(ErrorResponse.self).code == .notFound)

            var refusals: Set<String> = []
            for path in ["/v1/rows/team:x/note/kept", "/v1/rows/team:x/note/never", "/v1/rows/team:none/note/kept"] {
                let refused = try await client.send(.get, path, token: mallory)
                #expect(refused.status == .forbidden)
                refusals.insert(refused.text.replacingOccurrences(of: "team:none", with: "team:x"))
            }
            #expect(refusals.count == 1)
            #expect(try await client.send(.get, "/v1/rows/team:x/note/kept", token: nil).status == .unauthorized)
            #expect(try await client.send(.get, "/v1/rows/team:x/not%20a%20table/kept", token: rita).status == .badRequest)
            #expect(try await client.send(.get, "/v1/rows/Not%20A%20Scope/note/kept", token: rita).status == .badRequest)
        }
    }

    /// A push whose mutations were all applied before the writer lost write
    /// access is answered with the recorded results on a retry, not 403:
    /// the client learns its acknowledged edits landed.
    @Test func aRetriedPushAppliedBeforeAccessWasRevokedIsAnswered() async throws {
        let server = try await TestServer()
        try await server.store.createScope("team:x", owner: "olga")
        try await server.store.setMember("walt", role: .write, in: "team:x")
        let walt = try await server.token("walt")
        let push = PushRequest(clientID: "w1", mutations: [Mutations.upsert(1, row: "r", scope: "team:x", ["t": "mine"])])
        try await server.withClient { client in
            let first = try await client.send(.post, "/v1/push", token: walt, body: push)
            #expect(first.status == .ok)
            try await server.store.setMember("walt", role: .read, in: "team:x")
            let retry = try await client.send(.post, "/v1/push", token: walt, body: push)
            #expect(retry.status == .ok)
            let results = try retry.decode(PushResponse.self).results
            #expect(results.map(\.status) == [.applied] && results.map(\.replayed) == [true])
            // The applied mutation again, with a new one in a scope walt may write: answered.
            let mixed = PushRequest(
                clientID: "w1",
                mutations: push.mutations + [Mutations.upsert(2, row: "own", scope: "user:walt", ["t": "mine"])])
            let mixedReply = try await client.send(.post, "/v1/push", token: walt, body: mixed)
            #expect(mixedReply.status == .ok)
            #expect(try mixedReply.decode(PushResponse.self).results.map(\.replayed) == [true, false])
            // A new mutation in the scope walt may only read: refused, with one he may write beside it.
            let next = PushRequest(
                clientID: "w1",
                mutations: [
                    Mutations.upsert(3, row: "own2", scope: "user:walt", ["t": "mine"]),
                    Mutations.upsert(4, row: "r", scope: "team:x", ["t": "again"]),
                ])
            #expect(try await client.send(.post, "/v1/push", token: walt, body: next).status == .forbidden)
            #expect(try await server.store.lastAppliedMutationID(userID: "walt", clientID: "w1") == 2)
        }
    }
    /// A verified token is remembered (no HMAC check per request), and
    /// still refused from the moment it expires.
    @Test func aVerifiedTokenIsRememberedUntilItExpires() async throws {
        let authority = await TokenAuthority(secret: TestServer.secret)
        let token = try await authority.mint(userID: "alice", lifetime: .seconds(60))
        #expect(try await authority.userID(fromToken: token) == "alice")
        #expect(try await authority.userID(fromToken: token) == "alice")
        let later = Date().addingTimeInterval(120)
        let error = await #expect(throws: FerryServerError.self) { try await authority.userID(fromToken: token, now: later) }
        #expect(error?.code == .unauthorized)
        let cache = VerifiedTokens(capacity: 3)
        for index in 0..<10 { cache.remember("t\(index)", VerifiedToken(userID: "u", expires: later), now: Date()) }
        #expect(cache.count <= 3)
    }
}
