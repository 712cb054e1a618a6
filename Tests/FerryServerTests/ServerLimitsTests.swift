@testable import FerryServer
import FerryProtocol
import Foundation
import Hummingbird
import HummingbirdTesting
import Testing

/// The limits live in one place, the configuration: the document the server
/// serves and validates with states them, so a limit can be raised as well
/// as lowered.
@Suite struct ServerLimitsTests {
    @Test func theCommittedDocumentStatesTheDefaultLimits() throws {
        let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../Sources/FerryServer/OpenAPI/openapi.json").standardized
        let committed = try StrictJSON.parse(Array(try Data(contentsOf: file)))
        for placement in LimitPlacement.all {
            #expect(
                try committed.value(at: placement.path) == .number(String(placement.limit(ServerLimits()))),
                "\(placement.path.joined(separator: ".")) is not the default")
        }
    }

    @Test func otherLimitsAreWrittenInAndNothingElseChanges() throws {
        var limits = ServerLimits()
        limits.maxMutationsPerPush = 2500
        limits.maxColumnsPerMutation = 17
        limits.maxScopesPerRequest = 3
        limits.maxPullLimit = 20_000
        let defaults = try StrictJSON.parse(Array(try OpenAPIDocument.bundled().data))
        var expected = defaults
        for placement in LimitPlacement.all {
            try expected.set(.number(String(placement.limit(limits))), at: placement.path)
        }
        let configured = try StrictJSON.parse(Array(try OpenAPIDocument.bundled(limits: limits).data))
        #expect(configured == expected)
        #expect(try configured.value(at: ["components", "schemas", "PushRequest", "properties", "mutations", "maxItems"]) == .number("2500"))
        #expect(try configured.value(at: ["paths", "/v1/live", "get", "parameters", "name=scope", "schema", "maxItems"]) == .number("3"))
    }

    @Test func writtenJSONReadsBackTheSame() throws {
        let document = try StrictJSON.parse(Array(try OpenAPIDocument.bundled().data))
        for indent in [nil, 2] as [Int?] {
            #expect(try StrictJSON.parse(Array(document.json(indent: indent).utf8)) == document)
        }
        let tricky = JSONValue.object(["a\"\\": .string("\u{1}\n\t\r é"), "n": .number("1.50"), "e": .array([]), "o": .object([:])])
        #expect(tricky.json(indent: nil) == #"{"a\"\\":"\u0001\n\t\r é","e":[],"n":1.50,"o":{}}"#)
        #expect(try StrictJSON.parse(Array(tricky.json().utf8)) == tricky)
    }

    @Test func aPushLimitAboveAThousandWorks() async throws {
        let server = try await TestServer { configuration in
            configuration.limits.maxMutationsPerPush = 1500
        }
        let token = try await server.token("alice")
        try await server.withClient { client in
            let served = try await client.send(.get, "/openapi.json", token: nil)
            let document = try StrictJSON.parse(Array(served.body.readableBytesView))
            #expect(try document.value(at: ["components", "schemas", "PushRequest", "properties", "mutations", "maxItems"]) == .number("1500"))

            let push = PushRequest(clientID: "c1", mutations: (1...1200).map { Mutations.upsert(Int64($0), row: "r\($0)", ["t": "x"]) })
            let applied = try await client.send(.post, "/v1/push", token: token, body: push)
            #expect(applied.status == .ok, "\(applied.text.prefix(300))")
            #expect(try applied.decode(PushResponse.self).lastAppliedMutationID == 1200)

            let tooMany = PushRequest(clientID: "c2", mutations: (1...1501).map { Mutations.upsert(Int64($0), row: "s\($0)", ["t": "x"]) })
            let refused = try await client.send(.post, "/v1/push", token: token, body: tooMany)
            #expect(refused.status == .badRequest)
            #expect(try refused.decode(ErrorResponse.self).message.contains("at most 1500 are allowed"))
        }
    }
}
