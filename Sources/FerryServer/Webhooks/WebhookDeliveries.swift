import AsyncHTTPClient
import FerryProtocol
import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import ServiceLifecycle

/// Delivers the change feed to every configured webhook: batches POSTed in
/// order, signed (``WebhookSignature``), retried with backoff, the cursor
/// stored after each delivered batch — so a restart resumes where it
/// stopped, and a receiver gets every change at least once.
///
/// One delivery pipeline per webhook whichever instance runs it: an
/// instance delivers only while it holds the webhook's lease in the store,
/// renewed on every step, and records a batch only if it still holds it.
/// A receiver that fails ``WebhookConfiguration/maxFailures`` times in a row
/// is parked until ``replay(_:from:)``.
public final class WebhookDeliveries: Service, Sendable {
    let store: any SyncStore
    let webhooks: [WebhookConfiguration]
    let metrics: ServerMetrics
    let logger: Logger
    let now: @Sendable () -> Date
    /// How long a lease lasts without renewal: how soon another instance
    /// takes over from one that died.
    let lease: Duration
    /// This process, as a lease holder.
    let holder = UUID().uuidString
    /// Per webhook: news in the store (or a replay) wakes an idle loop; only
    /// a replay cuts a backoff short; shutdown ends both waits.
    private let news: [String: Doorbell]
    private let replays: [String: Doorbell]

    public init(
        store: any SyncStore, webhooks: [WebhookConfiguration], metrics: ServerMetrics, logger: Logger,
        lease: Duration = .seconds(30), now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.store = store
        self.webhooks = webhooks
        self.metrics = metrics
        self.logger = logger
        self.lease = lease
        self.now = now
        news = Dictionary(uniqueKeysWithValues: webhooks.map { ($0.name, Doorbell()) })
        replays = Dictionary(uniqueKeysWithValues: webhooks.map { ($0.name, Doorbell()) })
    }

    public func run() async throws {
        guard !webhooks.isEmpty else {
            try? await gracefulShutdown()
            return
        }
        // A webhook's URL is the one it was given: no redirect takes a delivery elsewhere (or off https).
        var clientConfiguration = HTTPClient.Configuration()
        clientConfiguration.redirectConfiguration = .disallow
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: clientConfiguration)
        let subscription = store.changeFeed.subscribe(to: nil)
        await withGracefulShutdownHandler {
            await withTaskGroup(of: Void.self) { group in
                group.addTask {
                    for await _ in subscription.changes { for bell in self.news.values { bell.ring() } }
                }
                for webhook in webhooks {
                    group.addTask {
                        await self.deliver(webhook, client: client, news: self.news[webhook.name]!, replays: self.replays[webhook.name]!)
                    }
                }
                // Every webhook's loop ends at shutdown; then the news relay.
                for _ in webhooks { await group.next() }
                group.cancelAll()
            }
        } onGracefulShutdown: {
            for bell in Array(self.news.values) + self.replays.values { bell.close() }
        }
        try? await client.shutdown()
    }

    /// The configured webhooks with their delivery state.
    public func status() async throws -> [WebhookStatus] {
        let states = Dictionary(uniqueKeysWithValues: try await store.webhookStates().map { ($0.name, $0) })
        return webhooks.map { webhook in
            let state = states[webhook.name] ?? WebhookState(name: webhook.name)
            return WebhookStatus(
                name: webhook.name, url: webhook.url.absoluteString, cursor: state.cursor, failures: state.failures, parked: state.parked,
                lastError: state.lastError, deliveredAt: state.deliveredAt)
        }
    }

    /// Unparks a webhook and moves its deliveries; on every instance the
    /// lease is free for the next step.
    /// - Returns: whether the webhook is configured here.
    public func replay(_ name: String, from start: WebhookReplay) async throws -> Bool {
        guard webhooks.contains(where: { $0.name == name }) else { return false }
        // Created on first use: a webhook no instance has leased yet has its state made now.
        _ = try await store.leaseWebhook(name, holder: holder, now: milliseconds, leaseMilliseconds: -1)
        guard try await store.replayWebhook(name, from: start) else { return false }
        metrics.recordWebhookParked(name, false)
        replays[name]?.ring()
        news[name]?.ring()
        return true
    }

    private var milliseconds: Int64 { Int64((now().timeIntervalSince1970 * 1000).rounded(.down)) }

    private func deliver(_ webhook: WebhookConfiguration, client: HTTPClient, news: Doorbell, replays: Doorbell) async {
        let idle = min(lease / 3, .seconds(5))
        var pause: Duration = .zero
        while !Task.isShuttingDownGracefully, !Task.isCancelled {
            // A replay or news ends the wait early; shutdown ends the loop.
            if pause > .zero, await !news.wait(upTo: pause) { break }
            pause = idle
            do {
                guard var state = try await store.leaseWebhook(webhook.name, holder: holder, now: milliseconds, leaseMilliseconds: lease.wholeMilliseconds)
                else { continue }  // another instance delivers it
                metrics.recordWebhookParked(webhook.name, state.parked)
                if state.parked { continue }
                if state.failures > 0 {
                    // The backoff of the last failure, unless a replay cleared it.
                    let delay = WebhookBackoff.delay(afterFailures: state.failures, initial: webhook.initialBackoff, max: webhook.maxBackoff)
                    if await !replays.wait(upTo: delay) { break }
                    guard let renewed = try await store.leaseWebhook(webhook.name, holder: holder, now: milliseconds, leaseMilliseconds: lease.wholeMilliseconds),
                        !renewed.parked
                    else { continue }
                    state = renewed
                }
                let page = try await store.changes(after: state.cursor, scope: webhook.scope, table: webhook.table, limit: webhook.batchSize)
                guard !page.changes.isEmpty else {
                    // Past changes the filter left out: kept, so a restart does not read them again.
                    if page.cursor != state.cursor {
                        state.cursor = page.cursor
                        _ = try await store.recordWebhook(state, holder: holder, now: milliseconds)
                    }
                    continue
                }
                let outcome = await post(WebhookDelivery(webhook: webhook.name, changes: page.changes, cursor: page.cursor), to: webhook, client: client)
                switch outcome {
                case .success:
                    state = WebhookBackoff.delivered(state, cursor: page.cursor, now: milliseconds)
                    metrics.recordWebhookDelivery(webhook.name, outcome: "delivered", changes: page.changes.count)
                    pause = .zero
                case .failure(let error):
                    state = WebhookBackoff.failed(state, error: error, maxFailures: webhook.maxFailures)
                    metrics.recordWebhookDelivery(webhook.name, outcome: "failed", changes: 0)
                    metrics.recordWebhookParked(webhook.name, state.parked)
                    logger.warning(
                        "webhook delivery failed",
                        metadata: ["webhook": "\(webhook.name)", "failures": "\(state.failures)", "parked": "\(state.parked)", "error": "\(error)"])
                    pause = .zero  // the next step waits out the backoff
                }
                if !(try await store.recordWebhook(state, holder: holder, now: milliseconds)) {
                    logger.notice("webhook lease lost; another instance delivers it", metadata: ["webhook": "\(webhook.name)"])
                }
            } catch {
                logger.error("webhook step failed", metadata: ["webhook": "\(webhook.name)", "error": "\(error)"])
            }
        }
        // Leave the lease to another instance at once.
        _ = try? await store.leaseWebhook(webhook.name, holder: holder, now: milliseconds, leaseMilliseconds: -1)
    }

    private enum Outcome {
        case success
        case failure(String)
    }

    private func post(_ delivery: WebhookDelivery, to webhook: WebhookConfiguration, client: HTTPClient) async -> Outcome {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        do {
            let body = try encoder.encode(delivery)
            var request = HTTPClientRequest(url: webhook.url.absoluteString)
            request.method = .POST
            request.headers.add(name: "Content-Type", value: "application/json")
            request.headers.add(name: WebhookSignature.headerName, value: WebhookSignature.header(body: body, secret: webhook.secret, time: milliseconds / 1000))
            request.body = .bytes(ByteBuffer(bytes: body))
            // The whole exchange, body included, within a third of the lease: an attempt that outlives
            // its lease could reach the receiver after the next holder's later batch.
            let limit = min(webhook.timeout, lease / 3)
            let ready = request
            let status = try await withThrowingTaskGroup(of: UInt?.self) { group in
                group.addTask {
                    let response = try await client.execute(ready, timeout: .milliseconds(limit.wholeMilliseconds))
                    _ = try await response.body.collect(upTo: 64 << 10)
                    return response.status.code
                }
                group.addTask {
                    try await Task.sleep(for: limit)
                    return nil
                }
                defer { group.cancelAll() }
                return try await group.next() ?? nil
            }
            guard let status else { return .failure("no answer within \(limit)") }
            guard (200..<300).contains(status) else { return .failure("HTTP \(status)") }
            return .success
        } catch {
            return .failure("\(error)")
        }
    }
}
