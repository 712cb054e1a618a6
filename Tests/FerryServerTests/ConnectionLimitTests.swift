@testable import FerryServer
import FerryProtocol
import Foundation
import Hummingbird
import HummingbirdTesting
import Testing
import FerryTestSupport

/// Hostile and careless clients on a real socket: slow headers, slow
/// bodies, idle connections, too many connections, too many live streams,
/// clients that hang up. Timeouts are shortened so the tests run quickly.
@Suite struct ConnectionLimitTests {
    static func shortTimeouts(_ configuration: inout FerryServerConfiguration) {
        configuration.connections.headerReadTimeout = .milliseconds(300)
        configuration.connections.bodyReadTimeout = .milliseconds(300)
        configuration.connections.idleTimeout = .milliseconds(600)
    }

    static func live(_ token: String, scope: String) -> String {
        "GET /v1/live?scope=\(scope) HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(token)\r\n\r\n"
    }

    @Test func slowHeadersSlowBodiesAndIdleConnectionsAreClosed() async throws {
        let server = try await TestServer(configure: Self.shortTimeouts)
        let token = try await server.token("alice")
        let app = try await server.application()
        try await app.test(.live) { client in
            let port = try #require(client.port)
            // A head sent a byte every 50 ms: the deadline runs from its first byte, later bytes do not renew it.
            let slowHead = try RawConnection(port: port)
            let start = ContinuousClock.now
            var headClosed = false
            for byte in "POST /v1/push HTTP/1.1\r\nHost: x\r\nX-Padding: \(String(repeating: "a", count: 100))".map(String.init) {
                guard slowHead.send(byte), !slowHead.read(for: .milliseconds(50)).closed else {
                    headClosed = true
                    break
                }
            }
            #expect(headClosed, "a head trickled for \(ContinuousClock.now - start) was not cut off")
            #expect(ContinuousClock.now - start < .seconds(2))

            let slowBody = try RawConnection(port: port)
            slowBody.send("POST /v1/push HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(token)\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"clientID\"")
            let idle = try RawConnection(port: port)
            let keptAlive = try RawConnection(port: port)
            keptAlive.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(keptAlive.read(for: .seconds(2), untilContains: "\"ok\"").text.hasPrefix("HTTP/1.1 200"))

            for (name, connection) in [("slow body", slowBody), ("idle", idle), ("kept alive", keptAlive)] {
                let closedAfter = connection.waitForClose(within: .seconds(5))
                #expect(closedAfter != nil, "the \(name) connection stayed open")
            }
            // A quick client is untouched by all this.
            let quick = try RawConnection(port: port)
            quick.send("GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            #expect(quick.read(for: .seconds(2)).text.hasPrefix("HTTP/1.1 200"))
        }
        let metrics = server.metrics.render()
        #expect(metrics.contains(#"ferry_connection_timeouts_total{phase="readingHead"} 1"#), "\(metrics)")
        #expect(metrics.contains(#"ferry_connection_timeouts_total{phase="readingBody"} 1"#), "\(metrics)")
        #expect(metrics.contains(#"ferry_connection_timeouts_total{phase="idle"} "#), "\(metrics)")
        #expect(!metrics.contains(#"status="500""#))
    }

    /// Past the connection cap a connection gets a 503 at once and is
    /// closed; the server serves again as soon as one goes.
    @Test func connectionsPastTheCapAreRefusedAtOnce() async throws {
        let server = try await TestServer { $0.connections.maxConnections = 4 }
        let app = try await server.application()
        try await app.test(.live) { client in
            let port = try #require(client.port)
            // Open connections until one is refused; the test client may hold one of the four itself.
            var held: [RawConnection] = []
            var answer = (text: "", closed: false)
            for _ in 0..<6 {
                let connection = try RawConnection(port: port)
                answer = connection.read(for: .milliseconds(300))
                if answer.text.hasPrefix("HTTP/1.1 503") { break }
                held.append(connection)
            }
            #expect((3...4).contains(held.count), "\(held.count) connections were accepted under a cap of 4")
            #expect(answer.text.hasPrefix("HTTP/1.1 503"), "\(answer.text)")
            #expect(answer.text.contains(#""code":"unavailable""#))
            #expect(answer.closed)

            held.removeFirst().close()
            #expect(
                try await eventually(within: .seconds(2)) {
                    let again = try RawConnection(port: port)
                    again.send("GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                    return again.read(for: .seconds(1)).text.hasPrefix("HTTP/1.1 200")
                })
            held.removeAll()
        }
        #expect(server.metrics.render().contains("ferry_refused_connections_total "))
    }

    /// One user may hold only so many live streams (429 past it, and the
    /// connection closes); others are not affected; a stream whose client
    /// goes away is released at once, not at the next heartbeat.
    @Test func liveStreamsAreCappedPerUserAndReleasedWhenTheClientGoes() async throws {
        let server = try await TestServer {
            $0.connections.maxLiveStreamsPerUser = 2
            $0.liveHeartbeat = .seconds(60)
        }
        let alice = try await server.token("alice")
        let bob = try await server.token("bob")
        let app = try await server.application()
        try await app.test(.live) { client in
            let port = try #require(client.port)
            func open(_ token: String, _ scope: String) throws -> (RawConnection, String) {
                let connection = try RawConnection(port: port)
                connection.send(Self.live(token, scope: scope))
                return (connection, connection.read(for: .seconds(2), untilContains: "event: ready").text)
            }
            let (first, firstReply) = try open(alice, "user:alice")
            let (second, _) = try open(alice, "user:alice")
            #expect(firstReply.hasPrefix("HTTP/1.1 200") && firstReply.contains("event: ready"))
            let (third, thirdReply) = try open(alice, "user:alice")
            #expect(thirdReply.hasPrefix("HTTP/1.1 429"), "\(thirdReply)")
            #expect(thirdReply.contains(#""code":"tooManyRequests""#))
            #expect(third.waitForClose(within: .seconds(2)) != nil)
            let (bobs, bobReply) = try open(bob, "user:bob")
            #expect(bobReply.contains("event: ready"))

            first.close()
            #expect(try await eventually(within: .seconds(1)) { server.store.changeFeed.subscriberCount == 2 })
            let (again, againReply) = try open(alice, "user:alice")
            #expect(againReply.contains("event: ready"))

            for connection in [second, bobs, again] { connection.close() }
            #expect(try await eventually(within: .seconds(1)) { server.store.changeFeed.subscriberCount == 0 })
            #expect(
                try await eventually(within: .seconds(1)) {
                    server.metrics.render().contains("ferry_live_subscribers 0")
                })
        }
    }

    /// A client that hangs up halfway through its body is its own event:
    /// counted as `client_closed`, never as a 500.
    @Test func aClientHangingUpMidBodyIsNotAServerError() async throws {
        let server = try await TestServer()
        let token = try await server.token("alice")
        let app = try await server.application()
        try await app.test(.live) { client in
            let port = try #require(client.port)
            let connection = try RawConnection(port: port)
            connection.send("POST /v1/push HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(token)\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"clientID\":")
            try await Task.sleep(for: .milliseconds(100))
            connection.close()
            #expect(
                try await eventually(within: .seconds(2)) {
                    server.metrics.render().contains(#"ferry_http_requests_total{method="POST",route="/v1/push",status="client_closed"} 1"#)
                }, "\(server.metrics.render())")
        }
        #expect(!server.metrics.render().contains(#"status="500""#))
    }

    /// A body that is not valid HTTP (a bad chunk size) from a client still
    /// connected is its mistake, answered 400, not a hang-up.
    @Test func aMalformedChunkedBodyIs400() async throws {
        let server = try await TestServer()
        let token = try await server.token("alice")
        let app = try await server.application()
        try await app.test(.live) { client in
            let port = try #require(client.port)
            let connection = try RawConnection(port: port)
            connection.send("POST /v1/push HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(token)\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n")
            let answer = connection.read(for: .seconds(2), untilContains: "\r\n").text
            #expect(answer.hasPrefix("HTTP/1.1 400"), "\(answer)")
        }
        #expect(!server.metrics.render().contains(#"status="client_closed""#))
    }
}
