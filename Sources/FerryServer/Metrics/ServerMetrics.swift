import FerryProtocol
import Prometheus

/// The server's Prometheus metrics, served at `/metrics`.
///
/// Each application owns its registry, so several servers (or tests) in one
/// process never mix their counts.
///
/// ```
/// ferry_http_requests_total{method="POST",route="/v1/push",status="200"} 12
/// ferry_push_mutations_total{status="conflict"} 1
/// ```
public final class ServerMetrics: Sendable {
    public let registry = PrometheusCollectorRegistry()

    private static let latencyBuckets: [Duration] = [
        .microseconds(250), .microseconds(500), .milliseconds(1), .milliseconds(2.5), .milliseconds(5),
        .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250),
        .milliseconds(500), .seconds(1), .seconds(2.5), .seconds(5),
    ]

    public init() {}

    /// One request, by its status code, or `client_closed` when the client
    /// went away before the request was read (not a server error).
    func recordRequest(method: String, route: String, status: String, duration: Duration) {
        registry.makeCounter(
            descriptor: .init(namespace: "ferry", metricName: "http_requests", unitName: "total", helpText: "HTTP requests handled"),
            labels: [("method", method), ("route", route), ("status", status)]
        ).increment()
        registry.makeDurationHistogram(
            descriptor: .init(namespace: "ferry", metricName: "http_request_duration", unitName: "seconds", helpText: "HTTP request latency"),
            labels: [("method", method), ("route", route)],
            buckets: Self.latencyBuckets
        ).record(duration)
    }

    func recordPush(_ response: PushResponse) {
        registry.makeCounter(
            descriptor: .init(namespace: "ferry", metricName: "pushes", unitName: "total", helpText: "Pushes applied")
        ).increment()
        for result in response.results where !result.replayed {
            registry.makeCounter(
                descriptor: .init(namespace: "ferry", metricName: "push_mutations", unitName: "total", helpText: "Mutations by outcome"),
                labels: [("status", result.status.rawValue)]
            ).increment()
            if !result.conflicts.isEmpty {
                registry.makeCounter(
                    descriptor: .init(namespace: "ferry", metricName: "conflicts", unitName: "total", helpText: "Conflicting values recorded")
                ).increment(by: Int64(result.conflicts.count))
            }
            if result.status == .rejected {
                registry.makeCounter(
                    descriptor: .init(namespace: "ferry", metricName: "rejections", unitName: "total", helpText: "Mutations rejected by validation")
                ).increment()
            }
        }
    }

    func recordPull(rows: Int) {
        registry.makeCounter(
            descriptor: .init(namespace: "ferry", metricName: "pulls", unitName: "total", helpText: "Pulls served")
        ).increment()
        registry.makeCounter(
            descriptor: .init(namespace: "ferry", metricName: "pulled_rows", unitName: "total", helpText: "Rows sent by pulls")
        ).increment(by: Int64(rows))
    }

    func recordLiveSubscribers(_ count: Int) {
        registry.makeGauge(
            descriptor: .init(namespace: "ferry", metricName: "live_subscribers", unitName: "", helpText: "Open live streams")
        ).set(Double(count))
    }

    func recordOpenConnections(_ count: Int) {
        registry.makeGauge(
            descriptor: .init(namespace: "ferry", metricName: "open_connections", unitName: "", helpText: "Open HTTP connections")
        ).set(Double(count))
    }

    func recordRefusedConnection() {
        registry.makeCounter(
            descriptor: .init(
                namespace: "ferry", metricName: "refused_connections", unitName: "total",
                helpText: "Connections answered 503 at the connection cap")
        ).increment()
    }

    func recordConnectionTimeout(phase: String) {
        registry.makeCounter(
            descriptor: .init(
                namespace: "ferry", metricName: "connection_timeouts", unitName: "total",
                helpText: "Connections closed for staying too long idle, in a head or in a body"),
            labels: [("phase", phase)]
        ).increment()
    }

    /// Attachment bytes received by blob uploads (`direction` in) or sent by downloads (out).
    func recordBlobBytes(_ count: Int, direction: String) {
        guard count > 0 else { return }
        registry.makeCounter(
            descriptor: .init(
                namespace: "ferry", metricName: "blob_bytes", unitName: "total",
                helpText: "Attachment bytes moved by the blob endpoints"),
            labels: [("direction", direction)]
        ).increment(by: Int64(count))
    }

    /// A read of the identity provider's keys that failed.
    func recordJWKSFetchFailure() {
        registry.makeCounter(
            descriptor: .init(
                namespace: "ferry", metricName: "jwks_fetch_failures", unitName: "total",
                helpText: "Reads of the identity provider's keys (JWKS) that failed; the keys held kept working")
        ).increment()
    }

    /// A blob upload that continued a partial one (`Upload-Offset` above 0).
    func recordResumedUpload() {
        registry.makeCounter(
            descriptor: .init(
                namespace: "ferry", metricName: "blob_uploads_resumed", unitName: "total",
                helpText: "Blob uploads that continued from an offset")
        ).increment()
    }

    /// The exposition text.
    public func render() -> String {
        registry.emitToString()
    }
}
