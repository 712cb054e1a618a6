import FerryProtocol
@testable import FerryServer
import Foundation
import Testing
import FerryTestSupport

/// Webhooks against a receiver on a real socket: every change at least
/// once, signed; a receiver down for a while gets everything once back; a
/// restart resumes from the stored cursor; one that keeps failing is
/// parked, visible, and replayed.
@Suite(.postgresTurns, .serialized)
struct WebhookTests {
    static func hook(_ receiver: WebhookReceiver, maxFailures: Int = 1000) -> (inout FerryServerConfiguration) -> Void {
        { configuration in
            SyncServer.withAdmin(&configuration)
            var hook = try! WebhookConfiguration(name: "notify", url: receiver.url, secret: WebhookReceiver.secret)
            hook.batchSize = 4
            hook.initialBackoff = .milliseconds(20)
            hook.maxBackoff = .milliseconds(200)
            hook.maxFailures = maxFailures
            configuration.webhooks = [hook]
        }
    }

    static func write(_ admin: AdminClient, _ ids: Range<Int>) async throws {
        for id in ids {
            _ = try await admin.write(
                BackendWriteRequest(
                    writer: "test", requestID: "r\(id)",
                    writes: [BackendWrite(scope: "user:alice", table: "note", rowID: "n\(id)", columns: ["title": .text("t\(id)")])]))
        }
    }

    /// The rows the receiver has seen, by id.
    static func delivered(_ receiver: WebhookReceiver) -> Set<String> {
        Set(receiver.current.deliveries.flatMap(\.changes).map(\.rowID))
    }

    @Test(arguments: StoreKind.available)
    func everyChangeArrivesThroughAnOutageAndARestart(kind: StoreKind) async throws {
        let receiver = try await WebhookReceiver.start()
        let directory = try TemporaryDirectory()
        // Outlives both servers: the second starts on the first's store.
        let database = kind == .postgres ? try await PostgresTestDatabase.create() : nil
        var server = try await SyncServer.start(in: directory, store: kind, sharing: database, configure: Self.hook(receiver))
        do {
            try await Self.write(server.admin, 0..<10)
            #expect(try await eventually(within: .seconds(20)) { Self.delivered(receiver).count == 10 })

            // Down for a while: refused deliveries, retried with backoff.
            receiver.setFailing(true)
            try await Self.write(server.admin, 10..<20)
            #expect(try await eventually(within: .seconds(20)) { receiver.current.refused >= 3 })
            receiver.setFailing(false)
            #expect(try await eventually(within: .seconds(20)) { Self.delivered(receiver).count == 20 })

            // A restart mid-stream: writes while it is down are delivered by the next process.
            receiver.setFailing(true)
            try await Self.write(server.admin, 20..<26)
            await server.stop()
            receiver.setFailing(false)
            server = try await SyncServer.start(in: directory, store: kind, sharing: database, configure: Self.hook(receiver))
            try await Self.write(server.admin, 26..<30)
            #expect(try await eventually(within: .seconds(30)) { Self.delivered(receiver).count == 30 })
            #expect(receiver.current.badSignatures == 0)
            let status = try await server.admin.send(.GET, "/admin/v1/webhooks").decode(WebhookList.self)
            #expect(status.webhooks.map(\.name) == ["notify"] && status.webhooks[0].parked == false)
        } catch {
            await server.stop()
            await receiver.stop()
            try? await database?.drop()
            throw error
        }
        await server.stop()
        await receiver.stop()
        try? await database?.drop()
    }

    /// Two instances on one PostgreSQL database, each configured with the
    /// webhook and taking writes: one delivers at a time (the lease), so
    /// every change arrives once, in order, whichever instance wrote it.
    @Test(.enabled(if: PostgresTestDatabase.shouldRun))
    func twoInstancesAreOneDeliveryPipeline() async throws {
        let receiver = try await WebhookReceiver.start()
        let first = try await SyncServer.start(store: .postgres, configure: Self.hook(receiver))
        var instances = [first]
        do {
            instances.append(try await SyncServer.start(store: .postgres, sharing: first.postgres, configure: Self.hook(receiver)))
            for round in 0..<10 {
                try await Self.write(instances[round % 2].admin, (round * 3)..<(round * 3 + 3))
            }
            #expect(try await eventually(within: .seconds(30)) { Self.delivered(receiver).count == 30 })
            try await Task.sleep(for: .milliseconds(300))
            let rows = receiver.current.deliveries.flatMap(\.changes).map(\.rowID)
            #expect(rows.count == 30, "each change once: \(rows.count) deliveries of 30 rows")
            let versions = receiver.current.deliveries.flatMap(\.changes).map(\.version)
            #expect(versions == versions.sorted(), "in commit order")
            #expect(receiver.current.badSignatures == 0)
        } catch {
            for instance in instances.reversed() { await instance.stop() }
            await receiver.stop()
            throw error
        }
        for instance in instances.reversed() { await instance.stop() }
        await receiver.stop()
    }

    @Test func aReceiverThatKeepsFailingIsParkedUntilReplayed() async throws {
        let receiver = try await WebhookReceiver.start()
        receiver.setFailing(true)
        try await SyncServer.with(.sqlite, configure: Self.hook(receiver, maxFailures: 3)) { server in
            try await Self.write(server.admin, 0..<3)
            #expect(
                try await eventually(within: .seconds(20)) {
                    (try? await server.admin.send(.GET, "/admin/v1/webhooks").decode(WebhookList.self).webhooks.first?.parked) == true
                })
            let refused = receiver.current.refused
            #expect(refused == 3)
            let metrics = try await AdminClient(port: server.port).send(.GET, "/metrics").text
            #expect(metrics.contains(#"ferry_webhook_parked{webhook="notify"} 1"#))
            try await Task.sleep(for: .milliseconds(500))
            #expect(receiver.current.refused == refused, "a parked webhook sends nothing")

            receiver.setFailing(false)
            let replay = try await server.admin.send(.POST, "/admin/v1/webhooks/notify/replay", json: "{}")
            #expect(replay.status == 200)
            #expect(try await eventually(within: .seconds(20)) { Self.delivered(receiver).count == 3 })
            // From the beginning again: at least once, so the receiver sees them twice.
            #expect(try await server.admin.send(.POST, "/admin/v1/webhooks/notify/replay", json: #"{"from":"beginning"}"#).status == 200)
            #expect(try await eventually(within: .seconds(20)) { receiver.current.deliveries.flatMap(\.changes).count == 6 })
            #expect(try await server.admin.send(.POST, "/admin/v1/webhooks/nope/replay", json: "{}").status == 404)
            #expect(try await server.admin.send(.POST, "/admin/v1/webhooks/notify/replay", json: #"{"from":"cursor"}"#).status == 400)
        }
        await receiver.stop()
    }
}
