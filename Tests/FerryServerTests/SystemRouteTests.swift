@testable import FerryServer
import FerryProtocol
import Foundation
import Hummingbird
import HummingbirdTesting
import Testing

@Suite struct SystemRouteTests {
    @Test func theOpenAPIDocumentParsesAndCoversEveryRoute() async throws {
        let server = try await TestServer()
        let router = try await FerryApplication.makeRouter(configuration: server.configuration, store: server.store)
        let document = try OpenAPIDocument.bundled()
        let json = try #require(try JSONSerialization.jsonObject(with: document.data) as? [String: Any])
        #expect((json["openapi"] as? String)?.hasPrefix("3.") == true)
        let paths = try #require(json["paths"] as? [String: [String: Any]])
        #expect(router.routes.count >= 9)
        for route in router.routes {
            // Hummingbird writes `:scope`; OpenAPI writes `{scope}`.
            let path = route.path.description.split(separator: "/").map { $0.hasPrefix(":") ? "{\($0.dropFirst())}" : String($0) }
            let openAPIPath = "/" + path.joined(separator: "/")
            let operations = paths[openAPIPath]
            #expect(operations?[route.method.rawValue.lowercased()] != nil, "\(route) is missing from openapi.json")
        }
        // And the server serves exactly the committed document.
        try await server.withClient { client in
            let served = try await client.send(.get, "/openapi.json")
            #expect(served.status == .ok)
            #expect(Data(served.body.readableBytesView) == document.data)
        }
    }

    @Test func healthAndMetricsCountPushesPullsConflictsAndRejections() async throws {
        let server = try await TestServer { configuration in
            configuration.tables.rules["task"] = TableRule(
                policy: .serverWins,
                validator: MutationValidator { proposed in
                    proposed.mutation.columns["title"] == "" ? .reject(reason: "title required") : .accept
                })
        }
        let token = try await server.token("alice")
        try await server.withClient { client in
            #expect(try await client.send(.get, "/healthz").text == #"{"status":"ok"}"#)
            _ = try await client.send(
                .post, "/v1/push", token: token,
                body: PushRequest(
                    clientID: "c1",
                    mutations: [
                        Mutations.upsert(1, table: "task", ["title": "a"])
                    ]))
            let second = try await client.send(
                .post, "/v1/push", token: token,
                body: PushRequest(
                    clientID: "c2",
                    mutations: [
                        Mutations.upsert(1, table: "task", ["title": "b"], base: 0),
                        Mutations.upsert(2, row: "r2", table: "task", ["title": ""]),
                    ])
            ).decode(PushResponse.self)
            #expect(second.results.map(\.status) == [.conflict, .rejected])
            #expect(second.results[1].reason == "title required")
            _ = try await client.send(.post, "/v1/pull", token: token, json: #"{"clientID":"c1","scopes":[{"scope":"user:alice"}]}"#)
            _ = try await client.send(.post, "/v1/pull", token: nil, json: "{}")

            let metrics = try await client.send(.get, "/metrics")
            #expect(metrics.headers[.contentType]?.hasPrefix("text/plain") == true)
            let text = metrics.text
            for line in [
                #"ferry_http_requests_total{method="POST",route="/v1/push",status="200"} 2"#,
                #"ferry_http_requests_total{method="POST",route="/v1/pull",status="401"} 1"#,
                "ferry_pushes_total 2",
                #"ferry_push_mutations_total{status="conflict"} 1"#,
                #"ferry_push_mutations_total{status="rejected"} 1"#,
                "ferry_conflicts_total 1",
                "ferry_rejections_total 1",
                "ferry_pulls_total 1",
                "ferry_pulls_read_ahead_total 0",
            ] {
                #expect(text.contains(line), "missing \(line)")
            }
            #expect(text.contains(#"ferry_http_request_duration_seconds_bucket{method="POST",route="/v1/push",le="+Inf"} 2"#))
        }
    }
}
