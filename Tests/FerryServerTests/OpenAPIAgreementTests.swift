@testable import FerryServer
import FerryProtocol
import Foundation
import Hummingbird
import HummingbirdTesting
import Testing

/// The server and its OpenAPI document agree: request bodies generated
/// from the document's schemas (read here with Foundation, apart from the
/// server's own reader) are accepted when they follow it and refused with
/// 400 when one value breaks it; every answer's status is one the
/// document lists for the operation, and its body matches the documented
/// schema.
@Suite struct OpenAPIAgreementTests {
    static let rounds = 800

    @Test func generatedRequestsGetTheAnswersTheDocumentPromises() async throws {
        // 1,600 requests in a few seconds: past the default rate limits, which would answer before the schema.
        let server = try await TestServer { $0.rateLimits = .unlimited }
        try await server.store.createScope("team:x", owner: "alice")
        let alice = try await server.token("alice")
        try await server.withClient { client in
            try await Self.exercise(client, token: alice)
        }
    }

    struct Operation {
        var method: HTTPRequest.Method
        var path: String
        var documented: String
        var schema: String
    }

    static func exercise(_ client: any TestClientProtocol, token: String) async throws {
        let document = try OpenAPIDocument.bundled()
        let root = try #require(try JSONSerialization.jsonObject(with: document.data) as? [String: Any])
        let components = try #require((root["components"] as? [String: Any])?["schemas"] as? [String: Any])
        let paths = try #require(root["paths"] as? [String: [String: Any]])
        var generator = SchemaGenerator(schemas: components, seed: 20261123)
        let checker = try RequestSchemas(document: document)
        let operations = [
            Operation(method: .post, path: "/v1/push", documented: "/v1/push", schema: "PushRequest"),
            Operation(method: .post, path: "/v1/pull", documented: "/v1/pull", schema: "PullRequest"),
            Operation(method: .post, path: "/v1/scopes", documented: "/v1/scopes", schema: "CreateScopeRequest"),
            Operation(method: .put, path: "/v1/scopes/team:x/members/bob", documented: "/v1/scopes/{scope}/members/{user}", schema: "MemberRequest"),
        ]
        var counts: [String: Int] = [:]
        for round in 0..<Self.rounds {
            let operation = operations[round % operations.count]
            let responses = try #require((paths[operation.documented]?[operation.method.rawValue.lowercased()] as? [String: Any])?["responses"] as? [String: Any])
            let valid = generator.valid(schemaNamed: operation.schema)
            #expect(checker.matches(try Self.strict(valid), operation.schema), "the generator made an invalid \(operation.schema)")

            let validText = try Self.text(valid)
            let accepted = try await client.send(operation.method, operation.path, token: token, json: validText)
            counts["\(operation.schema) valid → \(accepted.status.code)", default: 0] += 1
            #expect(responses[String(accepted.status.code)] != nil, "\(operation.schema): \(accepted.status.code) is not documented: \(accepted.text)")
            #expect(accepted.status != .badRequest, "a valid \(operation.schema) was refused: \(accepted.text)\n\(validText)")
            try Self.checkBody(accepted, against: responses, checker: checker)

            guard let (what, broken) = generator.broken(valid, schemaNamed: operation.schema) else { continue }
            #expect(!checker.matches(try Self.strict(broken), operation.schema), "\(what) still matches")
            let refused = try await client.send(operation.method, operation.path, token: token, json: try Self.text(broken))
            counts["\(operation.schema) broken → \(refused.status.code)", default: 0] += 1
            #expect(refused.status == .badRequest, "\(operation.schema) with \(what) got \(refused.status): \(refused.text)")
            try Self.checkBody(refused, against: responses, checker: checker)
        }
        print("OpenAPI agreement: \(counts.sorted { $0.key < $1.key })")
    }

    static func text(_ value: Any) throws -> String {
        String(decoding: try JSONSerialization.data(withJSONObject: value, options: [.fragmentsAllowed, .sortedKeys]), as: UTF8.self)
    }

    static func strict(_ value: Any) throws -> JSONValue {
        try StrictJSON.parse(Array(try text(value).utf8))
    }

    /// The body matches the schema documented for its status.
    static func checkBody(_ response: TestResponse, against responses: [String: Any], checker: RequestSchemas) throws {
        guard let documented = responses[String(response.status.code)] as? [String: Any],
            let content = (documented["content"] as? [String: Any])?["application/json"] as? [String: Any],
            let reference = (content["schema"] as? [String: Any])?["$ref"] as? String
        else { return }
        let name = String(reference.split(separator: "/").last!)
        let body = try StrictJSON.parse(Array(response.body.readableBytesView))
        #expect(checker.matches(body, name), "a \(response.status.code) body is not a \(name): \(response.text)")
    }
}

/// Random instances of the document's schemas, valid or broken in one place.
struct SchemaGenerator {
    let schemas: [String: Any]
    private var state: UInt64

    init(schemas: [String: Any], seed: UInt64) {
        self.schemas = schemas
        self.state = seed
    }

    mutating func next(_ bound: Int) -> Int {
        state = state &* 6364136223846793005 &+ 1442695040888963407
        return Int((state >> 33) % UInt64(max(bound, 1)))
    }

    mutating func chance(_ percent: Int) -> Bool { next(100) < percent }

    func resolve(_ schema: [String: Any]) -> [String: Any] {
        if let reference = schema["$ref"] as? String, let target = schemas[String(reference.split(separator: "/").last!)] as? [String: Any] {
            return resolve(target)
        }
        return schema
    }

    mutating func valid(schemaNamed name: String) -> Any {
        var value = valid(resolve(["$ref": "#/components/schemas/\(name)"]), name: name)
        // The rules the document states in words: ids from 1 without gaps, deletes without columns, each scope once, own namespace.
        if name == "PushRequest", var push = value as? [String: Any], var mutations = push["mutations"] as? [[String: Any]] {
            for index in mutations.indices {
                mutations[index]["mutationID"] = index + 1
                if chance(70) { mutations[index]["scope"] = "user:alice" }
                if mutations[index]["operation"] as? String == "delete" { mutations[index]["columns"] = [String: Any]() }
            }
            push["mutations"] = mutations
            push["clientID"] = "client-\(next(1_000_000))"
            value = push
        }
        if name == "PullRequest", var pull = value as? [String: Any], let scopes = pull["scopes"] as? [[String: Any]] {
            var seen: Set<String> = []
            pull["scopes"] = scopes.compactMap { scope -> [String: Any]? in
                var scope = scope
                scope["scope"] = chance(50) ? "user:alice" : scope["scope"]
                scope.removeValue(forKey: "cursor")
                scope.removeValue(forKey: "notices")
                return seen.insert(scope["scope"] as! String).inserted ? scope : nil
            }
            value = pull
        }
        if name == "CreateScopeRequest" {
            value = ["scope": "list\(next(1_000_000))@alice"]
        }
        return value
    }

    mutating func valid(_ schema: [String: Any], name: String = "") -> Any {
        let schema = resolve(schema)
        if let options = schema["oneOf"] as? [[String: Any]] {
            return valid(options[next(options.count)])
        }
        if let values = schema["enum"] as? [Any] {
            return values[next(values.count)]
        }
        // A pattern with groups (a real, a blob) is not one `string(matching:)` reads: its documented examples are.
        if let examples = schema["examples"] as? [Any], !examples.isEmpty {
            return examples[next(examples.count)]
        }
        let types = (schema["type"] as? [String]) ?? [(schema["type"] as? String) ?? "object"]
        switch types[next(types.count)] {
        case "null":
            return NSNull()
        case "boolean":
            return chance(50)
        case "integer":
            let least = (schema["minimum"] as? Int) ?? -1000
            let most = (schema["maximum"] as? Int) ?? (least + 100_000)
            return least + next(min(most - least + 1, 100_000))
        case "string":
            if let pattern = schema["pattern"] as? String { return string(matching: pattern) }
            let least = (schema["minLength"] as? Int) ?? 0
            return String((0..<(least + next(8))).map { _ in Character(Unicode.Scalar(UInt8(97 + next(26)))) })
        case "array":
            let least = (schema["minItems"] as? Int) ?? 0
            let most = min((schema["maxItems"] as? Int) ?? 4, least + 4)
            return (0..<(least + next(most - least + 1))).map { _ in valid(schema["items"] as? [String: Any] ?? [:]) }
        default:
            var object: [String: Any] = [:]
            let properties = schema["properties"] as? [String: [String: Any]] ?? [:]
            let required = Set(schema["required"] as? [String] ?? [])
            for (key, property) in properties.sorted(by: { $0.key < $1.key }) where required.contains(key) || chance(50) {
                object[key] = valid(property)
            }
            if let extra = schema["additionalProperties"] as? [String: Any] {
                let names = (schema["propertyNames"] as? [String: Any])?["pattern"] as? String ?? "^[a-z]{1,8}$"
                for _ in 0..<next(4) { object[string(matching: names)] = valid(extra) }
            }
            return object
        }
    }

    /// `value` with one place broken so the document forbids it, and what was broken.
    mutating func broken(_ value: Any, schemaNamed name: String) -> (String, Any)? {
        broken(value, schema: resolve(["$ref": "#/components/schemas/\(name)"]), path: name)
    }

    private mutating func broken(_ value: Any, schema: [String: Any], path: String) -> (String, Any)? {
        let schema = resolve(schema)
        // Sometimes go deeper, else break here.
        if var object = value as? [String: Any], let properties = schema["properties"] as? [String: [String: Any]], !object.isEmpty, chance(60) {
            let key = object.keys.sorted()[next(object.count)]
            if let property = properties[key], let (what, inner) = broken(object[key]!, schema: property, path: "\(path).\(key)") {
                object[key] = inner
                return (what, object)
            }
        }
        if var array = value as? [Any], !array.isEmpty, let items = schema["items"] as? [String: Any], chance(60) {
            let index = next(array.count)
            if let (what, inner) = broken(array[index], schema: items, path: "\(path).\(index)") {
                array[index] = inner
                return (what, array)
            }
        }
        var ways: [(String, Any)] = []
        if var object = value as? [String: Any] {
            if schema["additionalProperties"] as? Bool == false {
                object["unexpected"] = 1
                ways.append(("an extra property at \(path)", object))
            }
            if let required = (schema["required"] as? [String])?.first {
                var missing = value as! [String: Any]
                missing.removeValue(forKey: required)
                ways.append(("\(path) without `\(required)`", missing))
            }
        }
        if schema["oneOf"] == nil {
            let types = (schema["type"] as? [String]) ?? [(schema["type"] as? String) ?? "object"]
            if !types.contains("string") { ways.append(("a string at \(path)", "text")) }
            if !types.contains("array") { ways.append(("an array at \(path)", [1])) }
            if types.contains("integer") {
                ways.append(("1.5 at \(path)", 1.5))
                if let least = schema["minimum"] as? Int { ways.append(("\(least - 1) at \(path)", least - 1)) }
                if let most = schema["maximum"] as? Int { ways.append(("\(most + 1) at \(path)", most + 1)) }
            }
            if types.contains("string"), let pattern = schema["pattern"] as? String {
                for bad in ["", "has space", "slash/here", "é", String(repeating: "a", count: 300)] where !Self.matches(bad, pattern) {
                    ways.append(("\(String(reflecting: bad.prefix(12))) at \(path)", bad))
                }
            }
            if let values = schema["enum"] as? [String], !values.contains("bogus") { ways.append(("`bogus` at \(path)", "bogus")) }
        } else {
            ways.append(("an object of no documented form at \(path)", ["real": 1.5]))
            ways.append(("a boolean at \(path)", true))
        }
        return ways.isEmpty ? nil : ways[next(ways.count)]
    }

    static func matches(_ text: String, _ pattern: String) -> Bool {
        guard let expression = try? NSRegularExpression(pattern: pattern) else { return false }
        return expression.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)) != nil
    }

    /// A string matching an anchored pattern of character classes and
    /// literals with `{m,n}` counts: the only kind the document uses.
    mutating func string(matching pattern: String) -> String {
        var characters = Array(pattern.dropFirst().dropLast())  // ^ … $
        var output = ""
        while !characters.isEmpty {
            var choices: [Character] = []
            if characters[0] == "[" {
                let end = characters.firstIndex(of: "]")!
                let body = Array(characters[1..<end])
                characters.removeFirst(end + 1)
                var index = 0
                while index < body.count {
                    if index + 2 < body.count, body[index + 1] == "-" {
                        let low = body[index].unicodeScalars.first!.value, high = body[index + 2].unicodeScalars.first!.value
                        choices += (low...high).map { Character(Unicode.Scalar($0)!) }
                        index += 3
                    } else {
                        choices.append(body[index])
                        index += 1
                    }
                }
            } else {
                choices = [characters.removeFirst()]
            }
            var count = 1
            if characters.first == "{" {
                let end = characters.firstIndex(of: "}")!
                let bounds = String(characters[1..<end]).split(separator: ",").map { Int($0)! }
                characters.removeFirst(end + 1)
                let least = bounds[0], most = min(bounds.count > 1 ? bounds[1] : bounds[0], least + 12)
                count = least + next(most - least + 1)
            }
            for _ in 0..<count { output.append(choices[next(choices.count)]) }
        }
        return output
    }
}

/// The addresses every client builds (`SyncEndpoint`) are the document's
/// and the server's: each is documented with its method, and each reaches
/// its route (never 404 or 405) with parameters that need encoding.
@Suite struct SyncEndpointAgreementTests {
    @Test func everyEndpointIsDocumented() throws {
        let root = try #require(try JSONSerialization.jsonObject(with: OpenAPIDocument.bundled().data) as? [String: Any])
        let paths = try #require(root["paths"] as? [String: [String: Any]])
        for endpoint in SyncEndpoint.all {
            #expect(paths[endpoint.template]?[endpoint.method.rawValue.lowercased()] != nil, "\(endpoint) is not in openapi.json")
        }
    }

    @Test func everyEndpointReachesItsRouteWithEncodedParameters() async throws {
        let server = try await TestServer()
        let scope = "team:a+b@alice"
        try await server.store.createScope(scope, owner: "alice")
        let alice = try await server.token("alice")
        let blob = String(repeating: "a", count: 64)
        // What each answers when it reached its handler: a 404 from a handler names what it looked for.
        let endpoints: [(SyncEndpoint, String?, UInt, String)] = [
            (.push, #"{"clientID":"c","mutations":[]}"#, 200, ""),
            (.pull, #"{"clientID":"c","scopes":[{"scope":"user:alice"}]}"#, 200, ""),
            (.row(scope: scope, table: "note", rowID: "r/1?#%"), nil, 404, #"has no row \"r/1?#%\" in table `note`"#),
            (.blob(.get, scope: scope, sha256: blob), nil, 404, "scope `team:a+b@alice` has no blob"),
            (.scopes, nil, 200, scope),
            (.createScope, #"{"scope":"nb-1@alice"}"#, 201, ""),
            (.member(scope: scope, user: "b.o+b@x"), #"{"role":"read"}"#, 200, ""),
        ]
        try await server.withClient { client in
            for (endpoint, body, status, text) in endpoints {
                let response = try await client.send(HTTPRequest.Method(endpoint.method.rawValue)!, endpoint.path, token: alice, json: body)
                #expect(response.status.code == status && (text.isEmpty || response.text.contains(text)), "\(endpoint) answered \(response.status.code): \(response.text)")
            }
            let membership = try await server.store.membership(of: "b.o+b@x", in: scope)
            #expect(membership?.role == .read, "the member's id arrived intact")
        }
    }
}
