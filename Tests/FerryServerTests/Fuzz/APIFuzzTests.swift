@testable import FerryPostgres
@testable import FerryServer
import Crypto
import FerryProtocol
import Foundation
import Hummingbird
import HummingbirdTesting
import Testing
import FerryTestSupport

/// The HTTP API fuzzed from its OpenAPI document over a real socket, by
/// three users with secrets in their own and shared scopes.
///
/// - No answer is a 5xx, every request gets an answer, and the server still
///   serves at the end.
/// - One at a time: every refused request (4xx) leaves every store table
///   and every complete blob exactly as they were.
/// - Three users at once, and one at a time: no answer to a user carries a
///   value or blob byte of a scope that user cannot read; no one but a
///   scope's owner changes its members.
/// - At the end, every seeded row, blob and membership is as seeded.
///
/// `FERRY_FUZZ_SEED` picks another seed; `FERRY_FUZZ_ROUNDS` sets the count.
@Suite(.postgresTurns) struct APIFuzzTests {
    static let seed = ProcessInfo.processInfo.environment["FERRY_FUZZ_SEED"].flatMap(UInt64.init) ?? 20_261_123
    static let rounds = ProcessInfo.processInfo.environment["FERRY_FUZZ_ROUNDS"].flatMap(Int.init) ?? 1500

    @Test(arguments: StoreKind.available)
    func fuzzedRequestsNeverFailTheServerChangeNothingWhenRefusedAndNeverCarryAnotherUsersData(_ kind: StoreKind) async throws {
        // The server runs the store as one of its services.
        try await StoreUnderTest.with(kind, running: false) { store in try await Self.fuzz(store) }
    }

    static func fuzz(_ store: StoreUnderTest) async throws {
        let model = AccessModel()
        var configuration = FerryServerConfiguration(jwtSecret: TestServer.secret)
        configuration.port = 0
        // Every fuzzed request reaches its route: 1,500 rounds from a few users would meet rate limits.
        configuration.rateLimits = .unlimited
        let authority = await TokenAuthority(secret: TestServer.secret)
        let app = try await FerryApplication.build(configuration: configuration, store: store.store)
        try await app.test(.live) { client in
            let port = try #require(client.port)
            if let postgres = store.store as? PostgresSyncStore { try await postgres.waitUntilReady() }
            let seeded = try await Self.seed(store.store, authority: authority, model: model, port: port)
            let tokens = try await Self.tokens(authority)
            var fuzzer = try APIFuzzer(
                document: OpenAPIDocument.bundled().data, seed: Self.seed, model: model,
                rows: seeded.rows, blobs: seeded.blobs, tokens: tokens, cursors: seeded.cursors)
            var tally = Tally()
            print("API fuzz (\(store.kind)): seed \(Self.seed) (FERRY_FUZZ_SEED=\(Self.seed) replays it), \(Self.rounds) requests one at a time, then 3 × \(Self.rounds / 3) at once")

            // One at a time: a refused request changes nothing.
            var before = try await store.digest()
            for round in 0..<Self.rounds {
                let user = AccessModel.users[round % 3]
                let generated = fuzzer.next(as: user)
                let response = try await Self.exchange(generated, port: port, model: model, rows: seeded.rows, tally: &tally)
                fuzzer.cursors.collect(from: response)
                let after = try await store.digest()
                if response.status >= 400 {
                    #expect(after == before, "refused (\(response.status)) yet stored data changed: \(generated.request)")
                }
                before = after
            }

            // Three users at once.
            let document = try OpenAPIDocument.bundled().data
            let cursors = fuzzer.cursors.seen
            let concurrent = try await withThrowingTaskGroup(of: Tally.self) { group in
                for (index, user) in AccessModel.users.enumerated() {
                    group.addTask {
                        var own = try APIFuzzer(
                            document: document, seed: Self.seed &+ UInt64(index + 1), model: model,
                            rows: seeded.rows, blobs: seeded.blobs, tokens: tokens, cursors: cursors)
                        var tally = Tally()
                        for _ in 0..<(Self.rounds / 3) {
                            let generated = own.next(as: user)
                            let response = try await Self.exchange(generated, port: port, model: model, rows: seeded.rows, tally: &tally)
                            own.cursors.collect(from: response)
                        }
                        return tally
                    }
                }
                var all = Tally()
                for try await tally in group { all.merge(tally) }
                return all
            }
            tally.merge(concurrent)

            // Everything seeded is as it was; the server still serves.
            for row in seeded.rows {
                let stored = try await store.store.row(scope: row.scope, table: "note", rowID: row.rowID)
                #expect(stored?.values["title"] == ColumnValue.text(row.title) && stored?.deleted == false, "seeded row \(row.rowID) in \(row.scope) changed: \(String(describing: stored))")
            }
            for blob in seeded.blobs {
                let owner = blob.scope.hasPrefix("user:") ? String(blob.scope.dropFirst(5)) : model.owners[blob.scope]!
                let read = try await RawHTTP.send(
                    .init(
                        method: "GET", target: "/v1/blobs/\(APIFuzzer.encode(blob.scope))/\(blob.sha256)",
                        headers: [("Authorization", "Bearer \(tokens.valid[owner]!)")]), port: port)
                #expect(read.status == 200 && String(decoding: read.body, as: UTF8.self).hasPrefix(AccessModel.secret(blob.scope)))
            }
            #expect(try await store.store.membership(of: "bob", in: "team:ab")?.role == .write)
            #expect(try await store.store.membership(of: "carol", in: "team:ab") == nil)
            #expect(try await store.store.membership(of: "alice", in: "team:c") == nil)
            #expect(try await store.store.membership(of: "bob", in: "team:c") == nil)
            let health = try await RawHTTP.send(.init(method: "GET", target: "/healthz"), port: port)
            #expect(health.status == 200)
            print(
                "API fuzz (\(store.kind)): \(tally.requests) requests, statuses \(tally.statuses.sorted { $0.key < $1.key }), "
                    + "\(tally.secretsSeen) answers carried their requester's own secrets, \(tally.operations.count) of the document's operations")
            #expect(tally.requests == Self.rounds + 3 * (Self.rounds / 3))
            #expect(
                Set(tally.operations.keys) == Set(fuzzer.operations.map { "\($0.method) \($0.path)" }),
                "operations the fuzz never sent: \(Set(fuzzer.operations.map { "\($0.method) \($0.path)" }).subtracting(tally.operations.keys))")
            // The fuzz reached the data: some answers did carry secrets (to those allowed them) and some writes landed.
            #expect(tally.secretsSeen > 0)
            #expect(tally.statuses.keys.contains { (200..<300).contains($0) })
            #expect(tally.statuses.keys.contains(403))
        }
    }

    struct Tally: Sendable {
        var requests = 0
        var statuses: [Int: Int] = [:]
        var operations: [String: Int] = [:]
        var secretsSeen = 0

        mutating func merge(_ other: Tally) {
            requests += other.requests
            secretsSeen += other.secretsSeen
            statuses.merge(other.statuses, uniquingKeysWith: +)
            operations.merge(other.operations, uniquingKeysWith: +)
        }
    }

    /// Sends one request and checks its answer on its own: no 5xx, a broken
    /// body refused, no other scope's secrets, membership only by the owner.
    static func exchange(
        _ generated: APIFuzzer.Generated, port: Int, model: AccessModel, rows: [SeededRow],
        tally: inout Tally
    ) async throws -> RawHTTP.Response {
        let response = try await RawHTTP.send(generated.request, port: port, stream: generated.isLive ? .milliseconds(200) : nil)
        tally.requests += 1
        tally.statuses[response.status, default: 0] += 1
        tally.operations[generated.operation, default: 0] += 1
        let seen = "\(generated.request) as \(generated.requester ?? "nobody") → \(response.status): \(response.text.prefix(400))"
        // `/readyz` answers 503 by contract when the store does not answer within 2 s, or fails (a
        // loaded CI host's PostgreSQL can be that slow); its body then says so. Any other 5xx is a
        // server error.
        let storeSlow = generated.operation == "GET /readyz" && response.status == 503 && response.text.contains("the store does not answer")
        #expect(response.status < 500 || storeSlow, "a server error: \(seen)")
        if generated.broken {
            #expect(response.status >= 400, "a body that breaks its schema was accepted: \(seen)")
        }
        for scope in model.seededScopes where response.text.contains(AccessModel.secret(scope)) {
            if model.canRead(generated.requester, scope) {
                tally.secretsSeen += 1
            } else {
                Issue.record("an answer carried data of `\(scope)`, which \(generated.requester ?? "nobody") cannot read: \(seen)")
            }
        }
        // A row's id alone, in an answer that was not asked about it, is a leak too. Pages and
        // live events are left to the secrets: the fuzz writes rows of seeded ids in its own
        // scopes and tables, and every seeded row carries its scope's secret.
        let asked = String(decoding: generated.request.body, as: UTF8.self) + generated.request.target
        let carriesRows = generated.operation == "POST /v1/pull" || generated.operation.hasPrefix("GET /v1/live")
        for row in rows
        where !carriesRows && !model.canRead(generated.requester, row.scope)
            && response.text.contains(row.rowID) && !asked.contains(row.rowID)
        {
            Issue.record("an answer named row \(row.rowID) of `\(row.scope)`, which \(generated.requester ?? "nobody") cannot read: \(seen)")
        }
        // A blob part (a range, or HEAD's offset) carries no whole secret: judged by status.
        if ["GET", "HEAD"].contains(generated.request.method), let scope = blobScope(generated.request.target),
            model.seededScopes.contains(scope), !model.canRead(generated.requester, scope)
        {
            #expect(!(200..<300).contains(response.status), "a blob of `\(scope)` was served to one who cannot read it: \(seen)")
        }
        if let scope = generated.memberScope, (200..<300).contains(response.status) {
            #expect(generated.requester.map { scope.hasSuffix("@\($0)") } == true, "a non-owner changed members: \(seen)")
        }
        return response
    }

    /// The scope a `/v1/blobs/{scope}/{sha256}` target names.
    static func blobScope(_ target: String) -> String? {
        let parts = target.split(separator: "?").first?.split(separator: "/", omittingEmptySubsequences: false) ?? []
        guard parts.count == 5, parts[1] == "v1", parts[2] == "blobs" else { return nil }
        return String(parts[3]).removingPercentEncoding
    }

    static func tokens(_ authority: TokenAuthority) async throws -> APIFuzzer.Tokens {
        let foreignAuthority = await TokenAuthority(secret: "another-secret-0123456789abcdef-0123456789")
        var tokens = APIFuzzer.Tokens(valid: [:], expired: [:], foreign: [:])
        for user in AccessModel.users {
            tokens.valid[user] = try await authority.mint(userID: user, lifetime: .seconds(600))
            tokens.expired[user] = try await authority.mint(userID: user, lifetime: .seconds(60), now: Date().addingTimeInterval(-3600))
            tokens.foreign[user] = try await foreignAuthority.mint(userID: user, lifetime: .seconds(600))
        }
        return tokens
    }

    struct Seeded: Sendable {
        var rows: [SeededRow] = []
        var blobs: [(scope: String, sha256: String)] = []
        var cursors: [String] = []
    }

    /// Five rows and a blob in each seeded scope, written through the API
    /// by the scope's owner, each carrying the scope's secret; and one pull
    /// per user, whose cursors the fuzz reuses as anyone.
    static func seed(_ store: any SyncStore, authority: TokenAuthority, model: AccessModel, port: Int) async throws -> Seeded {
        try await store.createScope("team:ab", owner: "alice")
        try await store.setMember("bob", role: .write, in: "team:ab")
        try await store.createScope("team:c", owner: "carol")
        var seeded = Seeded()
        for (index, scope) in model.seededScopes.enumerated() {
            let owner = scope.hasPrefix("user:") ? String(scope.dropFirst(5)) : model.owners[scope]!
            let token = try await authority.mint(userID: owner, lifetime: .seconds(600))
            var mutations: [Mutation] = []
            for number in 1...5 {
                let row = SeededRow(scope: scope, rowID: "seed\(index)-\(number)", title: "\(AccessModel.secret(scope)) #\(number)")
                seeded.rows.append(row)
                mutations.append(
                    Mutation(
                        mutationID: Int64(number), table: "note", rowID: row.rowID, scope: scope, operation: .upsert,
                        columns: ["title": .text(row.title)], baseVersion: nil,
                        hlc: HLCTimestamp(wallMilliseconds: Int64(Date().timeIntervalSince1970 * 1000), counter: UInt16(number))))
            }
            let push = try await RawHTTP.send(
                .init(
                    method: "POST", target: "/v1/push",
                    headers: [("Authorization", "Bearer \(token)"), ("Content-Type", "application/json")],
                    body: Array(try JSONEncoder().encode(PushRequest(clientID: "seed-\(index)", mutations: mutations)))),
                port: port)
            #expect(push.status == 200, "seeding \(scope): \(push.text)")
            let bytes = Array("\(AccessModel.secret(scope)) blob bytes".utf8)
            let sha = SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined()
            let upload = try await RawHTTP.send(
                .init(
                    method: "PUT", target: "/v1/blobs/\(APIFuzzer.encode(scope))/\(sha)",
                    headers: [
                        ("Authorization", "Bearer \(token)"), ("Content-Type", "application/octet-stream"),
                        ("Upload-Length", "\(bytes.count)"),
                    ], body: bytes), port: port)
            #expect(upload.status == 201, "seeding a blob in \(scope): \(upload.text)")
            seeded.blobs.append((scope, sha))
        }
        for user in AccessModel.users {
            let scopes = model.seededScopes.filter { model.canRead(user, $0) }.map { PullRequest.ScopeCursor(scope: $0) }
            let pull = try await RawHTTP.send(
                .init(
                    method: "POST", target: "/v1/pull",
                    headers: [("Authorization", "Bearer \(try await authority.mint(userID: user, lifetime: .seconds(600)))"), ("Content-Type", "application/json")],
                    body: Array(try JSONEncoder().encode(PullRequest(clientID: "seed-\(user)", scopes: scopes)))),
                port: port)
            #expect(pull.status == 200, "seeding a pull: \(pull.text)")
            var collector = APIFuzzer.CursorCollector()
            collector.collect(from: pull)
            seeded.cursors += collector.seen
        }
        return seeded
    }
}
