import CoreMetrics
import FerryProtocol
import Foundation
import NIOConcurrencyHelpers
import Prometheus

/// The server's metrics, recorded through swift-metrics and served at
/// `/metrics` in the Prometheus text format by swift-prometheus, the
/// backend.
///
/// Each application owns its factory and registry, so several servers (or
/// tests) in one process never mix their counts, and nothing here depends on
/// the process-wide `MetricsSystem` an app may have bootstrapped for its own.
///
/// ```
/// ferry_http_requests_total{method="POST",route="/v1/push",status="200"} 12
/// ferry_push_mutations_total{status="conflict"} 1
/// ```
public final class ServerMetrics: Sendable {
    public let registry: PrometheusCollectorRegistry
    /// The swift-metrics factory every metric is made with.
    public let factory: PrometheusMetricsFactory
    /// The last minutes of pushes, pulls and errors, for the console.
    private let activity = NIOLockedValueBox(ActivityWindow())
    private let lastGarbageRun = NIOLockedValueBox<GarbageRun?>(nil)
    private let pulls = NIOLockedValueBox(DevicePulls())

    private static let latencyBuckets: [Duration] = [
        .microseconds(250), .microseconds(500), .milliseconds(1), .milliseconds(2.5), .milliseconds(5),
        .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250),
        .milliseconds(500), .seconds(1), .seconds(2.5), .seconds(5),
    ]

    public init() {
        let registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.durationHistogramBuckets = ["ferry_http_request_duration_seconds": Self.latencyBuckets]
        self.registry = registry
        self.factory = factory
    }

    private func count(_ label: String, _ dimensions: [(String, String)] = [], by amount: Int = 1) {
        CoreMetrics.Counter(label: label, dimensions: dimensions, factory: factory).increment(by: amount)
    }

    private func set(_ label: String, _ value: Int) {
        Meter(label: label, factory: factory).set(value)
    }

    /// One request, by its status code, or `client_closed` when the client
    /// went away before the request was read (not a server error).
    func recordRequest(method: String, route: String, status: String, duration: Duration) {
        count("ferry_http_requests_total", [("method", method), ("route", route), ("status", status)])
        CoreMetrics.Timer(label: "ferry_http_request_duration_seconds", dimensions: [("method", method), ("route", route)], factory: factory)
            .record(duration: duration)
        let milliseconds = Double(duration.components.seconds) * 1000 + Double(duration.components.attoseconds) / 1e15
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        activity.withLockedValue { $0.record(route: route, status: Int(status) ?? 0, milliseconds: milliseconds, at: now) }
    }

    /// The console's view of the last minutes.
    func recentActivity() -> ActivityWindow { activity.withLockedValue { $0 } }

    /// The garbage collector's last run, for the console.
    func recordGarbageRun(_ run: GarbageRun) {
        lastGarbageRun.withLockedValue { $0 = run }
    }

    func latestGarbageRun() -> GarbageRun? { lastGarbageRun.withLockedValue { $0 } }

    /// A device's pull, for the console: when, and per scope whether it caught up.
    func recordDevicePull(userID: String, clientID: String, pages: [DevicePulls.Page]) {
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        pulls.withLockedValue { $0.record(userID: userID, clientID: clientID, pages: pages, at: now) }
    }

    /// The last pull this instance served to each of `userID`'s devices, by client id.
    func devicePulls(of userID: String) -> [String: DevicePulls.Pull] { pulls.withLockedValue { $0.pulls(of: userID) } }

    func recordPush(_ response: PushResponse) {
        count("ferry_pushes_total")
        // Summed first: a counter looked up per result was a fortieth of the server's time in a drain.
        var byStatus: [MutationResult.Status: Int] = [:]
        var conflicts = 0
        for result in response.results where !result.replayed {
            byStatus[result.status, default: 0] += 1
            conflicts += result.conflicts.count
        }
        for (status, mutations) in byStatus.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
            count("ferry_push_mutations_total", [("status", status.rawValue)], by: mutations)
        }
        if conflicts > 0 { count("ferry_conflicts_total", by: conflicts) }
        if let rejected = byStatus[.rejected] { count("ferry_rejections_total", by: rejected) }
    }

    /// A pull answered, `readAhead` if the store read it before it was
    /// asked for (`ferry_pulls_read_ahead_total`, of `ferry_pulls_total`).
    func recordPull(rows: Int, readAhead: Bool) {
        count("ferry_pulls_total")
        count("ferry_pulled_rows_total", by: rows)
        count("ferry_pulls_read_ahead_total", by: readAhead ? 1 : 0)
    }

    /// Open live streams.
    func recordLiveSubscribers(_ count: Int) {
        set("ferry_live_subscribers", count)
        activity.withLockedValue { $0.liveSubscribers = count }
    }

    /// A live event answered to one stream: `built` from the store, or
    /// `shared`, built for another stream at the same cursor and news.
    func recordLivePage(shared: Bool) {
        count("ferry_live_events_total", [("source", shared ? "shared" : "built")])
    }

    /// Bytes of partial uploads read back to resume their hash, since the
    /// server started (``BlobStore/bytesRehashed``).
    func recordBlobBytesRehashed(_ bytes: Int64) {
        set("ferry_blob_upload_rehashed_bytes", Int(bytes))
    }

    /// Open HTTP connections.
    func recordOpenConnections(_ count: Int) {
        set("ferry_open_connections", count)
        activity.withLockedValue { $0.openConnections = count }
    }

    /// A connection answered 503 at the connection cap.
    func recordRefusedConnection() {
        count("ferry_refused_connections_total")
    }

    /// A connection closed for staying too long idle, in a head or in a body.
    func recordConnectionTimeout(phase: String) {
        count("ferry_connection_timeouts_total", [("phase", phase)])
    }

    /// Attachment bytes received by blob uploads (`direction` in) or sent by downloads (out).
    func recordBlobBytes(_ bytes: Int, direction: String) {
        guard bytes > 0 else { return }
        count("ferry_blob_bytes_total", [("direction", direction)], by: bytes)
    }

    /// A read of the identity provider's keys that failed; the keys held kept working.
    func recordJWKSFetchFailure() {
        count("ferry_jwks_fetch_failures_total")
    }

    /// A blob upload that continued a partial one (`Upload-Offset` above 0).
    func recordResumedUpload() {
        count("ferry_blob_uploads_resumed_total")
    }

    /// A request refused by a user's rate limit (`push`, `request` or `blob_bytes`).
    func recordRateLimited(_ kind: String) {
        count("ferry_rate_limited_total", [("kind", kind)])
    }

    /// A request held because its client ignored the `Retry-After` it was given.
    func recordRateLimitHold(_ kind: String) {
        count("ferry_rate_limit_holds_total", [("kind", kind)])
    }

    /// A webhook delivery attempt: `delivered` or `failed`.
    func recordWebhookDelivery(_ webhook: String, outcome: String, changes: Int) {
        count("ferry_webhook_deliveries_total", [("webhook", webhook), ("outcome", outcome)])
        if outcome == "delivered" { count("ferry_webhook_changes_total", [("webhook", webhook)], by: changes) }
    }

    /// Whether a webhook is parked (1) after too many failures, or delivering (0).
    func recordWebhookParked(_ webhook: String, _ parked: Bool) {
        Meter(label: "ferry_webhook_parked", dimensions: [("webhook", webhook)], factory: factory).set(parked ? 1 : 0)
    }

    /// The exposition text.
    public func render() -> String {
        registry.emitToString()
    }
}

/// What one garbage collection did: tombstones folded into deletion
/// records and blobs no row names any more, or why it failed.
struct GarbageRun: Sendable, Hashable {
    var at: Date
    var tombstones: Int
    var blobs: Int
    var error: String?
}
