@testable import FerryServer
import FerryProtocol
import Foundation
import Hummingbird
import HummingbirdTesting
import Testing

/// DESIGN.md server semantic 8: bad input gets a 4xx JSON error and changes nothing.
@Suite struct APIBadInputTests {
    static func object(id: Int, _ fields: String = "") -> String {
        #"{"mutationID":\#(id),"table":"note","rowID":"r9","scope":"user:alice","operation":"upsert","columns":{"t":"x"},"hlc":1\#(fields)}"#
    }

    static func mutation(_ fields: String) -> String {
        #"{"clientID":"c1","mutations":[\#(object(id: 2, fields))]}"#
    }

    static let pushes: [(String, String)] = [
        ("not JSON", "{bad"),
        ("empty body", ""),
        ("array", "[]"),
        ("missing clientID", #"{"mutations":[]}"#),
        ("mutationID as string", #"{"clientID":"c1","mutations":[{"mutationID":"2","table":"note","rowID":"r","scope":"user:alice","operation":"upsert","columns":{},"hlc":1}]}"#),
        ("unknown operation", mutation("").replacingOccurrences(of: "upsert", with: "merge")),
        ("table with SQL", mutation("").replacingOccurrences(of: #""note""#, with: #""note; DROP TABLE rows; --""#)),
        ("table with quote", mutation("").replacingOccurrences(of: #""note""#, with: #""no\"te""#)),
        ("column with SQL", mutation("").replacingOccurrences(of: #"{"t":"x"}"#, with: #"{"t) VALUES(1);--":"x"}"#)),
        ("bare real", mutation("").replacingOccurrences(of: #"{"t":"x"}"#, with: #"{"t":1.5}"#)),
        ("integer overflow", mutation("").replacingOccurrences(of: #"{"t":"x"}"#, with: #"{"t":9223372036854775808}"#)),
        ("bad blob", mutation("").replacingOccurrences(of: #"{"t":"x"}"#, with: #"{"t":{"blob":"@@"}}"#)),
        ("negative base", mutation(#","baseVersion":-1"#)),
        ("negative hlc", mutation("").replacingOccurrences(of: #""hlc":1"#, with: #""hlc":-5"#)),
        ("bad scope", mutation("").replacingOccurrences(of: "user:alice", with: "user alice'")),
        ("empty row id", mutation("").replacingOccurrences(of: #""r9""#, with: #""""#)),
        ("delete with columns", mutation("").replacingOccurrences(of: "upsert", with: "delete")),
        ("repeated ids", #"{"clientID":"c1","mutations":[\#(object(id: 2)),\#(object(id: 2))]}"#),
        ("decreasing ids", #"{"clientID":"c1","mutations":[\#(object(id: 3)),\#(object(id: 2))]}"#),
        ("zero id", #"{"clientID":"c1","mutations":[\#(object(id: 0))]}"#),
        ("bad client id", mutation("").replacingOccurrences(of: #""c1""#, with: #""c1/../x""#)),
    ]

    @Test func malformedPushesAre4xxJSONAndChangeNothing() async throws {
        let server = try await TestServer()
        _ = try await server.store.push(PushRequest(clientID: "c1", mutations: [Mutations.upsert(1, ["t": "a"])]), userID: "alice", rules: PushRules())
        let token = try await server.token("alice")
        let before = try await server.digest()
        try await server.withClient { client in
            for (name, body) in Self.pushes {
                let response = try await client.send(.post, "/v1/push", token: token, json: body)
                #expect(response.status == .badRequest, "\(name): \(response.status) \(response.text)")
                let error = try? response.decode(ErrorResponse.self)
                #expect(error?.code == .badRequest, "\(name): \(response.text)")
            }
        }
        #expect(try await server.digest() == before)
    }

    @Test func sizeLimitsHold() async throws {
        let server = try await TestServer { configuration in
            configuration.limits.maxBodyBytes = 64 * 1024
            configuration.limits.maxMutationsPerPush = 10
        }
        let token = try await server.token("alice")
        let before = try await server.digest()
        try await server.withClient { client in
            let huge = PushRequest(clientID: "c1", mutations: [Mutations.upsert(1, ["t": .text(String(repeating: "x", count: 100_000))])])
            let tooLarge = try await client.send(.post, "/v1/push", token: token, body: huge)
            #expect(tooLarge.status == .contentTooLarge)
            #expect(try tooLarge.decode(ErrorResponse.self).code == .payloadTooLarge)

            let many = PushRequest(clientID: "c1", mutations: (1...11).map { Mutations.upsert(Int64($0), row: "r\($0)", ["t": "x"]) })
            let tooMany = try await client.send(.post, "/v1/push", token: token, body: many)
            #expect(tooMany.status == .badRequest)
            #expect(try tooMany.decode(ErrorResponse.self).message.contains("at most 10 mutations"))

            for limit in ["-1", "0", "5001", "99999999999999999999", "\"10\""] {
                let response = try await client.send(.post, "/v1/pull", token: token, json: #"{"clientID":"c1","scopes":[{"scope":"user:alice"}],"limit":\#(limit)}"#)
                #expect(response.status == .badRequest, "limit \(limit)")
            }
            let scopes = (0...64).map { #"{"scope":"team:s\#($0)"}"# }.joined(separator: ",")
            #expect(try await client.send(.post, "/v1/pull", token: token, json: #"{"clientID":"c1","scopes":[\#(scopes)]}"#).status == .badRequest)
            #expect(try await client.send(.post, "/v1/pull", token: token, json: #"{"clientID":"c1","scopes":[]}"#).status == .badRequest)
        }
        #expect(try await server.digest() == before)
    }

    @Test func forgedAndGarbledCursorsAre400() async throws {
        let server = try await TestServer()
        let token = try await server.token("alice")
        _ = try await server.store.push(PushRequest(clientID: "c1", mutations: [Mutations.upsert(1, ["t": "a"])]), userID: "alice", rules: PushRules())
        let real = try await server.store.pull(PullRequest(clientID: "c1", scopes: [.init(scope: "user:alice")]), userID: "alice", limit: 10).pages[0].cursor
        // Same payload, position edited, signature kept.
        let parts = real.split(separator: ".")
        var payload = String(decoding: Data(base64Encoded: String(parts[0]) + String(repeating: "=", count: (4 - parts[0].count % 4) % 4))!, as: UTF8.self)
        payload = payload.replacingOccurrences(of: "|1|0", with: "|0|0")
        let edited = Data(payload.utf8).base64EncodedString().replacingOccurrences(of: "=", with: "") + "." + parts[1]
        try await server.withClient { client in
            for cursor in [edited, "garbage", String(repeating: "A", count: 2000), "\(parts[0]).", "🙂"] {
                let response = try await client.send(.post, "/v1/pull", token: token, body: PullRequest(clientID: "c1", scopes: [.init(scope: "user:alice", cursor: cursor)]))
                #expect(response.status == .badRequest, "\(cursor.prefix(20))")
                #expect(try response.decode(ErrorResponse.self).code == .badRequest)
            }
            // A real cursor used for another scope the user can read.
            try await server.store.createScope("team:mine", owner: "alice")
            let crossed = try await client.send(.post, "/v1/pull", token: token, body: PullRequest(clientID: "c1", scopes: [.init(scope: "team:mine", cursor: real)]))
            #expect(crossed.status == .badRequest)
        }
    }

    @Test func unknownRoutesAndMethodsAreJSON4xx() async throws {
        let server = try await TestServer()
        try await server.withClient { client in
            for (method, path) in [(HTTPRequest.Method.get, "/nope"), (.delete, "/healthz"), (.get, "/v1/push"), (.get, "/v2/pull")] {
                let response = try await client.send(method, path, token: nil)
                #expect((400..<500).contains(response.status.code), "\(method) \(path)")
                #expect((try? response.decode(ErrorResponse.self)) != nil)
            }
        }
    }
}
