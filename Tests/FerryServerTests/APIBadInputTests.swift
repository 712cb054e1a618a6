@testable import FerryServer
import FerryProtocol
import Foundation
import Hummingbird
import HummingbirdTesting
import Testing

/// ARCHITECTURE.md server semantic 8: bad input gets a 4xx JSON error and changes nothing.
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
        // Standard JSON only, every object closed, every value exact.
        ("trailing comma in an array", #"{"clientID":"c1","mutations":[\#(object(id: 2)),]}"#),
        ("trailing comma in an object", #"{"clientID":"c1","mutations":[\#(object(id: 2))],}"#),
        ("comment", #"{"clientID":"c1", /* hi */ "mutations":[\#(object(id: 2))]}"#),
        ("single quotes", mutation("").replacingOccurrences(of: #""c1""#, with: "'c1'")),
        ("NaN", mutation("").replacingOccurrences(of: #"{"t":"x"}"#, with: #"{"t":NaN}"#)),
        ("leading zero", mutation("").replacingOccurrences(of: #""hlc":1"#, with: #""hlc":01"#)),
        ("repeated key", mutation(#","hlc":2"#)),
        ("unknown top-level property", #"{"clientID":"c1","mutations":[],"extra":1}"#),
        ("unknown mutation property", mutation(#","priority":1"#)),
        ("real as a number", mutation("").replacingOccurrences(of: #"{"t":"x"}"#, with: #"{"t":{"real":1.5}}"#)),
        ("real with another property", mutation("").replacingOccurrences(of: #"{"t":"x"}"#, with: #"{"t":{"real":"1.5","x":1}}"#)),
        ("blob with another property", mutation("").replacingOccurrences(of: #"{"t":"x"}"#, with: #"{"t":{"blob":"AA==","x":1}}"#)),
        ("real and blob together", mutation("").replacingOccurrences(of: #"{"t":"x"}"#, with: #"{"t":{"real":"1","blob":"AA=="}}"#)),
        ("id as 1.0", #"{"clientID":"c1","mutations":[\#(object(id: 2).replacingOccurrences(of: #""mutationID":2"#, with: #""mutationID":2.0"#))]}"#),
        ("id as 2e0", #"{"clientID":"c1","mutations":[\#(object(id: 2).replacingOccurrences(of: #""mutationID":2"#, with: #""mutationID":2e0"#))]}"#),
        ("integer value as 1.0", mutation("").replacingOccurrences(of: #"{"t":"x"}"#, with: #"{"t":1.0}"#)),
        ("hlc as 1e3", mutation("").replacingOccurrences(of: #""hlc":1"#, with: #""hlc":1e3"#)),
        ("deep nesting", #"{"clientID":"c1","mutations":\#(String(repeating: "[", count: 5000))\#(String(repeating: "]", count: 5000))}"#),
        ("lone surrogate", mutation("").replacingOccurrences(of: #"{"t":"x"}"#, with: #"{"t":"\ud800"}"#)),
        ("control character", mutation("").replacingOccurrences(of: #"{"t":"x"}"#, with: "{\"t\":\"a\u{01}b\"}")),
        ("space in row id", mutation("").replacingOccurrences(of: #""r9""#, with: #""r 9""#)),
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
            #expect(try tooMany.decode(ErrorResponse.self).message.contains("`mutations` has 11 items; at most 10 are allowed"))

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
    /// A body is read only as JSON: `Content-Type: application/json`
    /// (with or without a charset), or 415.
    @Test func aBodyThatIsNotDeclaredJSONIs415() async throws {
        let server = try await TestServer()
        let token = try await server.token("alice")
        let body = ByteBuffer(string: Self.mutation(""))
        try await server.withClient { client in
            for contentType: String? in [nil, "text/plain", "application/x-www-form-urlencoded", "application/jsonx"] {
                var headers: HTTPFields = [.authorization: "Bearer \(token)"]
                if let contentType { headers[.contentType] = contentType }
                let response = try await client.execute(uri: "/v1/push", method: .post, headers: headers, body: body)
                #expect(response.status == .unsupportedMediaType, "\(contentType ?? "none")")
                #expect(try response.decode(ErrorResponse.self).code == .unsupportedMediaType)
            }
            for contentType in ["application/json", "application/json; charset=utf-8", "Application/JSON"] {
                let response = try await client.execute(
                    uri: "/v1/pull", method: .post, headers: [.authorization: "Bearer \(token)", .contentType: contentType],
                    body: ByteBuffer(string: #"{"clientID":"c1","scopes":[{"scope":"user:alice"}]}"#))
                #expect(response.status == .ok, "\(contentType)")
            }
        }
    }

    /// Percent-encoded path parameters are decoded; an owner cannot set her
    /// own role; a method a route does not have is 405.
    @Test func pathsAreDecodedOwnersKeepTheirRoleAndWrongMethodsAre405() async throws {
        let server = try await TestServer()
        try await server.store.createScope("team:x", owner: "olga")
        let olga = try await server.token("olga")
        try await server.withClient { client in
            let encoded = try await client.send(.put, "/v1/scopes/team%3Ax/members/frank", token: olga, json: #"{"role":"write"}"#)
            #expect(encoded.status == .ok, "\(encoded.text)")
            #expect(try await server.store.membership(of: "frank", in: "team:x")?.role == .write)
            let herself = try await client.send(.put, "/v1/scopes/team:x/members/olga", token: olga, json: #"{"role":"read"}"#)
            #expect(herself.status == .badRequest)
            #expect(try await server.store.membership(of: "olga", in: "team:x")?.owner == true)
            for method in [HTTPRequest.Method.trace, .delete, .patch] {
                let response = try await client.send(method, "/healthz", token: nil)
                #expect(response.status == .methodNotAllowed, "\(method)")
            }
        }
    }
}
