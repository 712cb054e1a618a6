import FerryProtocol
import FerryServer
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOConcurrencyHelpers
import ServiceLifecycle

/// A webhook receiver on a real loopback socket: it checks each delivery's
/// signature, keeps what it got, and can be made to fail (as a receiver
/// that is down) until told otherwise.
final class WebhookReceiver: Sendable {
    static let secret = "webhook-secret-for-tests-0123456789"

    struct State {
        var deliveries: [WebhookDelivery] = []
        var badSignatures = 0
        var failing = false
        var refused = 0
    }

    private let state: NIOLockedValueBox<State>
    let port: Int
    private let group: ServiceGroup
    private let running: Task<Void, any Error>

    private init(port: Int, state: NIOLockedValueBox<State>, group: ServiceGroup, running: Task<Void, any Error>) {
        self.port = port
        self.state = state
        self.group = group
        self.running = running
    }

    static func start() async throws -> WebhookReceiver {
        let box = NIOLockedValueBox(State())
        let router = Router()
        router.post("/hook") { request, _ -> Response in
            let body = try await request.body.collect(upTo: 64 << 20)
            let bytes = Data(buffer: body)
            let now = Int64(Date().timeIntervalSince1970)
            let signed =
                request.headers[HTTPField.Name(WebhookSignature.headerName)!].map {
                    WebhookSignature.verify(header: $0, body: bytes, secret: secret, now: now, tolerance: 300)
                } ?? false
            let refuse = box.withLockedValue { state -> Bool in
                if !signed { state.badSignatures += 1 }
                if state.failing { state.refused += 1 }
                return state.failing
            }
            if refuse { return Response(status: .serviceUnavailable) }
            let delivery = try JSONDecoder().decode(WebhookDelivery.self, from: bytes)
            box.withLockedValue { $0.deliveries.append(delivery) }
            return Response(status: .noContent)
        }
        var logger = Logger(label: "webhook-receiver")
        logger.logLevel = .error
        let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
        let app = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { channel in continuation.yield(channel.localAddress?.port ?? 0) }, logger: logger)
        let group = ServiceGroup(configuration: .init(services: [app], gracefulShutdownSignals: [], logger: logger))
        let running = Task { try await group.run() }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next() else { throw CancellationError() }
        return WebhookReceiver(port: port, state: box, group: group, running: running)
    }

    /// What the receiver holds now.
    var current: State { state.withLockedValue { $0 } }

    /// Answers 503 to every delivery while `failing`.
    func setFailing(_ failing: Bool) {
        state.withLockedValue { $0.failing = failing }
    }

    var url: URL { URL(string: "http://127.0.0.1:\(port)/hook")! }

    func stop() async {
        await group.triggerGracefulShutdown()
        _ = try? await running.value
    }
}
